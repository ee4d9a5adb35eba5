// perceive viewer: takes a file, posts it to /predict, draws the result with the renderer of the
// bundle that answered (`renderers[model]`, keyed on the result's "model" or "meta"."model").
// A new bundle plugs in as one more entry of `renderers` (see those below; meteor's is web/meteor.js).
// State for tests and the curious: window.pv = { state, info, result, drawn, has3d, error }.

import { meteorRenderer } from './meteor.js';

const $ = (id) => document.getElementById(id);
const pv = (window.pv = { state: 'loading', info: null, result: null, drawn: {}, has3d: false, error: null });

// three.js is embedded at build time when tools/deps.sh fetched it; without it the page still
// shows the lists, the timings and a 2D top view.
let THREE = null, OrbitControls = null;
try {
  THREE = await import('three');
  ({ OrbitControls } = await import('three/addons/OrbitControls.js'));
  pv.has3d = true;
} catch (e) {
  THREE = null;
  $('notice').textContent = '3D view unavailable: three.js was not embedded at build time ' +
    '(run tools/deps.sh, then rebuild); showing the 2D top view';
}

// ---- helpers ---------------------------------------------------------------------------------

function el(tag, attrs = {}, text) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

function setStatus(text, error = false) {
  $('status').textContent = text;
  $('status').className = error ? 'error' : '';
}

const fmt = (v, d = 2) => (typeof v === 'number' ? v.toFixed(d) : String(v));

// timing_ms: one row per stage; nested objects (e.g. bevfusion's "stages") indented below.
function showTiming(t) {
  const tab = $('timing');
  tab.replaceChildren();
  const rows = (obj, sub) => {
    for (const [k, v] of Object.entries(obj || {})) {
      if (v && typeof v === 'object') { rows(v, true); continue; }
      const tr = el('tr');
      tr.append(el('td', sub ? { class: 'sub' } : {}, k), el('td', { class: 'num' }, fmt(v, 1)));
      tab.append(tr);
    }
  };
  rows(t, false);
}

// A class filter (one checkbox per label, with counts) and a score slider over `items`;
// onChange(visible items) runs now and on every change. Shared by the renderers that draw boxes.
function boxFilter(items, classOf, scoreOf, colourOf, onChange) {
  const box = $('controls');
  box.replaceChildren();
  const classes = [...new Set(items.map(classOf))].sort();
  const on = new Set(classes);
  const row = el('div');
  for (const c of classes) {
    const lab = el('label');
    const cb = el('input', { type: 'checkbox', 'data-class': c });
    cb.checked = true;
    cb.onchange = () => { cb.checked ? on.add(c) : on.delete(c); apply(); };
    const sw = el('span', { class: 'swatch' });
    sw.style.background = colourOf(c);
    lab.append(cb, sw, `${c} (${items.filter((o) => classOf(o) === c).length})`);
    row.append(lab);
  }
  const slider = el('input', { type: 'range', id: 'score', min: '0', max: '1', step: '0.01', value: '0' });
  const sval = el('span', {}, 'score >= 0.00');
  slider.oninput = apply;
  const srow = el('label');
  srow.append(sval, el('br'), slider);
  box.append(row, srow);
  function apply() {
    const min = Number(slider.value);
    sval.textContent = `score >= ${min.toFixed(2)}`;
    onChange(items.filter((o) => on.has(classOf(o)) && scoreOf(o) >= min));
  }
  apply();
}

// ---- point clouds parsed in the page (for display only; the server parses its own copy) ------

// Returns Float32Array [x, y, z, ...] or null (format not drawn: the boxes are still shown).
function parsePoints(name, buf) {
  const lower = name.toLowerCase();
  try {
    if (lower.endsWith('.pcd')) return parsePcd(buf);
    if (lower.endsWith('.npy')) return parseNpy(buf);
    if (lower.endsWith('.bin')) return strided(new Float32Array(buf, 0, Math.floor(buf.byteLength / 4)), binCols(lower, buf));
  } catch (e) {
    console.warn('points not drawn:', e);
  }
  return null;
}

// nuScenes files are "*.pcd.bin" (5 floats a point); KITTI "*.bin" (4).
function binCols(lower, buf) {
  if (lower.endsWith('.pcd.bin')) return 5;
  return buf.byteLength % 16 === 0 || buf.byteLength % 20 !== 0 ? 4 : 5;
}

