// perceive viewer: the METEOR renderer (web/viewer.js plugs it in as renderers.meteor).
// In: manifest.json and its camera images, dropped or picked together. The page reads the
// manifest, finds each camera's image among the dropped files by base name and posts the JSON
// request the server takes (README "meteor": one {format, data} item per camera slot, plus the
// params K.<CAM>, T_cam_ego.<CAM> or T_ego_cam.<CAM>, v0, pose, stream.*, and "params").
// Out: the BEV panel as stacked layers (lanes, occupancy, risk: one canvas each, so a toggle
// only hides one; boxes, futures, unknown obstacles and the ego path on a vector canvas above),
// a HUD (traffic light, ego controls) and the eight camera thumbnails with their 2D boxes.
// Inks follow src/models/meteor/render.c, so the page and `--png` read alike.

const CAMERAS = ['CAM_FRONT_WIDE', 'CAM_FRONT_LEFT', 'CAM_FRONT_RIGHT', 'CAM_BACK_WIDE',
  'CAM_BACK_LEFT', 'CAM_BACK_RIGHT', 'CAM_FRONT_NARROW', 'CAM_BACK_NARROW'];
const NET_W = 768, NET_H = 432;           // the network's frame: 2D boxes are in these pixels
const BEV = { x0: 80, y0: 50, xm: 160, ym: 100 };   // the lane grid's extent: x forward, y left

const LANE_RGB = [[22, 24, 30], [64, 66, 74], [108, 94, 78], [196, 196, 150], [236, 236, 236],
  [250, 100, 70], [255, 176, 0], [140, 140, 210], [52, 86, 66]];
const LANE_INVALID_RGB = [255, 0, 255];   // a class id outside the table: shown, not hidden
const OCC_RGB = [[0, 0, 0], [230, 140, 40], [60, 130, 255], [190, 90, 255], [255, 90, 160],
  [200, 200, 80], [80, 200, 200], [160, 110, 70], [110, 200, 110], [200, 120, 120]];
const OCC_ALPHA = 0.5, RISK_ALPHA = 0.55, RISK_RGB = [255, 30, 30];
const BOX3D = { CAR: '#00e0ff', PEDESTRIAN: '#ff3cc8' };
const BOX2D = { obs: '#ffe600', car: '#00e0ff', truck: '#0096ff', bus: '#828cff', bicycle: '#ff96dc',
  motorcycle: '#ff3cc8', ped: '#ff6464', road_paint: '#b4b4b4', traffic_light: '#50ff78', traffic_sign: '#ffa028' };
const TL = { none: '#828282', green: '#28dc5a', yellow: '#fad228', red: '#f03228' };
const INK = { future: '#aaf0ff', unknown: '#ffe600', path: '#5aff82', ribbon: 'rgba(120, 200, 140, 0.6)',
  ego: '#ffffff', brake: '#ff3232' };
const EGO_L = 4.6, EGO_W = 1.9;

const css = (rgb) => `rgb(${rgb.join(', ')})`;
const finite = (...v) => v.every((x) => typeof x === 'number' && Number.isFinite(x));

let ui = null;      // the page's helpers: { $, el, fmt, boxFilter, pv }
let frame = null;   // the last request's { images: {CAM: File}, names } (for the thumbnails)
const bitmaps = new WeakMap();   // File -> ImageBitmap, decoded once

// ---- the request: manifest + images -> the server's JSON ---------------------------------------

function base64(buf) {
  const u8 = new Uint8Array(buf);
  let s = '';
  for (let i = 0; i < u8.length; i += 0x8000) s += String.fromCharCode(...u8.subarray(i, i + 0x8000));
  return btoa(s);
}

const baseName = (p) => p.split(/[\\/]/).pop();

