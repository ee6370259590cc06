// The viewer end to end in headless Chromium (Debian's, driven by
// playwright-core): opens http://127.0.0.1:PORT/ served by a draped, waits
// until window.drapeStats.frames passes 30, saves a screenshot, and checks
// that the garment is drawn (pixels of its blue among the background), the
// stats are filled, and nothing was logged as an error. Then the controls
// (each vertex format decoded in the page, a beta slider, the other
// garment), and the banners: /v1/model failing at load ("unreachable",
// first of all), frames held back by a proxy on the WebSocket ("frame
// late"), and the socket closed under the page ("connection closed ...
// reconnecting"), after which frames flow again; the physics switch shown
// only when /v1/model offers physics (the page reloaded with a modified
// /v1/model).
//   node tests/js/viewer_e2e.mjs http://127.0.0.1:PORT SCREENSHOT.png [QUERY]
// Prints one JSON line; exit 1 with a message on failure.
import { readFileSync } from 'node:fs';
import { readPng, domMask, countPixels, isGarment } from './png.mjs';

const [base, shot, query = ''] = process.argv.slice(2);
if (!base || !shot) {
  console.error('usage: node tests/js/viewer_e2e.mjs BASE_URL SCREENSHOT.png [QUERY]');
  process.exit(2);
}
import { launchChromium } from './browser.mjs';

const die = (msg) => {
  console.error(`viewer_e2e: ${msg}`);
  process.exit(1);
};