function strided(f, cols) {
  const n = Math.floor(f.length / cols), out = new Float32Array(n * 3);
  for (let i = 0; i < n; i++) for (let k = 0; k < 3; k++) out[i * 3 + k] = f[i * cols + k];
  return out;
}

function parsePcd(buf) {
  const bytes = new Uint8Array(buf);
  let head = '', i = 0;
  for (; i < bytes.length && i < 65536; i++) {   // header lines up to and including DATA
    head += String.fromCharCode(bytes[i]);
    if (bytes[i] === 10 && /(^|\n)DATA [^\n]*\n$/.test(head)) { i++; break; }
  }
  const h = {};
  for (const line of head.split('\n')) {
    const [k, ...v] = line.trim().split(/\s+/);
    if (k && !k.startsWith('#')) h[k] = v;
  }
  const fields = h.FIELDS, sizes = (h.SIZE || []).map(Number), types = h.TYPE || [];
  const counts = (h.COUNT || fields.map(() => '1')).map(Number), n = Number(h.POINTS?.[0] ?? 0);
  const data = h.DATA?.[0];
  const at = ['x', 'y', 'z'].map((f) => fields.indexOf(f));
  if (at.some((a) => a < 0)) throw new Error('PCD without x, y, z');
  const out = new Float32Array(n * 3);
  if (data === 'ascii') {
    const col = at.map((a) => counts.slice(0, a).reduce((s, c) => s + c, 0));
    const lines = new TextDecoder().decode(bytes.subarray(i)).split('\n');
    for (let p = 0; p < n && p < lines.length; p++) {
      const v = lines[p].trim().split(/\s+/);
      for (let k = 0; k < 3; k++) out[p * 3 + k] = Number(v[col[k]]);
    }
    return out;
  }
  if (data !== 'binary') throw new Error(`PCD DATA ${data} is not drawn`);
  const off = at.map((a) => sizes.slice(0, a).reduce((s, z, j) => s + z * counts[j], 0));
  const stride = sizes.reduce((s, z, j) => s + z * counts[j], 0);
  const dv = new DataView(buf, i);
  for (let p = 0; p < n && (p + 1) * stride <= dv.byteLength; p++)
    for (let k = 0; k < 3; k++) {
      const a = at[k], o = p * stride + off[k];
      out[p * 3 + k] = types[a] === 'F' && sizes[a] === 8 ? dv.getFloat64(o, true) : dv.getFloat32(o, true);
    }
  return out;
}

function parseNpy(buf) {
  const u8 = new Uint8Array(buf), dv = new DataView(buf);
  if (u8[0] !== 0x93 || String.fromCharCode(...u8.subarray(1, 6)) !== 'NUMPY') throw new Error('not .npy');
  const v1 = u8[6] === 1, hlen = v1 ? dv.getUint16(8, true) : dv.getUint32(8, true), start = v1 ? 10 : 12;
  const header = new TextDecoder().decode(u8.subarray(start, start + hlen));
  const shape = (header.match(/'shape':\s*\(([^)]*)\)/)?.[1] || '').split(',').filter((s) => s.trim()).map(Number);
  if (!/'descr':\s*'<f4'/.test(header) || /'fortran_order':\s*True/.test(header) || shape.length !== 2 || shape[1] < 3)
    throw new Error('only C-order float32 N x C arrays are drawn');
  return strided(new Float32Array(buf.slice(start + hlen, start + hlen + shape[0] * shape[1] * 4)), shape[1]);
}

// ---- bevfusion: points and 3D boxes ------------------------------------------------------------

const CLASS_COLOURS = { CAR: '#4fc3f7', TRUCK: '#ffb74d', BUS: '#ba68c8', TRAILER: '#a1887f', BICYCLE: '#81c784',
  MOTORCYCLE: '#aed581', PEDESTRIAN: '#ff8a80' };
const classColour = (c) => CLASS_COLOURS[c] || '#e0e0e0';

const POINT_TYPES = { pcd: 'application/x-pcd', npy: 'application/x-npy', npz: 'application/x-npz' };

// One 3D scene, reused across results: points, a group of boxes, labels as HTML over the canvas.
let scene3d = null;