// The manifest among the dropped files: the one .json, or the one named manifest.json.
function findManifest(files) {
  const jsons = files.filter((f) => /\.json$/i.test(f.name));
  if (!jsons.length)
    throw new Error(`no manifest: ${files.length} file(s) dropped (${files.map((f) => f.name).join(', ')}) ` +
      'and none is a .json; drop (or pick) manifest.json together with its camera images');
  if (jsons.length === 1) return jsons[0];
  const m = jsons.find((f) => f.name === 'manifest.json');
  if (!m) throw new Error(`${jsons.length} .json files dropped (${jsons.map((f) => f.name).join(', ')}): which is the manifest? Drop one`);
  return m;
}

// The cameras of a manifest: a list of {name, image, K, T_cam_ego | T_ego_cam}, or an object
// keyed by the camera name.
function manifestCameras(m, what) {
  const c = m.cameras;
  const list = Array.isArray(c) ? c : c && typeof c === 'object' ? Object.entries(c).map(([name, v]) => ({ name, ...v })) : null;
  if (!list || !list.length) throw new Error(`${what}: "cameras" is missing or empty (want a list of {name, image, K, T_cam_ego})`);
  list.forEach((cam, i) => {
    if (!cam || typeof cam.name !== 'string') throw new Error(`${what}: cameras[${i}].name is missing (want one of ${CAMERAS.join(', ')})`);
    if (typeof cam.image !== 'string') throw new Error(`${what}: cameras[${i}] (${cam.name}).image is missing (want the image's file name)`);
  });
  return list;
}

async function buildRequest(files) {
  const man = findManifest(files);
  let m;
  try {
    m = JSON.parse(await man.text());
  } catch (e) {
    throw new Error(`${man.name} is not JSON: ${e.message}`);
  }
  if (!m || typeof m !== 'object' || Array.isArray(m)) throw new Error(`${man.name}: want an object {"cameras": [...], "v0", "pose"}`);
  const cams = manifestCameras(m, man.name);
  const dropped = new Map(files.map((f) => [f.name, f]));
  const missing = cams.filter((c) => !dropped.has(baseName(c.image)));
  if (missing.length)
    throw new Error(`${man.name} names ${missing.length} image(s) that were not dropped: ` +
      `${missing.map((c) => `${c.name} '${c.image}'`).join(', ')}; drop (or pick) the manifest together with all its images`);
  const body = {}, images = {};
  for (const c of cams) {
    const f = dropped.get(baseName(c.image));
    const format = /\.jpe?g$/i.test(f.name) ? 'jpeg' : /\.png$/i.test(f.name) ? 'png' : null;
    if (!format) throw new Error(`${c.name}.image '${c.image}': want a .jpg, .jpeg or .png file`);
    body[c.name] = { format, data: base64(await f.arrayBuffer()) };
    // K and T are passed as they are: the server checks them and names what is wrong
    if (c.K !== undefined) body[`K.${c.name}`] = c.K;
    if (c.T_cam_ego !== undefined) body[`T_cam_ego.${c.name}`] = c.T_cam_ego;
    else if (c.T_ego_cam !== undefined) body[`T_ego_cam.${c.name}`] = c.T_ego_cam;
    images[c.name] = f;
  }
  if (m.v0 !== undefined) body.v0 = m.v0;
  if (m.pose !== undefined) body.pose = m.pose;
  if (m.stream && typeof m.stream === 'object')
    for (const k of ['id', 'timestamp_s', 'reset']) if (m.stream[k] !== undefined) body[`stream.${k}`] = m.stream[k];
  if (m.params !== undefined) body.params = m.params;
  return { body: JSON.stringify(body), images, name: `${man.name} + ${cams.length} image(s)` };
}

// ---- grids: RLE -> cells -> a canvas layer placed by the grid's extent ---------------------------

function decodeRle(rle, n, what) {
  if (!Array.isArray(rle)) throw new Error(`${what}.rle is missing`);
  const out = new Uint8Array(n);
  let at = 0;
  for (const [v, count] of rle) {
    if (at + count > n) throw new Error(`${what}.rle runs past the grid's ${n} cells`);
    out.fill(v, at, at + count);
    at += count;
  }
  if (at !== n) throw new Error(`${what}.rle covers ${at} cells, the grid has ${n}`);
  return out;
}

