// Debian's headless Chromium through playwright-core, launched as every
// viewer test launches it: software WebGL (SwiftShader), no sandbox (CI runs
// as root), shared memory in /tmp rather than a small /dev/shm.
const { chromium } = await import(new URL('../../web/node_modules/playwright-core/index.mjs', import.meta.url).href);

export function launchChromium() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--use-angle=swiftshader', '--enable-unsafe-swiftshader', '--disable-dev-shm-usage'],
  });
}
