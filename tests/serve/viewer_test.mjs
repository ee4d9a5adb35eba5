// The viewer page (GET /) in a real browser: Debian's chromium, headless, driven by playwright-core.
//   node viewer_test.mjs SOURCE_DIR URL MODEL INPUT SHOT.png [BOX...]
// Loads the page from the running server, uploads INPUT through the file picker, waits for the
// result, and checks it against the JSON the server gives this script for the same file:
// bevfusion: drawn boxes == objects, then for a score threshold and a class switched off, drawn ==
// the JSON's objects passing them; the view's screenshot is not blank and the BEV toggle changes
// it. hamer: drawn hands, projected vertices and keypoints == the JSON's, and the result changes
// the picture. meteor (INPUT: a folder with manifest.json and its images, all uploaded at once):
// the page's payload == /predict's for the same frame, drawn 3D boxes == objects (and follow the
// slider and class filter), drawn 2D boxes == the objects_2d total, the lanes layer holds exactly
// the class_counts (one pixel a cell, one palette colour a class), eight thumbnails drawn, the
// occupancy toggle changes the view, the view is not blank; an upload without the manifest and
// one missing an image give their messages. Writes SHOT.png (the whole page).
// Exit 0 pass, 1 fail, 77 skip (no browser).
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

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

// meteor: the manifest's frame as the server's JSON (camera items + K/T/v0/pose params), built
// here independently of the page, and the files the page is given (manifest first).
const manifest = model === 'meteor' ? JSON.parse(readFileSync(join(input, 'manifest.json'), 'utf8')) : null;
const uploads = manifest ? [join(input, 'manifest.json'), ...manifest.cameras.map((c) => join(input, c.image))] : [input];
function meteorBody() {
  const b = {};
  for (const c of manifest.cameras) {
    b[c.name] = { format: 'jpeg', data: readFileSync(join(input, c.image)).toString('base64') };
    b[`K.${c.name}`] = c.K;
    b[`T_cam_ego.${c.name}`] = c.T_cam_ego;
  }
  return JSON.stringify({ ...b, v0: manifest.v0, pose: manifest.pose });
}
const resultTimeout = model === 'meteor' ? 900000 : 120000;   // a METEOR frame: ~0.5-1 min on 2 busy cores

// What the server says for this file, asked directly (the page must agree with it).
async function predict() {
  const q = new URLSearchParams({ timing: '0' });
  if (manifest) {
    const r = await fetch(`${url}/predict?${q}`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: meteorBody(),
      signal: AbortSignal.timeout(resultTimeout) });
    if (!r.ok) throw new Error(`/predict: ${r.status} ${await r.text()}`);
    return r.json();
  }
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