function make3d(view) {
  const s = { view, labels: el('div') };
  s.renderer = new THREE.WebGLRenderer({ antialias: true, preserveDrawingBuffer: true });
  s.renderer.setPixelRatio(window.devicePixelRatio);
  s.renderer.setClearColor(0x111418);
  s.scene = new THREE.Scene();
  s.boxes = new THREE.Group();
  s.scene.add(s.boxes, new THREE.AxesHelper(2));
  const grid = new THREE.GridHelper(120, 12, 0x333a44, 0x262b33);
  grid.rotation.x = Math.PI / 2;   // lidar frame: z up
  s.scene.add(grid);
  s.persp = new THREE.PerspectiveCamera(50, 1, 0.1, 1000);
  s.persp.up.set(0, 0, 1);
  s.persp.position.set(-28, -20, 24);
  s.ortho = new THREE.OrthographicCamera(-60, 60, 60, -60, 0.1, 1000);
  s.ortho.up.set(1, 0, 0);         // BEV: x (forward) points up the screen
  s.ortho.position.set(0, 0, 200);
  s.controls = { persp: new OrbitControls(s.persp, s.renderer.domElement), ortho: new OrbitControls(s.ortho, s.renderer.domElement) };
  s.controls.ortho.enableRotate = false;
  s.bev = false;
  for (const c of Object.values(s.controls)) c.addEventListener('change', () => render3d(s));
  s.setBev = (on) => {
    s.bev = on;
    s.controls.persp.enabled = !on;
    s.controls.ortho.enabled = on;
    render3d(s);
  };
  s.setBev(false);
  new ResizeObserver(() => render3d(s)).observe(view);
  return s;
}

function render3d(s) {
  const w = s.view.clientWidth || 1, h = s.view.clientHeight || 1;
  s.renderer.setSize(w, h, true);
  s.persp.aspect = w / h;
  s.persp.updateProjectionMatrix();
  s.ortho.left = -60 * w / h; s.ortho.right = 60 * w / h;
  s.ortho.updateProjectionMatrix();
  const cam = s.bev ? s.ortho : s.persp;
  s.renderer.render(s.scene, cam);
  // labels: the top centre of each drawn box, projected
  const v = new THREE.Vector3();
  for (const g of s.boxes.children) {
    v.set(0, 0, g.userData.h / 2).applyMatrix4(g.matrixWorld).project(cam);
    const lab = g.userData.label, visible = v.z < 1 && Math.abs(v.x) <= 1 && Math.abs(v.y) <= 1;
    lab.style.display = visible ? '' : 'none';
    lab.style.left = `${((v.x + 1) / 2) * w}px`;
    lab.style.top = `${((1 - v.y) / 2) * h}px`;
  }
}

function setPoints3d(s, xyz) {
  if (s.points) { s.scene.remove(s.points); s.points.geometry.dispose(); s.points = null; }
  if (!xyz) return;
  const geo = new THREE.BufferGeometry(), n = xyz.length / 3, col = new Float32Array(n * 3), c = new THREE.Color();
  for (let i = 0; i < n; i++) {   // colour by height: blue (ground) to yellow (3 m and up)
    const t = Math.min(1, Math.max(0, (xyz[i * 3 + 2] + 2) / 5));
    c.setHSL(0.62 - 0.48 * t, 0.8, 0.45 + 0.2 * t);
    col.set([c.r, c.g, c.b], i * 3);
  }
  geo.setAttribute('position', new THREE.BufferAttribute(xyz, 3));
  geo.setAttribute('color', new THREE.BufferAttribute(col, 3));
  s.points = new THREE.Points(geo, new THREE.PointsMaterial({ size: 2, sizeAttenuation: false, vertexColors: true }));
  s.scene.add(s.points);
}

// Each object: a wireframe box (Autoware: position = centre, dimensions = [length, width,
// height], yaw about z) with a heading tick, and an HTML label. Only the objects passed are added.
function setBoxes3d(s, objects) {
  for (const g of [...s.boxes.children]) {
    s.boxes.remove(g);
    g.traverse((o) => o.geometry?.dispose());
  }
  s.labels.replaceChildren();
  for (const o of objects) {
    const [l, w, h] = o.shape.dimensions, colour = new THREE.Color(classColour(o.label));
    const mat = new THREE.LineBasicMaterial({ color: colour });
    const g = new THREE.Group();
    g.add(new THREE.LineSegments(new THREE.EdgesGeometry(new THREE.BoxGeometry(l, w, h)), mat));
    const tick = new THREE.BufferGeometry().setFromPoints([new THREE.Vector3(0, 0, -h / 2), new THREE.Vector3(l / 2, 0, -h / 2)]);
    g.add(new THREE.Line(tick, mat));
    g.position.set(...o.kinematics.position);
    g.rotation.z = o.kinematics.yaw;
    g.userData = { h, label: el('div', { class: 'label3d' }, `${o.label} ${fmt(o.existence_probability)}`) };
    s.labels.append(g.userData.label);
    s.boxes.add(g);
  }
  s.scene.updateMatrixWorld(true);
  pv.drawn = { boxes: s.boxes.children.length, points: s.points ? s.points.geometry.attributes.position.count : 0 };
  render3d(s);
}