// A canvas of cols x rows pixels (one per cell), rgba = lut[value] (256 x 4 bytes), placed over
// the BEV panel where the grid lies (grids share the lane grid's axes: row 0 at x_row0_edge).
function layerCanvas(grid, cells, lut, cls) {
  const cv = ui.el('canvas', { class: `layer ${cls}` });
  cv.width = grid.cols;
  cv.height = grid.rows;
  const ctx = cv.getContext('2d'), img = ctx.createImageData(grid.cols, grid.rows), px = new Uint32Array(img.data.buffer);
  const lut32 = new Uint32Array(lut.buffer);
  for (let i = 0; i < cells.length; i++) px[i] = lut32[cells[i]];
  ctx.putImageData(img, 0, 0);
  cv.style.top = `${((BEV.x0 - grid.x_row0_edge) / BEV.xm) * 100}%`;
  cv.style.height = `${((grid.rows * grid.cell_m) / BEV.xm) * 100}%`;
  cv.style.left = `${((BEV.y0 - grid.y_col0_edge) / BEV.ym) * 100}%`;
  cv.style.width = `${((grid.cols * grid.cell_m) / BEV.ym) * 100}%`;
  return cv;
}

function lut(rgbaOf) {
  const t = new Uint8ClampedArray(256 * 4);
  for (let v = 0; v < 256; v++) t.set(rgbaOf(v), v * 4);
  return t;
}

// The class of the highest non-free voxel of each column (0 when all are free), as --png does.
function projectOccupancy(occ, g) {
  const plane = g.rows * g.cols, top = new Uint8Array(plane);
  for (let z = 0; z < g.z_bins; z++)
    for (let i = 0, o = z * plane; i < plane; i++) if (occ[o + i]) top[i] = occ[o + i];
  return top;
}

// ---- the vector layer: boxes, futures, unknown obstacles, the ego path ---------------------------

