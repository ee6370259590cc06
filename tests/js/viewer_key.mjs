// The viewer against a draped that has API keys, opened as docs/viewer.md
// says (http://HOST/?token=KEY): every /v1/ request it makes carries the key,
// so frames flow and the body is the server's (GET /v1/body once went without
// the key, got 401, and the page quietly showed the stand-in figure).
//   node tests/js/viewer_key.mjs http://127.0.0.1:PORT KEY
// Prints one JSON line; exit 1 with a message on failure.
const [base, key] = process.argv.slice(2);
if (!base || !key) {
  console.error('usage: node tests/js/viewer_key.mjs BASE_URL KEY');
  process.exit(2);
}
import { launchChromium } from './browser.mjs';

const die = (msg) => {
  console.error(`viewer_key: ${msg}`);
  process.exit(1);
};

const browser = await launchChromium();
let result;
try {
  const page = await browser.newPage({ viewport: { width: 640, height: 480 } });
  const refused = [];
  page.on('response', (r) => {
    if (r.status() === 401) refused.push(new URL(r.url()).pathname);
  });
  await page.goto(`${base}/?token=${encodeURIComponent(key)}`, { waitUntil: 'load' });
  try {
    await page.waitForFunction(() => window.drapeStats && window.drapeStats.frames > 10 && window.drapeStats.body,
      null, { timeout: 60000, polling: 100 });
  } catch {
    die(`no frames in 60 s: stats ${await page.evaluate(() => JSON.stringify(window.drapeStats || null))}; 401s: ${refused}`);
  }
  const stats = await page.evaluate(() => ({ ...window.drapeStats }));
  result = { frames: stats.frames, body: stats.body, refused };
  if (refused.length) die(`requests refused without the key: ${refused.join(', ')}`);
  if (stats.body !== 'server') die(`the body is ${stats.body}, not the server's (GET /v1/body with the key)`);
  if (stats.errors) die(`drapeStats.errors = ${stats.errors}: ${stats.last_error}`);
} finally {
  await browser.close();
}
console.log(JSON.stringify(result));