// Without three.js: a 2D top view (x up, y left) of the points and the boxes on a canvas.
function drawBev2d(view, xyz, objects) {
  const cv = view.querySelector('canvas') || view.appendChild(el('canvas'));
  const w = (cv.width = view.clientWidth), h = (cv.height = view.clientHeight), ctx = cv.getContext('2d');
  const k = Math.min(w, h) / 130, X = (x, y) => w / 2 - y * k, Y = (x, y) => h / 2 - x * k;
  ctx.fillStyle = '#111418';
  ctx.fillRect(0, 0, w, h);
  ctx.fillStyle = '#6a8';
  for (let i = 0; xyz && i < xyz.length; i += 3) ctx.fillRect(X(xyz[i], xyz[i + 1]), Y(xyz[i], xyz[i + 1]), 1, 1);
  for (const o of objects) {
    const [l, wd] = o.shape.dimensions, [cx, cy] = o.kinematics.position, c = Math.cos(o.kinematics.yaw), s = Math.sin(o.kinematics.yaw);
    const corners = [[l, wd], [l, -wd], [-l, -wd], [-l, wd]].map(([a, b]) => [cx + (a / 2) * c - (b / 2) * s, cy + (a / 2) * s + (b / 2) * c]);
    ctx.strokeStyle = classColour(o.label);
    ctx.beginPath();
    corners.forEach(([x, y], j) => (j ? ctx.lineTo(X(x, y), Y(x, y)) : ctx.moveTo(X(x, y), Y(x, y))));
    ctx.closePath();
    ctx.stroke();
  }
  pv.drawn = { boxes: objects.length, points: xyz ? xyz.length / 3 : 0 };
}

const bevfusion = {
  accept: '.pcd,.bin,.npy,.npz',
  request(file) {
    const lower = file.name.toLowerCase(), ext = lower.split('.').pop(), q = new URLSearchParams();
    if (POINT_TYPES[ext]) return { type: POINT_TYPES[ext], query: q };
    q.set('format', ext === 'bin' ? (lower.endsWith('.pcd.bin') ? 'nuscenes' : 'kitti') : 'auto');
    return { type: 'application/octet-stream', query: q };
  },
  show(result, file, bytes, view) {
    const objects = result.objects || [], xyz = parsePoints(file.name, bytes);
    $('list-title').textContent = `objects (${objects.length})`;
    const list = $('list');
    list.replaceChildren(...objects.map((o, i) => el('div', {},
      `${i} ${o.label} ${fmt(o.existence_probability)}  (${o.kinematics.position.map((v) => fmt(v, 1)).join(', ')})`)));
    let draw;
    if (THREE && (!scene3d || scene3d.view !== view)) {
      try {
        view.replaceChildren();
        scene3d = make3d(view);
      } catch (e) {   // three.js is there but WebGL is not (no GPU, no software GL)
        THREE = null;
        pv.has3d = false;
        view.replaceChildren();
        $('notice').textContent = `3D view unavailable: ${e.message || e} (WebGL); showing the 2D top view`;
      }
      if (THREE) {
        view.append(scene3d.renderer.domElement, scene3d.labels);
        const bev = el('label', { class: 'overlay' }), cb = el('input', { type: 'checkbox', id: 'bev' });
        cb.onchange = () => scene3d.setBev(cb.checked);
        bev.append(cb, ' BEV top view');
        view.append(bev);
      }
    }
    if (THREE) {
      setPoints3d(scene3d, xyz);
      draw = (visible) => setBoxes3d(scene3d, visible);
    } else {
      draw = (visible) => drawBev2d(view, xyz, visible);
    }
    if (!xyz) setStatus(`${$('status').textContent}\n(points of ${file.name} not drawn: boxes only)`);
    boxFilter(objects, (o) => o.label, (o) => o.existence_probability, classColour, draw);
  },
};

// ---- hamer: the image with each hand's projected mesh vertices, keypoints and box ---------------

// OpenPose hand order: wrist, then 4 joints per finger (thumb .. little).
const HAND_BONES = [0, 1, 2, 3, 4, 0, 5, 6, 7, 8, 0, 9, 10, 11, 12, 0, 13, 14, 15, 16, 0, 17, 18, 19, 20];
const FINGER_COLOURS = ['#ff5252', '#ffd740', '#69f0ae', '#40c4ff', '#e040fb'];
const F_CROP = 5000 / 256;   // HaMeR's focal length per pixel of the crop side