function drawVectors(cv, result, objects) {
  const k = window.devicePixelRatio || 1, w = Math.round(cv.clientWidth * k), h = Math.round(cv.clientHeight * k);
  cv.width = w;
  cv.height = h;
  const ctx = cv.getContext('2d'), sx = w / BEV.ym, sy = h / BEV.xm;
  const P = (x, y) => [(BEV.y0 - y) * sx, (BEV.x0 - x) * sy];
  const poly = (pts, close) => {
    ctx.beginPath();
    pts.forEach(([x, y], i) => (i ? ctx.lineTo(...P(x, y)) : ctx.moveTo(...P(x, y))));
    if (close) ctx.closePath();
  };
  const drawn = { boxes: 0, futures: 0, unknown: 0, waypoints: 0 };
  ctx.lineWidth = 1.5 * k;
  ctx.font = `${10 * k}px system-ui, sans-serif`;

  const e = result.ego_path || {};
  const path = (pts) => [[0, 0], ...(pts || []).filter((p) => finite(p[1], p[2])).map((p) => [p[1], p[2]])];
  ctx.strokeStyle = INK.ribbon;
  ctx.lineWidth = 5 * k;
  poly(path(e.ribbon));
  ctx.stroke();
  ctx.strokeStyle = ctx.fillStyle = INK.path;
  ctx.lineWidth = 1.5 * k;
  const wp = path(e.waypoints);
  poly(wp);
  ctx.stroke();
  for (const [x, y] of wp.slice(1)) {
    ctx.beginPath();
    ctx.arc(...P(x, y), 2.5 * k, 0, 2 * Math.PI);
    ctx.fill();
    drawn.waypoints++;
  }

  for (const o of objects) {
    const [x, y] = o.kinematics?.position || [], yaw = o.kinematics?.yaw, [l, wd] = o.shape?.dimensions || [];
    if (!finite(x, y, yaw, l, wd)) continue;
    const c = Math.cos(yaw), s = Math.sin(yaw), colour = BOX3D[o.label] || '#e0e0e0';
    if (o.future?.waypoints) {
      ctx.strokeStyle = INK.future;
      poly([[x, y], ...o.future.waypoints.filter((p) => finite(p[1], p[2])).map((p) => [p[1], p[2]])]);
      ctx.stroke();
      drawn.futures++;
    }
    const corners = [[1, 1], [1, -1], [-1, -1], [-1, 1]].map(([u, v]) =>
      [x + (u * l * c) / 2 - (v * wd * s) / 2, y + (u * l * s) / 2 + (v * wd * c) / 2]);
    ctx.strokeStyle = ctx.fillStyle = colour;
    poly(corners, true);
    if (o.stationary) {   // filled: stationary (as --png draws it)
      ctx.globalAlpha = 0.5;
      ctx.fill();
      ctx.globalAlpha = 1;
    }
    ctx.stroke();
    poly([[x, y], [x + (l / 2) * c, y + (l / 2) * s]]);   // heading tick
    ctx.stroke();
    const [px, py] = P(x, y);
    ctx.fillText(`${o.label === 'PEDESTRIAN' ? 'PED' : o.label} ${ui.fmt(o.existence_probability)}${o.stationary ? ' S' : ''}`, px + 4 * k, py - 4 * k);
    drawn.boxes++;
  }

  ctx.strokeStyle = INK.unknown;
  for (const u of result.unknown_objects || []) {
    const [x, y] = u.position || [];
    if (!finite(x, y)) continue;
    const [px, py] = P(x, y), r = 3 * k;
    ctx.beginPath();
    ctx.moveTo(px - r, py - r); ctx.lineTo(px + r, py + r);
    ctx.moveTo(px - r, py + r); ctx.lineTo(px + r, py - r);
    ctx.stroke();
    drawn.unknown++;
  }

  ctx.fillStyle = e.brake ? INK.brake : INK.ego;   // the ego car; a dark notch marks its front
  poly([[EGO_L / 2, EGO_W / 2], [EGO_L / 2, -EGO_W / 2], [-EGO_L / 2, -EGO_W / 2], [-EGO_L / 2, EGO_W / 2]], true);
  ctx.fill();
  ctx.fillStyle = '#0e1016';
  poly([[EGO_L / 2, 0.4], [EGO_L / 2, -0.4], [EGO_L / 2 - 0.8, -0.4], [EGO_L / 2 - 0.8, 0.4]], true);
  ctx.fill();
  return drawn;
}

// ---- the HUD: traffic light, ego controls ------------------------------------------------------

function hud(result) {
  const { el, fmt } = ui, tl = result.traffic_light || {}, e = result.ego_path || {};
  const box = el('div', { class: 'meteor-hud', id: 'meteor-hud' });
  const light = el('div', { id: 'meteor-tl' });
  const dot = el('span', { class: 'tl-dot' });
  dot.style.background = TL[tl.state] || TL.none;
  const probs = Object.entries(tl.probabilities || {}).map(([k, v]) => `${k} ${fmt(v)}`).join(' · ');
  light.append(dot, `traffic light ${(tl.state || '?').toUpperCase()}`, el('br'), el('small', {}, probs));
  const ego = el('div', { id: 'meteor-ego' });
  ego.append(`ego mode ${e.mode ?? '?'} · steer ${fmt(e.steer, 3)} rad · accel ${fmt(e.accel)} m/s²`, el('br'));
  const brake = el('b', { class: e.brake ? 'brake-on' : '' }, `brake ${e.brake ? 'ON' : 'off'}`);
  ego.append(brake, ` p ${fmt(e.brake_probability)}`);
  box.append(light, ego);
  return box;
}

// ---- camera thumbnails: the image at the network's 768 x 432 and its 2D boxes ------------------

