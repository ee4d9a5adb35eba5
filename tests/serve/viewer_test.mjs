// The viewer page (GET /) in a real browser: Debian's chromium, headless, driven by playwright-core.
//   node viewer_test.mjs SOURCE_DIR URL MODEL INPUT SHOT.png [BOX...]
// Loads the page from the running server, uploads INPUT through the file picker, waits for the
// result, and checks it against the JSON the server gives this script for the same file:
// bevfusion: drawn boxes == objects, then for a score threshold and a class switched off, drawn ==
// the JSON's objects passing them; the view's screenshot is not blank and the BEV toggle changes
// it. hamer: drawn hands, projected vertices and keypoints == the JSON's, and the result changes
// the picture. Writes SHOT.png (the whole page). Exit 0 pass, 1 fail, 77 skip (no browser).
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';

const [src, url, model, input, shot, ...boxes] = process.argv.slice(2);
const require = createRequire(`${src}/web/`);
let chromium;
try {
  ({ chromium } = require('playwright-core'));
} catch (e) {
  console.log('SKIP: playwright-core is not installed in web/node_modules (tools/deps.sh)');
  process.exit(77);
}
const exe = process.env.PV_CHROMIUM || '/usr/bin/chromium';

let failed = 0;
const check = (ok, what) => {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
  if (!ok) failed = 1;
};

// What the server says for this file, asked directly (the page must agree with it).
async function predict() {
  const q = new URLSearchParams({ timing: '0' });
  for (const b of boxes) q.append('box', b);
  const type = input.endsWith('.png') ? 'image/png' : input.endsWith('.pcd') ? 'application/x-pcd' : 'application/octet-stream';
  const r = await fetch(`${url}/predict?${q}`, { method: 'POST', headers: { 'Content-Type': type }, body: readFileSync(input) });
  if (!r.ok) throw new Error(`/predict: ${r.status} ${await r.text()}`);
  return r.json();
}

// Pixels of a PNG (decoded by the browser): how many differ from the corner pixel (the
// background), how many distinct colours, and (with `other`) how many differ from another PNG.
async function pixels(page, png, other) {
  return page.evaluate(async ([a, b]) => {
    const load = async (b64) => {
      const img = await createImageBitmap(await (await fetch(`data:image/png;base64,${b64}`)).blob());
      const c = new OffscreenCanvas(img.width, img.height), ctx = c.getContext('2d');
      ctx.drawImage(img, 0, 0);
      return ctx.getImageData(0, 0, img.width, img.height).data;
    };
    const p = await load(a), q = b ? await load(b) : null;
    const colours = new Set();
    let fg = 0, diff = 0;
    for (let i = 0; i < p.length; i += 4) {
      const rgb = (p[i] << 16) | (p[i + 1] << 8) | p[i + 2];
      colours.add(rgb);
      if (Math.abs(p[i] - p[0]) + Math.abs(p[i + 1] - p[1]) + Math.abs(p[i + 2] - p[2]) > 30) fg++;
      if (q && q.length === p.length && Math.abs(p[i] - q[i]) + Math.abs(p[i + 1] - q[i + 1]) + Math.abs(p[i + 2] - q[i + 2]) > 30) diff++;
    }
    return { n: p.length / 4, fg, colours: colours.size, diff };
  }, [png.toString('base64'), other ? other.toString('base64') : null]);
}