// The crop camera, as src/models/hamer/render.c projects: z = p.z + t.z, k = size f / z.
function projectVertex(hand, p) {
  const t = hand.cam_t, z = p[2] + t[2];
  if (!(z > 0)) return null;
  const k = (hand.crop.size * F_CROP) / z;
  return [hand.crop.center[0] + k * (p[0] + t[0]), hand.crop.center[1] + k * (p[1] + t[1])];
}

let hamerImage = null;   // { file, bitmap } of the last picture, for box dragging

function hamerBoxes() {
  return $('boxes').value.split(/[\n;]+/).map((s) => s.trim()).filter(Boolean);
}

function drawHands(view, bitmap, hands) {
  const cv = view.querySelector('canvas') || view.appendChild(el('canvas'));
  const k = Math.min(view.clientWidth / bitmap.width, view.clientHeight / bitmap.height);
  cv.width = Math.round(bitmap.width * k);
  cv.height = Math.round(bitmap.height * k);
  cv.dataset.scale = k;
  const ctx = cv.getContext('2d');
  ctx.drawImage(bitmap, 0, 0, cv.width, cv.height);
  const P = (u) => (u + 0.5) * k - 0.5;   // image pixel centre -> canvas
  let vertices = 0, keypoints = 0;
  for (const hnd of hands) {
    ctx.fillStyle = hnd.is_right ? 'rgba(80, 160, 255, 0.8)' : 'rgba(255, 110, 180, 0.8)';
    for (const p of hnd.vertices) {
      const uv = projectVertex(hnd, p);
      if (!uv) continue;
      ctx.fillRect(P(uv[0]) - 1, P(uv[1]) - 1, 2, 2);
      vertices++;
    }
    ctx.lineWidth = 2;
    for (let f = 0; f < 5; f++) {
      ctx.strokeStyle = FINGER_COLOURS[f];
      ctx.beginPath();
      HAND_BONES.slice(f * 5, f * 5 + 5).forEach((j, i) => {
        const [u, v] = hnd.keypoints_2d[j];
        i ? ctx.lineTo(P(u), P(v)) : ctx.moveTo(P(u), P(v));
      });
      ctx.stroke();
    }
    keypoints += hnd.keypoints_2d.length;
    const [x1, y1, x2, y2] = hnd.box;
    ctx.strokeStyle = hnd.is_right ? '#50a0ff' : '#ff6eb4';
    ctx.strokeRect(P(x1), P(y1), P(x2) - P(x1), P(y2) - P(y1));
    ctx.fillStyle = '#fff';
    ctx.fillText(hnd.is_right ? 'right' : 'left', P(x1) + 2, P(y1) - 3);
  }
  pv.drawn = { hands: hands.length, vertices, keypoints };
  return cv;
}

// Dragging on the image adds a box line (right hand; append ",0" for a left one) and runs again.
function enableBoxDrag(cv) {
  let start = null;
  cv.onmousedown = (e) => { start = [e.offsetX, e.offsetY]; };
  cv.onmouseup = (e) => {
    if (!start) return;
    const k = Number(cv.dataset.scale), a = start.map((v) => Math.round(v / k)), b = [e.offsetX, e.offsetY].map((v) => Math.round(v / k));
    start = null;
    if (Math.abs(a[0] - b[0]) < 4 || Math.abs(a[1] - b[1]) < 4) return;
    const box = [Math.min(a[0], b[0]), Math.min(a[1], b[1]), Math.max(a[0], b[0]), Math.max(a[1], b[1])];
    $('boxes').value = [...hamerBoxes(), box.join(',')].join('\n');
    run();
  };
}