async function thumbnail(name, file, present, boxes) {
  const { el, fmt } = ui;
  const fig = el('figure', { class: 'meteor-cam', 'data-camera': name });
  const cv = el('canvas');
  cv.width = NET_W;
  cv.height = NET_H;
  const ctx = cv.getContext('2d');
  let drawn = 0, image = false;
  if (file && present !== false) {
    if (!bitmaps.has(file)) bitmaps.set(file, await createImageBitmap(file));
    ctx.drawImage(bitmaps.get(file), 0, 0, NET_W, NET_H);   // the server resizes to this frame too
    image = true;
  } else {
    ctx.fillStyle = '#606060';
    ctx.fillRect(0, 0, NET_W, NET_H);
    ctx.fillStyle = '#eee';
    ctx.font = '24px system-ui, sans-serif';
    ctx.fillText('absent', NET_W / 2 - 30, NET_H / 2);
  }
  ctx.lineWidth = 2;
  ctx.font = '13px system-ui, sans-serif';
  for (const b of boxes) {
    const [cx, cy, w, h] = b.box || [];
    if (!finite(cx, cy, w, h)) continue;
    ctx.strokeStyle = ctx.fillStyle = BOX2D[b.label] || '#e0e0e0';
    ctx.strokeRect(cx - w / 2, cy - h / 2, w, h);
    ctx.fillText(`${b.label} ${fmt(b.score)}`, cx - w / 2, cy - h / 2 - 3);
    drawn++;
  }
  fig.append(cv, el('figcaption', {}, `${name} · ${boxes.length} 2D box${boxes.length === 1 ? '' : 'es'}`));
  fig.onclick = () => fig.classList.toggle('big');   // click: full width, labels readable
  return { fig, drawn, image };
}

// ---- the side panel: layer toggles and the legend -------------------------------------------------

function swatchRow(colour, text) {
  const row = ui.el('div', { class: 'legend' }), sw = ui.el('span', { class: 'swatch' });
  sw.style.background = colour;
  row.append(sw, text);
  return row;
}

function panel(result, layers) {
  const { el } = ui, box = el('section', { id: 'meteor-legend' });
  const toggles = el('div');
  for (const [name, cv] of Object.entries(layers)) {
    const lab = el('label'), cb = el('input', { type: 'checkbox', id: `layer-${name}` });
    cb.checked = !cv.hidden;
    cb.onchange = () => { cv.hidden = !cb.checked; };
    lab.append(cb, ` ${name}`);
    toggles.append(lab);
  }
  box.append(el('h3', {}, 'layers'), toggles);
  const lanes = result.lanes, occ = result.occupancy;
  box.append(el('h3', {}, `lanes (${lanes.fused ? 'fused' : 'this frame'}): cells per class`));
  lanes.classes.forEach((c, i) => box.append(swatchRow(css(LANE_RGB[i] || LANE_INVALID_RGB), `${c} ${lanes.class_counts[i]}`)));
  box.append(el('h3', {}, 'occupancy: top-most non-free class over z (voxels)'));
  occ.classes.forEach((c, i) => i && occ.class_counts[i] && box.append(swatchRow(css(OCC_RGB[i]), `${c} ${occ.class_counts[i]}`)));
  box.append(el('h3', {}, `risk: max ${ui.fmt(result.risk.max)}, mean ${ui.fmt(result.risk.mean)}`));
  box.append(swatchRow(css(RISK_RGB), 'risk (alpha 0.55 × risk)'));
  box.append(el('h3', {}, 'marks'));
  for (const [c, t] of [[BOX3D.CAR, 'vehicle (CAR)'], [BOX3D.PEDESTRIAN, 'VRU (PEDESTRIAN)'], ['rgba(0, 224, 255, 0.5)', 'filled, "S": stationary'],
    [INK.future, 'vehicle future (3 s)'], [INK.unknown, '× unknown obstacle'], [INK.path, 'ego path waypoints'], [INK.ribbon, 'ego ribbon']])
    box.append(swatchRow(c, t));
  return box;
}

