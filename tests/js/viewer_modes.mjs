// The viewer offers a garment only the modes it has (tests/test_garment.c):
// on a draped whose bundle has a garment added by `drape garment add` (no
// trained network: lbs and physics), the page opened on that garment side
// by side shows lbs and physics, frames flowing in both and no error; one
// avatar alone is lbs (not the neural the page opens by default); the
// physics switch is there; a trained garment chosen in the page offers all
// three again.
//   node tests/js/viewer_modes.mjs http://127.0.0.1:PORT GARMENT TRAINED_GARMENT
// Prints one JSON line; exit 1 with a message on failure.
const [base, garment, trained] = process.argv.slice(2);
if (!base || !garment || !trained) {
  console.error('usage: node tests/js/viewer_modes.mjs BASE_URL GARMENT TRAINED_GARMENT');
  process.exit(2);
}
import { launchChromium } from './browser.mjs';
const die = (msg) => {
  console.error(`viewer_modes: ${msg}`);
  process.exit(1);
};
const browser = await launchChromium();
const result = {};
try {
  const page = await browser.newPage({ viewport: { width: 800, height: 600 } });
  const problems = [];
  page.on('console', (m) => m.type() === 'error' && problems.push(`console error: ${m.text()}`));
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  await page.goto(`${base}/?garment=${garment}&compare=1`, { waitUntil: 'load' });
  // every avatar shown has frames (a refused open would leave one without, and
  // a banner), and none of the avatars before (drapeStats is measured at the
  // next rendered frame, so right after a switch it may still show the old
  // ones, flowing: on a loaded machine the test read the old avatar's mode)
  const flowing = (n, before = []) =>
    page.waitForFunction(
      ([n, before]) => {
        const a = window.drapeStats && window.drapeStats.avatars;
        return a && a.length === n && a.every((x) => x.frames > 5 && !before.includes(x.avatar));
      },
      [n, before],
      { timeout: 60000 },
    );
  const shown = () => page.evaluate(() => window.drapeStats.avatars.map((a) => a.avatar));
  const state = () =>
    page.evaluate(() => ({
      modes: window.drapeStats.avatars.map((a) => a.mode),
      compare: document.getElementById('compare-modes').textContent,
      compareShown: !document.getElementById('compare-row').hidden,
      physicsShown: !document.getElementById('physics-row').hidden,
      message: document.getElementById('message').hidden ? null : document.getElementById('message').textContent,
    }));
  // a refused open shows an error banner, which takes the slot before a late
  // frame's warning; a late frame may be real on a loaded machine (CI's 2 cores
  // running the suite beside software-rendered Chromium), so only that one passes
  const banner = (s) => s.message && !s.message.startsWith('frame late');
  await flowing(2);
  let s = await state();
  if (s.modes.join() !== 'lbs,physics') die(`side by side on ${garment}: modes ${s.modes}, not lbs,physics`);
  if (s.compare !== 'lbs · physics' || !s.compareShown) die(`side-by-side row: '${s.compare}' shown=${s.compareShown}`);
  if (!s.physicsShown) die('the physics switch is hidden for a garment that has physics');
  if (banner(s)) die(`a banner: ${s.message}`);
  result.side_by_side = s.modes;
  let before = await shown();
  await page.click('#compare');
  await flowing(1, before);
  s = await state();
  if (s.modes.join() !== 'lbs') die(`one avatar of ${garment}: mode ${s.modes}, not lbs`);
  if (banner(s)) die(`a banner: ${s.message}`);
  result.single = s.modes;
  before = await shown();
  await page.selectOption('#garment', trained);
  await page.waitForFunction(() => document.getElementById('compare-modes').textContent.includes('neural'), null, {
    timeout: 20000,
  });
  await flowing(1, before);
  s = await state();
  if (s.compare !== 'neural · lbs · physics') die(`${trained}: side-by-side row '${s.compare}'`);
  if (s.modes.join() !== 'neural') die(`one avatar of ${trained}: mode ${s.modes}, not neural`);
  result.trained = { compare: s.compare, single: s.modes };
  if (problems.length) die(problems.join('; '));
} finally {
  await browser.close();
}
console.log(JSON.stringify(result));
process.exit(0);