let browser;
try {
  browser = await chromium.launch({ executablePath: exe, headless: true,
    args: ['--no-sandbox', '--use-angle=swiftshader', '--enable-unsafe-swiftshader', '--ignore-gpu-blocklist'] });
} catch (e) {
  console.log(`SKIP: cannot start ${exe}: ${String(e.message).split('\n')[0]}`);
  process.exit(77);
}
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  page.on('pageerror', (e) => check(false, `page error: ${e.message}`));
  page.on('console', (m) => m.type() === 'error' && console.log(`console: ${m.text()}`));
  await page.goto(`${url}/`);
  await page.waitForFunction(() => window.pv && window.pv.state !== 'loading', null, { timeout: 20000 });
  const has3d = await page.evaluate(() => window.pv.has3d);
  check(await page.evaluate(() => window.pv.info?.model) === model, `the page knows the model is ${model}`);
  const want = await predict();
  if (boxes.length) await page.fill('#boxes', boxes.join('\n'));
  const view = page.locator('#view');
  await page.setInputFiles('#file', input);
  await page.waitForFunction(() => ['done', 'error'].includes(window.pv.state), null, { timeout: 120000 });
  const st = await page.evaluate(() => ({ state: window.pv.state, error: window.pv.error, result: window.pv.result, drawn: window.pv.drawn }));
  check(st.state === 'done', `result shown (${st.state}${st.error ? `: ${st.error}` : ''})`);
  const drawn = () => page.evaluate(() => window.pv.drawn);

  if (model === 'bevfusion') {
    const objs = want.objects;
    check(JSON.stringify(st.result.objects) === JSON.stringify(objs), `the page's objects equal /predict's (${objs.length})`);
    if (!has3d) console.log('SKIP 3D checks: three.js was not embedded at build time (the 2D top view is checked instead)');
    check(objs.length > 0 && st.drawn.boxes === objs.length, `drawn boxes ${st.drawn.boxes} == JSON objects ${objs.length}`);
    check(st.drawn.points > 1000, `points drawn: ${st.drawn.points}`);
    const scores = objs.map((o) => o.existence_probability).sort((a, b) => a - b);
    const t = Math.round(scores[Math.floor(scores.length / 2)] * 100) / 100;
    await page.evaluate((v) => { const s = document.getElementById('score'); s.value = String(v); s.dispatchEvent(new Event('input')); }, t);
    const nt = objs.filter((o) => o.existence_probability >= t).length;
    check((await drawn()).boxes === nt && nt < objs.length, `score >= ${t}: drawn ${(await drawn()).boxes} == JSON ${nt}`);
    const counts = {};
    for (const o of objs) counts[o.label] = (counts[o.label] || 0) + 1;
    const top = Object.keys(counts).sort((a, b) => counts[b] - counts[a])[0];
    await page.locator(`#controls input[data-class="${top}"]`).uncheck();
    const nc = objs.filter((o) => o.existence_probability >= t && o.label !== top).length;
    check((await drawn()).boxes === nc, `score >= ${t} without ${top}: drawn ${(await drawn()).boxes} == JSON ${nc}`);
    await page.locator(`#controls input[data-class="${top}"]`).check();
    await page.evaluate(() => { const s = document.getElementById('score'); s.value = '0'; s.dispatchEvent(new Event('input')); });
    check((await drawn()).boxes === objs.length, 'all boxes back');
    const persp = await view.screenshot();
    const p = await pixels(page, persp);
    check(p.fg > p.n / 100 && p.colours > 50, `${has3d ? '3D' : '2D'} view not blank: ${p.fg} of ${p.n} pixels drawn, ${p.colours} colours`);
    if (has3d) {
      await page.locator('#bev').check();
      const bev = await view.screenshot();
      const b = await pixels(page, bev, persp);
      check(b.fg > b.n / 100 && b.diff > b.n / 100, `BEV view drawn (${b.fg} pixels) and unlike the 3D one (${b.diff} differ)`);
      await page.locator('#bev').uncheck();
    }
  } else if (model === 'hamer') {
    const hands = want.hands;
    check(JSON.stringify(st.result.hands) === JSON.stringify(hands), `the page's hands equal /predict's (${hands.length})`);
    check(hands.length === boxes.length && st.drawn.hands === hands.length, `drawn hands ${st.drawn.hands} == JSON ${hands.length}`);
    const nv = hands.reduce((s, h) => s + h.vertices.length, 0), nk = hands.reduce((s, h) => s + h.keypoints_2d.length, 0);
    check(st.drawn.vertices === nv && nv === 778 * hands.length, `projected vertices drawn ${st.drawn.vertices} == JSON ${nv}`);
    check(st.drawn.keypoints === nk, `keypoints drawn ${st.drawn.keypoints} == JSON ${nk}`);
    const after = await view.screenshot();
    // the same picture without the hands: what the result added
    await page.evaluate(async () => { const v = document.getElementById('view'); const c = v.querySelector('canvas');
      c.getContext('2d').drawImage(await createImageBitmap(document.getElementById('file').files[0]), 0, 0, c.width, c.height); });
    const before = await view.screenshot();
    const a = await pixels(page, after, before);
    check(a.fg > a.n / 100 && a.colours > 50, `image drawn: ${a.fg} of ${a.n} pixels, ${a.colours} colours`);
    check(a.diff > 500, `the hands changed ${a.diff} pixels of the picture`);
    await page.evaluate(() => window.pv.drawn && document.getElementById('run').click());
    await page.waitForFunction(() => window.pv.state === 'done', null, { timeout: 120000 });
  }
  await page.screenshot({ path: shot });
  console.log(`screenshot: ${shot}`);
} catch (e) {
  check(false, `driver: ${e.message}`);
} finally {
  await browser.close();
}
console.log(failed ? 'FAILED' : 'PASSED');
process.exit(failed);