const browser = await launchChromium();
let result;
try {
  const page = await browser.newPage({ viewport: { width: 800, height: 600 } });
  const problems = [];
  let expectFailures = true; // while /v1/model is made to fail on purpose
  page.on('console', (m) => {
    if (m.type() === 'error' && !expectFailures) problems.push(`console error: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('requestfailed', (r) => {
    if (!expectFailures) problems.push(`request failed: ${r.url()}`);
  });
  const banner = (text, ms = 15000) =>
    page.waitForFunction((t) => {
      const el = document.getElementById('message');
      return !el.hidden && el.textContent.includes(t);
    }, text, { timeout: ms, polling: 50 }).catch(async () => {
      die(`no '${text}' banner; it says '${await page.evaluate(() => document.getElementById('message').textContent)}'`);
    });
  // the stream goes through a proxy the test controls: hold frames back, or close the socket
  let hold = false;
  let pageSide = null;
  await page.routeWebSocket('**/v1/stream', (ws) => {
    pageSide = ws;
    const server = ws.connectToServer();
    ws.onMessage((m) => server.send(m));
    server.onMessage((m) => {
      if (!hold) ws.send(m);
    });
  });
  // the server "unreachable" while the page loads
  await page.route('**/v1/model', (r) => r.abort());
  await page.goto(`${base}/${query}`, { waitUntil: 'load' });
  await banner('unreachable', 30000); // the page's first load: three.js parsed on a busy CPU
  await page.unroute('**/v1/model');
  await page.waitForFunction(() => window.drapeStats && window.drapeStats.state === 'open', null, { timeout: 30000 });
  expectFailures = false;
  try {
    await page.waitForFunction(() => window.drapeStats && window.drapeStats.frames > 30, null, { timeout: 30000, polling: 100 });
  } catch {
    const s = await page.evaluate(() => JSON.stringify(window.drapeStats || null));
    const msg = await page.evaluate(() => document.getElementById('message')?.textContent);
    die(`fewer than 30 frames in 30 s: stats ${s}, message '${msg}', ${problems.join('; ')}`);
  }
  await page.waitForTimeout(300); // let the stats overlay and a render catch up
  await page.screenshot({ path: shot });
  const stats = await page.evaluate(() => ({ ...window.drapeStats }));
  const message = await page.evaluate(() => {
    const el = document.getElementById('message');
    return el.hidden ? '' : el.textContent;
  });
  const png = readPng(readFileSync(shot));
  // the garment is blue (0x2f6fe0, lit): clearly more blue than red; counted
  // outside the panel and the overlay (the panel's sliders are blue too)
  const { count: garment, scene: total } = countPixels(png, await domMask(page), isGarment);
  result = { stats, garment_pixels: garment, scene_pixels: total, message };
  if (problems.length) die(`${problems.join('; ')}`);
  if (garment < total * 0.003) die(`the garment is not drawn: ${garment} blue pixels of ${total}: ${JSON.stringify(result)}`);
  if (stats.errors) die(`drapeStats.errors = ${stats.errors}: ${stats.last_error}`);
  if (stats.clip !== 'shipped-walk') die(`the clip is ${stats.clip}, not the shipped walk (web/clips/)`);
  if (stats.body !== 'server') die(`the body is ${stats.body}, not the server's body model (GET /v1/body)`);
  for (const k of ['fps', 'rtt_p50', 'rtt_p99', 'server_p50', 'server_p99', 'bytes']) {
    if (!(stats[k] > 0)) die(`drapeStats.${k} = ${stats[k]}`);
  }
  if (!(stats.rtt_p99 >= stats.rtt_p50) || !(stats.rtt_p50 >= stats.server_p50 * 0.5)) die(`odd latencies: ${JSON.stringify(stats)}`);
  // (a late frame may be real on a loaded machine; any other banner is not)
  if (message && !message.startsWith('frame late')) die(`a banner while all is well: '${message}'`);

  const framesNow = () => page.evaluate(() => window.drapeStats.frames);
  const moreFrames = async (n) => {
    const want = (await framesNow()) + n;
    await page.waitForFunction((w) => window.drapeStats.frames >= w, want, { timeout: 20000, polling: 100 })
      .catch(() => die(`frames stopped after a banner: ${JSON.stringify(result)}`));
  };
  // the controls: every vertex format decoded in the page, a beta, the other garment
  for (const fmt of ['f32', 'f16', 'q16', 'meshopt']) {
    await page.selectOption('#format', fmt);
    await moreFrames(5);
    const st = await page.evaluate(() => window.drapeStats);
    if (st.format !== fmt || st.errors) die(`format ${fmt}: ${JSON.stringify(st)}`);
  }
  await page.$eval('#betas input', (el) => {
    el.value = '1.5';
    el.dispatchEvent(new Event('input'));
  });
  await moreFrames(5);
  const garments = await page.$$eval('#garment option', (os) => os.map((o) => o.value));
  await page.selectOption('#garment', garments[garments.length - 1]);
  await moreFrames(5);
  const after = await page.evaluate(() => window.drapeStats);
  if (after.garment !== garments[garments.length - 1] || after.errors) die(`after the controls: ${JSON.stringify(after)}`);
  result.controls = { formats: 4, garments, vertices: after.vertices };

  // frames held back: "frame late", gone when they flow again
  hold = true;
  await banner('frame late');
  hold = false;
  await moreFrames(5);
  // the socket closes under the page: a banner, a reconnect, the avatar re-opened, frames again
  await pageSide.close({ code: 1001, reason: 'test' });
  await banner('connection closed');
  await moreFrames(10);
  result.banners = ['unreachable', 'frame late', 'connection closed'];

  // the physics switch: hidden while /v1/model does not offer it, shown once it does
  const physicsHidden = () => page.evaluate(() => document.getElementById('physics-row').hidden);
  const offered = (await (await page.request.get(`${base}/v1/model`)).json()).modes.includes('physics');
  if ((await physicsHidden()) === offered) die(`physics switch hidden=${!offered} expected (modes offer physics: ${offered})`);
  await page.route('**/v1/model', async (r) => {
    const res = await r.fetch();
    const m = await res.json();
    if (!m.modes.includes('physics')) m.modes.push('physics');
    await r.fulfill({ response: res, json: m });
  });
  await page.reload({ waitUntil: 'load' });
  await page.waitForFunction(() => document.querySelectorAll('#betas input').length > 0, null, { timeout: 20000 });
  if (await physicsHidden()) die('the physics switch stays hidden when /v1/model offers physics');
  result.physics_switch = 'shown only when offered';
  if (problems.length) die(`${problems.join('; ')}`);
} finally {
  await browser.close();
}
console.log(JSON.stringify(result));
process.exit(0);