// ---- the renderer -----------------------------------------------------------------------------

const meteor = {
  accept: '.json,image/jpeg,image/png',
  multiple: true,
  setup() {
    ui.$('drop-text').textContent = 'Drop manifest.json together with its camera images here, or pick them:';
  },
  async request(file, bytes, files) {
    frame = await buildRequest(files);
    return { type: 'application/json', query: new URLSearchParams(), body: frame.body, name: frame.name };
  },
  async show(result, file, bytes, view) {
    const { el, fmt, pv, $ } = ui;
    for (const k of ['lanes', 'occupancy', 'risk'])
      if (!result[k]?.grid) throw new Error(`the result has no ${k}.grid: not a METEOR result?`);
    const objects = result.objects || [], o2d = result.objects_2d || {};
    const n2d = Object.values(o2d).reduce((s, l) => s + l.length, 0);
    $('list-title').textContent = `objects (${objects.length}) · 2D ${n2d} · unknown ${(result.unknown_objects || []).length}`;
    $('list').replaceChildren(...objects.map((o, i) => el('div', {},
      `${i} ${o.label} ${fmt(o.existence_probability)} (${(o.kinematics?.position || []).slice(0, 2).map((v) => fmt(v, 1)).join(', ')})` +
      `${o.stationary ? ` stationary (${o.stationary_source})` : ''}`)));

    // the layers, bottom to top
    const lg = result.lanes.grid, og = result.occupancy.grid, rg = result.risk.grid;
    const lanes = layerCanvas(lg, decodeRle(result.lanes.rle, lg.rows * lg.cols, 'lanes'),
      lut((v) => [...(LANE_RGB[v] || LANE_INVALID_RGB), 255]), 'lanes');
    lanes.id = 'meteor-lanes';
    const occ = layerCanvas(og, projectOccupancy(decodeRle(result.occupancy.rle, og.z_bins * og.rows * og.cols, 'occupancy'), og),
      lut((v) => (v ? [...(OCC_RGB[v] || OCC_RGB[1]), Math.round(255 * OCC_ALPHA)] : [0, 0, 0, 0])), 'occupancy');
    const risk = layerCanvas(rg, decodeRle(result.risk.rle, rg.rows * rg.cols, 'risk'),
      lut((v) => [...RISK_RGB, Math.round(RISK_ALPHA * v)]), 'risk');
    const vectors = el('canvas', { class: 'layer vectors', id: 'meteor-vectors' });
    const bev = el('div', { class: 'meteor-bev', id: 'meteor-bev' });
    bev.append(lanes, occ, risk, vectors, hud(result));

    const cams = el('div', { class: 'meteor-cams', id: 'meteor-cams' });
    let boxes2d = 0, thumbs = 0;
    for (const name of CAMERAS) {
      const t = await thumbnail(name, frame?.images[name], result.meta?.cameras?.[name]?.present, o2d[name] || []);
      cams.append(t.fig);
      boxes2d += t.drawn;
      thumbs += t.image ? 1 : 0;
    }
    const root = el('div', { class: 'meteor' });
    root.append(bev, cams);
    view.replaceChildren(root);

    pv.drawn = { boxes: 0, boxes2d, thumbnails: thumbs, unknown: 0, futures: 0, waypoints: 0 };
    let visible = objects;
    const redraw = () => Object.assign(pv.drawn, drawVectors(vectors, result, visible));
    new ResizeObserver(redraw).observe(vectors);
    ui.boxFilter(objects, (o) => o.label, (o) => o.existence_probability, (c) => BOX3D[c] || '#e0e0e0',
      (v) => { visible = v; redraw(); });
    $('controls').append(panel(result, { lanes, occupancy: occ, risk }));
  },
};

export function meteorRenderer(helpers) {
  ui = helpers;
  return meteor;
}