const hamer = {
  accept: 'image/png,image/jpeg',
  setup() { $('boxes-row').hidden = false; },
  request(file) {
    const boxes = hamerBoxes();
    if (!boxes.length) throw new Error('hamer needs hand boxes: type x1,y1,x2,y2 lines, or drag a box on the image');
    const q = new URLSearchParams();
    for (const b of boxes) q.append('box', b);
    return { type: /\.jpe?g$/i.test(file.name) || file.type === 'image/jpeg' ? 'image/jpeg' : 'image/png', query: q };
  },
  async preview(file, view) {   // the picture before any result, so boxes can be dragged on it
    hamerImage = { file, bitmap: await createImageBitmap(file) };
    view.replaceChildren();
    enableBoxDrag(drawHands(view, hamerImage.bitmap, []));
  },
  async show(result, file, bytes, view) {
    if (!hamerImage || hamerImage.file !== file) await this.preview(file, view);
    const hands = result.hands || [];
    $('list-title').textContent = `hands (${hands.length})`;
    $('list').replaceChildren(...hands.map((h, i) => el('div', {},
      `${i} ${h.is_right ? 'right' : 'left'} box ${h.box.map((v) => fmt(v, 0)).join(',')} cam_t_full ${h.cam_t_full.map((v) => fmt(v)).join(', ')}`)));
    $('controls').replaceChildren();
    drawHands(view, hamerImage.bitmap, hands);
  },
};

// The renderer of each bundle, keyed on the result's model name: { accept, request, show } and
// optionally multiple (several files make one input), setup, preview. request(file, bytes, files)
// may return the body to post (else the file's bytes) and a name for the status line.
export const renderers = { bevfusion, hamer, meteor: meteorRenderer({ $, el, fmt, boxFilter, pv }) };

// ---- the page: model info, file in, /predict, result out ---------------------------------------

let current = null;   // { file, bytes, files }

async function run() {
  if (!current) return;
  const r = renderers[pv.info?.model];
  const view = $('view');
  pv.state = 'running';
  pv.error = null;
  let name = current.file.name;
  setStatus(`running ${name}…`);
  try {
    // a bundle without a renderer: the file as it is (?format=auto), the JSON and timings only
    const req = r ? await r.request(current.file, current.bytes, current.files) : { type: 'application/octet-stream', query: new URLSearchParams({ format: 'auto' }) };
    if (req.name) setStatus(`running ${(name = req.name)}…`);
    const extra = new URLSearchParams($('params').value.replace(/^\?/, ''));
    for (const [k, v] of extra) req.query.append(k, v);
    const resp = await fetch(`/predict?${req.query}`, { method: 'POST', headers: { 'Content-Type': req.type }, body: req.body ?? current.bytes });
    const json = await resp.json();
    if (!resp.ok) throw new Error(`${resp.status} ${json.status || ''}: ${json.error || 'request failed'}`);
    const model = json.model || json.meta?.model || pv.info.model;
    pv.result = json;
    $('json').textContent = JSON.stringify(json, null, 1);
    const w = json.meta?.weights;
    $('weights').textContent = w === 'generated' ? 'GENERATED weights (seeded random, not a trained model): the outputs mean nothing' : w ? `weights: ${w}` : '';
    setStatus(`${name}: ${fmt(json.timing_ms?.total ?? 0, 1)} ms`);
    showTiming(json.timing_ms);
    await (renderers[model] || r)?.show(json, current.file, current.bytes, view);
    pv.state = 'done';
  } catch (e) {
    pv.error = String(e.message || e);
    pv.state = 'error';
    setStatus(pv.error, true);
  }
}

// files: what was dropped or picked; a renderer without `multiple` takes the first one.
async function take(files) {
  if (!files.length) return;
  const file = files[0], r = renderers[pv.info?.model];
  current = { file, files: r?.multiple ? files : [file], bytes: await file.arrayBuffer() };
  if (r?.preview) await r.preview(file, $('view'));
  $('run').disabled = false;
  if (r === hamer && !hamerBoxes().length) {
    setStatus('drag a box around each hand on the image (or type them), then Run');
    pv.state = 'ready';
    return;
  }
  await run();
}

async function start() {
  const drop = $('drop');
  drop.ondragover = (e) => { e.preventDefault(); drop.classList.add('over'); };
  drop.ondragleave = () => drop.classList.remove('over');
  drop.ondrop = (e) => { e.preventDefault(); drop.classList.remove('over'); take([...e.dataTransfer.files]); };
  $('file').onchange = () => take([...$('file').files]);
  $('run').onclick = run;
  try {
    pv.info = await (await fetch('/info')).json();
    $('model').textContent = pv.info.model;
    const r = renderers[pv.info.model];
    if (r) { $('file').accept = r.accept; $('file').multiple = !!r.multiple; r.setup?.(); }
    setStatus(r ? 'pick or drop a file' : `no renderer for model '${pv.info.model}': the JSON is still shown`);
    pv.state = 'ready';
  } catch (e) {
    pv.state = 'error';
    setStatus(`GET /info failed: ${e}`, true);
  }
}

start();