// The score slider and the class filter: drawn boxes follow the JSON's objects passing them.
async function checkFilter(page, objs, score) {
  const drawn = async () => (await page.evaluate(() => window.pv.drawn)).boxes;
  const setScore = (v) => page.evaluate((x) => { const s = document.getElementById('score'); s.value = String(x); s.dispatchEvent(new Event('input')); }, v);
  const scores = objs.map(score).sort((a, b) => a - b);
  const t = Math.round(scores[Math.floor(scores.length / 2)] * 100) / 100;
  await setScore(t);
  const nt = objs.filter((o) => score(o) >= t).length;
  check((await drawn()) === nt && nt < objs.length, `score >= ${t}: drawn ${await drawn()} == JSON ${nt}`);
  const counts = {};
  for (const o of objs) counts[o.label] = (counts[o.label] || 0) + 1;
  const top = Object.keys(counts).sort((a, b) => counts[b] - counts[a])[0];
  await page.locator(`#controls input[data-class="${top}"]`).uncheck();
  const nc = objs.filter((o) => score(o) >= t && o.label !== top).length;
  check((await drawn()) === nc, `score >= ${t} without ${top}: drawn ${await drawn()} == JSON ${nc}`);
  await page.locator(`#controls input[data-class="${top}"]`).check();
  await setScore(0);
  check((await drawn()) === objs.length, 'all boxes back');
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
  if (manifest) {   // the refusals first: they are answered before any request
    await page.setInputFiles('#file', uploads.slice(1));
    await page.waitForFunction(() => window.pv.state === 'error', null, { timeout: 20000 });
    const e1 = await page.evaluate(() => window.pv.error);
    check(/no manifest/.test(e1) && /manifest\.json/.test(e1), `images without a manifest: "${e1}"`);
    await page.setInputFiles('#file', uploads.slice(0, -1));
    await page.waitForFunction(() => window.pv.error !== null && !/no manifest/.test(window.pv.error), null, { timeout: 20000 });
    const e2 = await page.evaluate(() => window.pv.error), last = manifest.cameras[manifest.cameras.length - 1];
    check(e2.includes(last.name) && e2.includes(last.image) && /not dropped/.test(e2), `an image missing: "${e2}"`);
  }
  await page.setInputFiles('#file', uploads);
  await page.waitForFunction(() => window.pv.state === 'running', null, { timeout: 20000 }).catch(() => {});
  await page.waitForFunction(() => ['done', 'error'].includes(window.pv.state), null, { timeout: resultTimeout, polling: 500 });
  const st = await page.evaluate(() => ({ state: window.pv.state, error: window.pv.error, result: window.pv.result, drawn: window.pv.drawn }));
  check(st.state === 'done', `result shown (${st.state}${st.error ? `: ${st.error}` : ''})`);
  const drawn = () => page.evaluate(() => window.pv.drawn);

  if (model === 'bevfusion') {
    const objs = want.objects;
    check(JSON.stringify(st.result.objects) === JSON.stringify(objs), `the page's objects equal /predict's (${objs.length})`);
    if (!has3d) console.log('SKIP 3D checks: three.js was not embedded at build time (the 2D top view is checked instead)');
    check(objs.length > 0 && st.drawn.boxes === objs.length, `drawn boxes ${st.drawn.boxes} == JSON objects ${objs.length}`);
    check(st.drawn.points > 1000, `points drawn: ${st.drawn.points}`);
    await checkFilter(page, objs, (o) => o.existence_probability);
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
  } else if (model === 'meteor') {
    const payload = (j) => JSON.stringify({ ...j, meta: undefined, timing_ms: undefined });
    check(payload(st.result) === payload(want), `the page's payload equals /predict's (${want.objects.length} objects)`);
    const objs = want.objects;
    check(objs.length > 0 && st.drawn.boxes === objs.length, `drawn 3D boxes ${st.drawn.boxes} == JSON objects ${objs.length}`);
    await checkFilter(page, objs, (o) => o.existence_probability);
    const n2d = Object.values(want.objects_2d).reduce((s, l) => s + l.length, 0);
    check(n2d > 0 && st.drawn.boxes2d === n2d, `drawn 2D boxes ${st.drawn.boxes2d} == JSON objects_2d ${n2d}`);
    check(st.drawn.thumbnails === 8, `camera thumbnails drawn: ${st.drawn.thumbnails}`);
    check(st.drawn.unknown === want.unknown_objects.length, `unknown obstacles drawn ${st.drawn.unknown} == JSON ${want.unknown_objects.length}`);
    // the lanes layer: one pixel a cell, so each class's colour covers exactly its class_counts
    const lanes = await page.evaluate(() => {
      const c = document.getElementById('meteor-lanes'), d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data, n = {};
      for (let i = 0; i < d.length; i += 4) { const k = `${d[i]},${d[i + 1]},${d[i + 2]},${d[i + 3]}`; n[k] = (n[k] || 0) + 1; }
      return { w: c.width, h: c.height, counts: Object.values(n).sort((a, b) => a - b) };
    });
    const classes = want.lanes.class_counts.filter((v) => v > 0).sort((a, b) => a - b);
    check(lanes.w === 500 && lanes.h === 800 && classes.length > 1 && JSON.stringify(lanes.counts) === JSON.stringify(classes),
      `lanes layer ${lanes.w}x${lanes.h}: ${lanes.counts.length} colours with cells [${lanes.counts}] == nonzero class_counts [${classes}]`);
    const thumbs = await page.evaluate(() => [...document.querySelectorAll('#meteor-cams canvas')].map((c) => {
      const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data, s = new Set();
      for (let i = 0; i < d.length; i += 16) s.add((d[i] << 16) | (d[i + 1] << 8) | d[i + 2]);
      return s.size;
    }));
    check(thumbs.length === 8 && thumbs.every((n) => n > 50), `thumbnails show pictures (colours: ${thumbs})`);
    const shot1 = await view.screenshot();
    const p = await pixels(page, shot1);
    check(p.fg > p.n / 10 && p.colours > 50, `view not blank: ${p.fg} of ${p.n} pixels drawn, ${p.colours} colours`);
    const bevOn = await page.locator('#meteor-bev').screenshot();
    await page.locator('#layer-occupancy').uncheck();
    const off = await pixels(page, await page.locator('#meteor-bev').screenshot(), bevOn);
    await page.locator('#layer-occupancy').check();
    check(off.diff > off.n / 100, `the occupancy toggle changes the BEV (${off.diff} of ${off.n} pixels)`);
    const hud = await page.locator('#meteor-hud').innerText();
    check(hud.toUpperCase().includes(want.traffic_light.state.toUpperCase()) && /brake/i.test(hud), `HUD: ${hud.replace(/\n/g, ' | ')}`);
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
