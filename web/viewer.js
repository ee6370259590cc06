// The Drape viewer: a garment streamed from draped on the server's body
// (GET /v1/body), with three.js. Served by draped at / (--web-root web).
// docs/viewer.md describes the choices (the body, the camera, the clips, the
// side-by-side view, the stats).
// URL parameters (all optional): garment, clip, format, compare (1: side by
// side), token (API key).
import * as THREE from 'three';
import { OrbitControls } from 'three/addons/controls/OrbitControls.js';
import { GLTFLoader } from 'three/addons/loaders/GLTFLoader.js';
import { connect, FORMATS, ready as decoderReady } from './drape-client.js';
import { CLIPS, clipFrames, convertMotionFile, loadMotion, loadServerMotions, loadShippedClips, seamless } from './motion.js';
import { ServerBody, StandInBody } from './body.js';

const params = new URLSearchParams(location.search);
const token = params.get('token');
const authHeaders = token ? { Authorization: `Bearer ${token}` } : {};
const wsUrl = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/v1/stream` +
  (token ? `?token=${encodeURIComponent(token)}` : '');

const WINDOW_MS = 5000; // stats window
const RING = 1024; // stats samples and sent poses remembered
const SPACING = 0.9; // metres between avatars side by side
const FOLLOW_TAU = 0.25; // s: the camera's follow time constant
const MODE_LABELS = { neural: 'neural', lbs: 'lbs (skinning)', physics: 'physics' };
const $ = (id) => document.getElementById(id);

// ---- the numbers, on screen and on window.drapeStats ----
const stats = {
  frames: 0, fps: 0, render_fps: 0, rtt_p50: 0, rtt_p99: 0, server_p50: 0, server_p99: 0,
  bytes: 0, dropped: 0, errors: 0, late: false, state: 'starting', last_error: '',
  garment: '', format: '', clip: '', clip_label: '', vertices: 0, body: 'stand-in',
  // the clip frame the first avatar shows, how many loop cuts it has shown, the
  // last seq sent and how many poses were sent with reset
  clip_frame: -1, clip_frames: 0, loops: 0, seq_sent: 0, resets_sent: 0,
  sent: { clip_frame: -1, loops: 0 }, // the same for the last pose sent (ahead by the round trip)
  avatars: [], // per avatar: {mode, avatar, frames, dropped, seq, screen: {body, garment}, world: {body, garment}}
  screen: null, // {width, height, free: [x0, y0, x1, y1], body, garment}: pixel boxes over all avatars
  camera: null, // {target: [x, y, z], distance, lag: metres from the target to the pelvis it follows}
  // over every rendered frame (the tests zero it): frames drawn, frames where a
  // body or garment box was not wholly inside the canvas, and the most a
  // garment's world box stuck out of its body's (m)
  track: { renders: 0, outside: 0, garment_excess: 0 },
};
window.drapeStats = stats;
const samples = { t: new Float64Array(RING), rtt: new Float64Array(RING), srv: new Float64Array(RING), n: 0 };
const scratch = new Float64Array(RING);

function percentiles(arr, from, count) {
  // arr samples at ring indices from..from+count-1, NaN (none) left out;
  // returns [p50, p99] (nearest rank)
  let n = 0;
  for (let i = 0; i < count; i++) {
    const x = arr[(from + i) % RING];
    if (!Number.isNaN(x)) scratch[n++] = x;
  }
  count = n;
  if (!count) return [0, 0];
  const s = scratch.subarray(0, count).sort();
  const rank = (p) => s[Math.min(count - 1, Math.max(0, Math.ceil(p * count) - 1))];
  return [rank(0.5), rank(0.99)];
}

function updateStats(now) {
  let first = samples.n;
  const oldest = Math.max(0, samples.n - RING);
  while (first > oldest && now - samples.t[(first - 1) % RING] <= WINDOW_MS) first--;
  const count = samples.n - first;
  const span = count ? Math.max(1000, Math.min(WINDOW_MS, now - samples.t[first % RING])) : WINDOW_MS;
  stats.fps = +(count / (span / 1000)).toFixed(1);
  [stats.rtt_p50, stats.rtt_p99] = percentiles(samples.rtt, first, count).map((x) => +x.toFixed(2));
  [stats.server_p50, stats.server_p99] = percentiles(samples.srv, first, count).map((x) => +x.toFixed(2));
}

function renderOverlay() {
  const modes = slots.length > 1 ? ` · ${slots.map((s) => s.mode).join(' | ')}` : '';
  $('overlay').textContent = [
    `${stats.garment || '-'} · ${stats.format || '-'} · ${stats.vertices} vertices${modes}`,
    `motion ${stats.clip_label || stats.clip || '-'}`,
    `stream ${stats.fps.toFixed(1)} fps   render ${stats.render_fps.toFixed(0)} fps`,
    `round trip p50 ${stats.rtt_p50.toFixed(1)} ms  p99 ${stats.rtt_p99.toFixed(1)} ms`,
    `server     p50 ${stats.server_p50.toFixed(1)} ms  p99 ${stats.server_p99.toFixed(1)} ms`,
    `${stats.bytes} bytes/frame   ${stats.frames} frames   ${stats.dropped} dropped   ${stats.errors} errors`,
  ].join('\n');
}

// one message at a time: the connection's state wins over a late frame
const messages = { conn: null, late: null, app: null };
function setMessage(slot, text, kind = 'error') {
  messages[slot] = text ? { text, kind } : null;
  const m = messages.conn || messages.app || messages.late;
  const el = $('message');
  el.hidden = !m;
  if (m) {
    el.textContent = m.text;
    el.className = m.kind;
  }
}

// ---- the scene ----
const BACKGROUND = 0x1d2027;
const renderer = new THREE.WebGLRenderer({ antialias: true });
renderer.setPixelRatio(Math.min(2, window.devicePixelRatio || 1));
renderer.setSize(window.innerWidth, window.innerHeight);
$('view').appendChild(renderer.domElement);
const scene = new THREE.Scene();
scene.background = new THREE.Color(BACKGROUND);
scene.fog = new THREE.Fog(BACKGROUND, 9, 24); // the ground fades out instead of ending
const camera = new THREE.PerspectiveCamera(40, window.innerWidth / window.innerHeight, 0.05, 60);
const orbit = new OrbitControls(camera, renderer.domElement);
orbit.target.set(0, 0.93, 0);
camera.position.set(1.2, 1.55, 2.6);
orbit.update();
scene.add(new THREE.HemisphereLight(0xdde4ff, 0x3a3228, 1.1));
const sun = new THREE.DirectionalLight(0xffffff, 1.8);
sun.position.set(2, 4, 3);
scene.add(sun);
// The ground: a large plane at y = 0 (where the body's feet are) with a grid
// drawn in its texture (lines of a GridHelper that pass behind the camera
// vanish in software WebGL). It follows the camera's target horizontally by
// whole cells, so its lines stay put in the world while the avatar walks.
const GRID_CELL = 0.5;
const GROUND_SIZE = 200;
// WebGL on the CPU (SwiftShader, llvmpipe): anisotropic filtering of the
// ground costs it most of its frame rate (1 fps instead of 5 at 1280×800)
function softwareGL() {
  const gl = renderer.getContext();
  const info = gl.getExtension('WEBGL_debug_renderer_info');
  const name = String(gl.getParameter(info ? info.UNMASKED_RENDERER_WEBGL : gl.RENDERER));
  return /swiftshader|llvmpipe|softpipe|software/i.test(name);
}
function gridTexture() {
  const c = document.createElement('canvas');
  c.width = c.height = 128;
  const g = c.getContext('2d');
  g.fillStyle = '#262a32';
  g.fillRect(0, 0, 128, 128);
  g.fillStyle = '#3b404b';
  g.fillRect(0, 0, 128, 3);
  g.fillRect(0, 0, 3, 128);
  const t = new THREE.CanvasTexture(c);
  t.wrapS = t.wrapT = THREE.RepeatWrapping;
  t.repeat.set(GROUND_SIZE / GRID_CELL, GROUND_SIZE / GRID_CELL);
  t.anisotropy = softwareGL() ? 1 : Math.min(8, renderer.capabilities.getMaxAnisotropy());
  t.colorSpace = THREE.SRGBColorSpace;
  return t;
}
const ground = new THREE.Mesh(new THREE.PlaneGeometry(GROUND_SIZE, GROUND_SIZE),
  new THREE.MeshBasicMaterial({ map: gridTexture() }));
ground.rotation.x = -Math.PI / 2;
scene.add(ground);

const bodyMaterial = new THREE.MeshStandardMaterial({ color: 0xc9b8a6, roughness: 0.8 });
const garmentMaterial = new THREE.MeshStandardMaterial({ color: 0x2f6fe0, roughness: 0.65, side: THREE.DoubleSide });
const glbCache = new Map(); // garment name → the glTF's geometry (each avatar draws a copy)
// The body: the server's body model for the chosen betas (GET /v1/body),
// posed with each frame's pose; the stand-in figure until it is loaded or if
// the server has no body route. One per avatar.
let bodyProto = new StandInBody(bodyMaterial);
let bodyBetas = '';
async function loadBody(betas) {
  const key = betas.join(',');
  if (key === bodyBetas) return;
  bodyBetas = key;
  try {
    const b = await ServerBody.load(location.origin, betas, bodyMaterial, authHeaders);
    if (bodyBetas !== key) {
      b.dispose();
      return;
    }
    bodyProto.dispose();
    bodyProto = b;
    for (const s of slots) s.setBody(b.clone());
    stats.body = 'server';
  } catch (e) {
    stats.body = 'stand-in';
  }
}

async function garmentGeometry(name) {
  if (!glbCache.has(name)) {
    const res = await fetch(`/v1/garments/${encodeURIComponent(name)}?format=glb`, { headers: authHeaders });
    if (!res.ok) throw new Error(`GET /v1/garments/${name}: HTTP ${res.status}`);
    const gltf = await new GLTFLoader().parseAsync(await res.arrayBuffer(), '');
    let geometry = null;
    gltf.scene.traverse((o) => {
      if (o.isMesh && !geometry) geometry = o.geometry;
    });
    if (!geometry) throw new Error(`garment ${name}: no mesh in the glTF`);
    glbCache.set(name, geometry);
  }
  const g = glbCache.get(name).clone();
  g.attributes.position.setUsage(THREE.DynamicDrawUsage);
  return g;
}

// ---- avatars on screen: one, or one per mode side by side ----
// Each is its own stream avatar with the same poses, drawn in a group
// shifted by a fixed offset (the poses' translation is the same for all).
class Slot {
  constructor(mode, avatar, offset) {
    this.mode = mode;
    this.avatar = avatar;
    this.offset = offset;
    this.group = new THREE.Group();
    this.group.position.copy(offset);
    scene.add(this.group);
    this.mesh = null;
    this.geometry = null;
    this.ready = false;
    this.frames = 0;
    this.dropped = 0;
    this.serverDropped = 0; // the last frame's `dropped`
    this.droppedEarlier = 0; // dropped on earlier connections
    this.shownSeq = seq; // cuts sent before it opened are not its own
    this.body = null;
    this.setBody(bodyProto.clone());
    this.label = document.createElement('div');
    this.label.className = 'avatar-label';
    this.label.textContent = MODE_LABELS[mode] || mode;
    $('labels').append(this.label);
  }

  setBody(b) {
    if (this.body) {
      this.group.remove(this.body.group);
      this.body.dispose();
    }
    this.body = b;
    this.group.add(b.group);
    const sent = sentPoses[this.shownSeq % RING];
    if (sent) b.setPose(sent.pose, sent.trans);
  }

  setGeometry(g) {
    this.geometry = g;
    this.mesh = new THREE.Mesh(g, garmentMaterial);
    this.mesh.frustumCulled = false; // the vertices move every frame
    this.mesh.visible = false; // until its first frame
    this.group.add(this.mesh);
  }

  dispose() {
    scene.remove(this.group);
    if (this.geometry) this.geometry.dispose();
    this.body.dispose();
    this.label.remove();
  }
}

// ---- the camera: follows the avatars, frames them ----
// The orbit target chases the pelvis of the first avatar (the middle of the
// row side by side) exponentially (time constant FOLLOW_TAU) and the camera
// moves by the same step, so the user's orbit (angle, distance) is kept; on
// a cut (a clip that loops or changes) it jumps with the avatar.
const follow = { goal: new THREE.Vector3(0, 0.93, 0), snap: false };
const step = new THREE.Vector3();
let panelWidth = 0; // pixels on the right covered by the control panel

function layout() {
  const w = window.innerWidth;
  const h = window.innerHeight;
  const panel = $('panel').getBoundingClientRect();
  // keep the avatars in the part of the canvas the panel leaves free: the
  // view's centre moves left by half the panel (a wider virtual view, cropped)
  panelWidth = !$('panel').hidden && w > 2.5 * (w - panel.left) ? Math.ceil(w - panel.left) : 0;
  renderer.setSize(w, h);
  if (panelWidth) camera.setViewOffset(w + panelWidth, h, panelWidth, 0, w, h);
  else {
    camera.clearViewOffset();
    camera.aspect = w / h;
  }
  camera.updateProjectionMatrix();
}

// Puts the camera at the distance where the row of avatars fits in the free
// part of the view, along the current viewing direction.
function frameAvatars() {
  const n = Math.max(1, slots.length);
  const halfWidth = (SPACING * (n - 1)) / 2 + 0.45;
  const radius = Math.hypot(halfWidth, 0.95, 0.3);
  const h = window.innerHeight;
  const freeAspect = (window.innerWidth - panelWidth) / h;
  const vHalf = THREE.MathUtils.degToRad(camera.fov / 2);
  const hHalf = Math.atan(Math.tan(vHalf) * freeAspect);
  const dist = radius / Math.sin(Math.min(vHalf, hHalf));
  const dir = camera.position.clone().sub(orbit.target).normalize();
  camera.position.copy(orbit.target).addScaledVector(dir, dist);
  orbit.update();
}

window.addEventListener('resize', () => {
  layout();
  frameAvatars();
});

// ---- what is on screen, measured (drapeStats.screen, .avatars[i]) ----
const viewProj = new THREE.Matrix4();
const box3 = new THREE.Box3();
const corner = new THREE.Vector3();
function measure(positions, count, offset, out) {
  // out: {screen: [x0, y0, x1, y1] pixels, world: [min xyz, max xyz]}; points behind the camera make the box infinite
  const e = viewProj.elements;
  const w = window.innerWidth;
  const h = window.innerHeight;
  let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
  const b = [Infinity, Infinity, Infinity, -Infinity, -Infinity, -Infinity];
  for (let i = 0; i < count; i++) {
    const x = positions[3 * i] + offset.x;
    const y = positions[3 * i + 1] + offset.y;
    const z = positions[3 * i + 2] + offset.z;
    if (x < b[0]) b[0] = x;
    if (y < b[1]) b[1] = y;
    if (z < b[2]) b[2] = z;
    if (x > b[3]) b[3] = x;
    if (y > b[4]) b[4] = y;
    if (z > b[5]) b[5] = z;
    const cw = e[3] * x + e[7] * y + e[11] * z + e[15];
    if (cw <= 1e-6) {
      x0 = y0 = -Infinity;
      x1 = y1 = Infinity;
      continue;
    }
    const sx = ((e[0] * x + e[4] * y + e[8] * z + e[12]) / cw + 1) * 0.5 * w;
    const sy = (1 - (e[1] * x + e[5] * y + e[9] * z + e[13]) / cw) * 0.5 * h;
    if (sx < x0) x0 = sx;
    if (sx > x1) x1 = sx;
    if (sy < y0) y0 = sy;
    if (sy > y1) y1 = sy;
  }
  out.screen = [x0, y0, x1, y1].map((v) => +v.toFixed(1));
  out.world = b.map((v) => +v.toFixed(4));
  return out;
}
const union = (a, b) => (a ? [Math.min(a[0], b[0]), Math.min(a[1], b[1]), Math.max(a[2], b[2]), Math.max(a[3], b[3])] : b.slice());

function measureAll() {
  viewProj.multiplyMatrices(camera.projectionMatrix, camera.matrixWorldInverse);
  let body = null;
  let garment = null;
  stats.avatars = slots.map((s) => {
    const a = { mode: s.mode, avatar: s.avatar, frames: s.frames, dropped: s.dropped, seq: s.shownSeq, screen: {}, world: {} };
    const m = {};
    if (s.body.geometry) {
      const p = s.body.geometry.attributes.position;
      measure(p.array, p.count, s.offset, m);
    } else {
      s.body.bounds(box3);
      const pts = new Float32Array(24);
      for (let i = 0; i < 8; i++) {
        corner.set(i & 1 ? box3.max.x : box3.min.x, i & 2 ? box3.max.y : box3.min.y, i & 4 ? box3.max.z : box3.min.z).toArray(pts, 3 * i);
      }
      measure(pts, 8, { x: 0, y: 0, z: 0 }, m);
    }
    a.screen.body = m.screen;
    a.world.body = m.world;
    body = union(body, m.screen);
    if (s.mesh && s.mesh.visible) {
      const p = s.geometry.attributes.position;
      measure(p.array, p.count, s.offset, m);
      a.screen.garment = m.screen;
      a.world.garment = m.world;
      garment = union(garment, m.screen);
    }
    return a;
  });
  const w = window.innerWidth;
  const h = window.innerHeight;
  stats.screen = { width: w, height: h, free: [0, 0, w - panelWidth, h], body, garment };
  stats.camera = {
    target: orbit.target.toArray().map((v) => +v.toFixed(3)),
    distance: +camera.position.distanceTo(orbit.target).toFixed(3),
    lag: +orbit.target.distanceTo(follow.goal).toFixed(3),
  };
  const t = stats.track;
  const inside = (b) => !b || (b[0] >= 0 && b[1] >= 0 && b[2] <= w && b[3] <= h);
  if (stats.avatars.some((a) => a.screen.garment)) {
    t.renders++;
    if (!inside(body) || !inside(garment)) t.outside++;
  }
  for (const a of stats.avatars) {
    const g = a.world.garment;
    const b = a.world.body;
    if (!g) continue;
    for (let k = 0; k < 3; k++) t.garment_excess = Math.max(t.garment_excess, b[k] - g[k], g[k + 3] - b[k + 3]);
  }
}

// the labels just over the avatars' heads (side by side only), from the
// on-screen boxes measureAll just found
function placeLabels() {
  slots.forEach((s, i) => {
    const box = stats.avatars[i] && stats.avatars[i].screen.body;
    s.label.hidden = slots.length < 2 || !s.mesh || !s.mesh.visible || !box || !Number.isFinite(box[1]);
    if (!s.label.hidden) s.label.style.transform = `translate(-50%, -100%) translate(${(box[0] + box[2]) / 2}px, ${box[1] - 6}px)`;
  });
}

let renderCount = 0;
let renderT0 = performance.now();
let lastRender = performance.now();
function animate(now) {
  const dt = Math.min(0.5, Math.max(0, (now - lastRender) / 1000));
  lastRender = now;
  const k = follow.snap ? 1 : 1 - Math.exp(-dt / FOLLOW_TAU);
  follow.snap = false;
  step.copy(follow.goal).sub(orbit.target).multiplyScalar(k);
  orbit.target.add(step);
  camera.position.add(step);
  ground.position.x = Math.round(orbit.target.x / GRID_CELL) * GRID_CELL;
  ground.position.z = Math.round(orbit.target.z / GRID_CELL) * GRID_CELL;
  orbit.update();
  renderer.render(scene, camera);
  renderCount++;
  measureAll();
  placeLabels();
}

// ---- state ----
let model = null;
let client = null;
let fps = 30;
let frames = [];
let clipIndex = 0;
let clipSeamless = true;
let pendingCut = null; // 'loop' | 'clip' | 'stall': the next pose sent is a cut (reset: true)
let playing = true;
let avatarSeq = 0; // avatar keys: 1, 2, ... one per (re)open
let slots = [];
const byAvatar = new Map();
let generation = 0; // bumped by every reopen: answers for older avatars are ignored
let seq = 0;
let sentCount = 0;
let playT0 = 0;
let lastFrameAt = 0;
let droppedBefore = 0;
let lateral = new THREE.Vector3(1, 0, 0); // the side-by-side row's direction
const sentPoses = new Array(RING); // seq % RING → {seq, pose, trans, index (in the clip), cut}

// The modes the server runs a garment in: /v1/model's garment_modes (a garment
// added without a trained network has lbs and physics, not neural); a server
// without garment_modes runs every garment in every mode it lists.
function offered(garment = $('garment').value) {
  const all = model.modes || [];
  const own = model.garment_modes && model.garment_modes[garment];
  return own ? all.filter((m) => own.includes(m)) : all;
}

// the physics switch and the side-by-side row follow the garment chosen
function showModes() {
  const modes = offered();
  $('physics-row').hidden = !modes.includes('physics');
  if (!modes.includes('physics')) $('physics').checked = false;
  const compareModes = ['neural', 'lbs', 'physics'].filter((m) => modes.includes(m));
  $('compare-row').hidden = compareModes.length < 2;
  if (compareModes.length < 2) $('compare').checked = false;
  $('compare-modes').textContent = compareModes.join(' · ');
}

function choice() {
  const betas = [...document.querySelectorAll('#betas input')].map((i) => Number(i.value));
  const compare = $('compare').checked;
  const modes = offered();
  // one avatar: physics when switched on, else neural, else (no trained network) lbs
  const single = $('physics').checked && modes.includes('physics') ? 'physics' : modes.includes('neural') ? 'neural' : 'lbs';
  const shown = compare ? ['neural', 'lbs', 'physics'].filter((m) => modes.includes(m)) : [single];
  return { garment: $('garment').value, format: $('format').value, betas, modes: shown };
}

async function reopen() {
  const c = choice();
  $('physics').disabled = $('compare').checked; // side by side shows every mode
  const gen = ++generation;
  for (const s of slots) {
    client.closeAvatar(s.avatar);
    droppedBefore += s.dropped;
    s.dispose();
  }
  byAvatar.clear();
  const wasCompare = slots.length > 1;
  // side by side: a row across the view (the camera's right, level), centred on the first avatar's place
  if (c.modes.length > 1 && !wasCompare) {
    lateral.setFromMatrixColumn(camera.matrixWorld, 0).setY(0);
    if (lateral.lengthSq() < 1e-6) lateral.set(1, 0, 0);
    lateral.normalize();
  }
  slots = c.modes.map((mode, i) => {
    const offset = lateral.clone().multiplyScalar(SPACING * (i - (c.modes.length - 1) / 2));
    const s = new Slot(mode, ++avatarSeq, offset);
    byAvatar.set(s.avatar, s);
    return s;
  });
  if ((slots.length > 1) !== wasCompare) frameAvatars();
  stats.garment = c.garment;
  stats.format = c.format;
  loadBody(c.betas);
  await Promise.all(slots.map(async (s) => {
    try {
      const g = await garmentGeometry(c.garment);
      if (gen !== generation) return;
      s.setGeometry(g);
      const opened = await client.openAvatar({ avatar: s.avatar, garment: c.garment, betas: c.betas, format: c.format, mode: s.mode });
      if (gen !== generation) return;
      if (opened.vertices !== g.attributes.position.count) {
        throw new Error(`the stream has ${opened.vertices} vertices, the glTF ${g.attributes.position.count}`);
      }
      stats.vertices = opened.vertices;
      s.ready = true;
      lastFrameAt = performance.now();
      setMessage('app', null);
    } catch (e) {
      if (gen !== generation) return;
      stats.errors++;
      stats.last_error = `${e.code || 'error'}: ${e.message}`;
      setMessage('app', `cannot open ${c.garment} (${c.format}, ${s.mode}): ${e.message}`);
    }
  }));
}

function onFrame(f) {
  const s = byAvatar.get(f.avatar);
  if (!s || !s.geometry) return;
  const attr = s.geometry.attributes.position;
  if (f.count !== attr.count) return;
  attr.array.set(f.positions);
  attr.needsUpdate = true;
  s.geometry.computeVertexNormals();
  s.mesh.visible = true;
  const sent = sentPoses[f.seq % RING];
  if (sent) s.body.setPose(sent.pose, sent.trans);
  if (s === slots[0] && sent) {
    // a cut shown (this frame's pose, or one the server dropped before it): the camera jumps too
    for (let q = Math.max(s.shownSeq + 1, f.seq - RING + 1); q <= f.seq; q++) {
      const e = sentPoses[q % RING];
      if (!e || e.seq !== q || !e.cut) continue;
      follow.snap = true;
      if (e.cut === 'loop') stats.loops++;
    }
    const J0 = s.body.J || [0, 0.93, 0];
    follow.goal.set(J0[0] + sent.trans[0], J0[1] + sent.trans[1], J0[2] + sent.trans[2]);
    stats.clip_frame = sent.index;
  }
  s.shownSeq = f.seq;
  s.frames++;
  // the server's count is per connection: after a reconnect it starts again
  if (f.dropped < s.serverDropped) s.droppedEarlier += s.serverDropped;
  s.serverDropped = f.dropped;
  s.dropped = s.droppedEarlier + f.dropped;
  const now = performance.now();
  const i = samples.n % RING;
  samples.t[i] = now;
  samples.rtt[i] = f.rtt ?? NaN; // a pose sent before a reconnect has no send time here
  samples.srv[i] = f.serverMs;
  samples.n++;
  stats.frames++;
  stats.bytes = f.bytes;
  stats.dropped = droppedBefore + slots.reduce((n, x) => n + x.dropped, 0);
  lastFrameAt = now;
  if (stats.late) {
    stats.late = false;
    setMessage('late', null);
  }
}

function setClip(name) {
  frames = clipFrames(name, fps);
  clipSeamless = seamless(frames);
  clipIndex = 0;
  pendingCut = seq > 0 ? 'clip' : null;
  stats.clip = name;
  stats.clip_label = CLIPS[name].label;
  stats.clip_frames = frames.length;
  $('clip').value = name;
}

async function pickClip(name) {
  try {
    if (CLIPS[name].motion && !CLIPS[name].frames) await loadMotion(name, authHeaders);
    setClip(name);
    setMessage('app', null);
  } catch (e) {
    $('clip').value = stats.clip;
    setMessage('app', `cannot play ${CLIPS[name].label}: ${e.message}`);
  }
}

function tick() {
  const now = performance.now();
  const ready = slots.filter((s) => s.ready);
  if (!playing || !ready.length || client.state !== 'open') {
    playT0 = now;
    sentCount = 0;
    return;
  }
  const due = Math.floor(((now - playT0) * fps) / 1000);
  // behind (a slow render, a background tab's 1 s timers): send them all,
  // the server keeps the newest; by more than 2 s (a tab stalled longer): no
  // burst, the clip jumps to where it should be and that pose is a cut (a
  // loop cut if it passed the wrap)
  if (due - sentCount > 2 * fps) {
    const skip = due - 1 - sentCount;
    const wrapped = clipIndex + skip >= frames.length;
    clipIndex = (clipIndex + skip) % frames.length;
    pendingCut = wrapped || pendingCut === 'loop' ? 'loop' : pendingCut || 'stall';
    sentCount = due - 1;
  }
  while (sentCount < due) {
    const index = clipIndex;
    const fr = frames[index];
    clipIndex = (index + 1) % frames.length;
    seq++;
    stats.seq_sent = seq;
    const cut = pendingCut;
    pendingCut = clipIndex === 0 && !clipSeamless ? 'loop' : null;
    sentPoses[seq % RING] = { seq, pose: fr.pose, trans: fr.trans, index, cut };
    if (cut) {
      stats.resets_sent++;
      if (cut === 'loop') stats.sent.loops++;
    }
    stats.sent.clip_frame = index;
    for (const s of ready) client.sendPose(s.avatar, seq, fr.pose, fr.trans, cut ? { reset: true } : undefined);
    sentCount++;
  }
}

function watch() {
  const now = performance.now();
  updateStats(now);
  stats.render_fps = (renderCount * 1000) / Math.max(1, now - renderT0);
  renderCount = 0;
  renderT0 = now;
  const lateMs = Math.max(500, 10000 / fps);
  if (playing && slots.some((s) => s.ready) && client.state === 'open' && now - lastFrameAt > lateMs) {
    stats.late = true;
    setMessage('late', `frame late: nothing for ${((now - lastFrameAt) / 1000).toFixed(1)} s`, 'warn');
  }
  renderOverlay();
}

// ---- motion files: dropped on the page or picked ----
async function playFile(file) {
  setMessage('app', `converting ${file.name}…`, 'warn');
  try {
    const key = await convertMotionFile(file.name, await file.arrayBuffer(), authHeaders);
    addClipOption(key);
    setClip(key);
    setMessage('app', null);
  } catch (e) {
    stats.errors++;
    stats.last_error = `motion file: ${e.message}`;
    setMessage('app', `cannot play ${e.message}`);
  }
}

function addClipOption(key) {
  const group = CLIPS[key].group || 'procedural';
  let og = [...$('clip').querySelectorAll('optgroup')].find((g) => g.label === group);
  if (!og) {
    og = Object.assign(document.createElement('optgroup'), { label: group });
    $('clip').append(og);
  }
  og.append(new Option(CLIPS[key].label, key));
}

// ---- controls ----
function fillSelect(el, values, labels, chosen) {
  el.replaceChildren(...values.map((v, i) => new Option(labels ? labels[i] : v, v)));
  if (chosen && values.includes(chosen)) el.value = chosen;
}

function buildControls() {
  const cfg = model.config;
  fillSelect($('garment'), model.garments.map((g) => g.name), null, params.get('garment'));
  $('clip').replaceChildren();
  for (const key of Object.keys(CLIPS)) addClipOption(key);
  const wanted = params.get('clip');
  $('clip').value = wanted && CLIPS[wanted] ? wanted : CLIPS['shipped-walk'] ? 'shipped-walk' : 'walk';
  const formats = (model.formats || FORMATS).filter((f) => FORMATS.includes(f));
  fillSelect($('format'), formats, null, params.get('format') || (formats.includes('meshopt') ? 'meshopt' : formats[0]));
  $('compare').checked = params.get('compare') === '1';
  showModes();
  const [lo, hi] = cfg.beta_range;
  const box = $('betas');
  box.replaceChildren();
  let debounce = null;
  for (let i = 0; i < cfg.betas; i++) {
    const label = document.createElement('label');
    const input = Object.assign(document.createElement('input'), { type: 'range', min: lo, max: hi, step: 0.05, value: 0 });
    const out = document.createElement('output');
    out.textContent = '0.00';
    input.addEventListener('input', () => {
      out.textContent = Number(input.value).toFixed(2);
      clearTimeout(debounce);
      debounce = setTimeout(reopen, 250);
    });
    label.append(`β${i}`, input, out);
    box.append(label);
  }
  $('betas-reset').addEventListener('click', () => {
    for (const input of box.querySelectorAll('input')) input.value = 0;
    for (const out of box.querySelectorAll('output')) out.textContent = '0.00';
    reopen();
  });
  $('garment').addEventListener('change', () => {
    showModes();
    reopen();
  });
  $('format').addEventListener('change', reopen);
  $('physics').addEventListener('change', reopen);
  $('compare').addEventListener('change', reopen);
  $('clip').addEventListener('change', () => pickClip($('clip').value));
  $('play').addEventListener('click', () => {
    playing = !playing;
    $('play').textContent = playing ? 'pause' : 'play';
    setMessage('late', null);
    stats.late = false;
  });
  $('motion-file').addEventListener('click', () => $('motion-input').click());
  $('motion-input').addEventListener('change', () => {
    const f = $('motion-input').files[0];
    $('motion-input').value = '';
    if (f) playFile(f);
  });
  // a motion file dropped anywhere on the page
  let dragDepth = 0;
  const hint = (on) => {
    $('drop-hint').hidden = !on;
  };
  window.addEventListener('dragenter', (e) => {
    if (![...(e.dataTransfer?.types || [])].includes('Files')) return;
    dragDepth++;
    hint(true);
  });
  window.addEventListener('dragleave', () => {
    dragDepth = Math.max(0, dragDepth - 1);
    if (!dragDepth) hint(false);
  });
  window.addEventListener('dragover', (e) => e.preventDefault());
  window.addEventListener('drop', (e) => {
    e.preventDefault();
    dragDepth = 0;
    hint(false);
    const f = e.dataTransfer?.files?.[0];
    if (f) playFile(f);
  });
}

async function fetchModel() {
  for (let attempt = 0; ; attempt++) {
    try {
      const res = await fetch('/v1/model', { headers: authHeaders });
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      return await res.json();
    } catch (e) {
      stats.state = 'unreachable';
      setMessage('conn', `Drape server unreachable (${location.host}): ${e.message}; retrying`);
      await new Promise((r) => setTimeout(r, Math.min(5000, 500 * 2 ** attempt)));
    }
  }
}

async function main() {
  layout();
  frameAvatars();
  renderer.setAnimationLoop(animate);
  await loadShippedClips();
  model = await fetchModel();
  setMessage('conn', null);
  fps = model.config.fps || 30;
  await loadServerMotions(authHeaders);
  await decoderReady;
  buildControls();
  await pickClip($('clip').value);
  client = connect(wsUrl, {
    onFrame,
    // after a reconnect the client re-opens the avatars by itself
    onOpened: (m) => {
      const s = byAvatar.get(m.avatar);
      if (s && s.geometry && m.vertices === s.geometry.attributes.position.count) {
        s.ready = true;
        lastFrameAt = performance.now();
        setMessage('app', null);
      }
    },
    onError: (e) => {
      // the close (or a late pose) of an avatar this page already replaced,
      // e.g. sent while the socket was reconnecting: nothing to show
      if (e.code === 'not_open' && !byAvatar.has(e.avatar)) {
        stats.stale = (stats.stale || 0) + 1;
        return;
      }
      // a re-open after a reconnect failed: the client forgot the avatar, so
      // its poses would only draw not_open; the error stays on screen
      if (e.openFailed && byAvatar.has(e.avatar)) byAvatar.get(e.avatar).ready = false;
      stats.errors++;
      stats.last_error = `${e.code}: ${e.message}`;
      if (e.code !== 'closed' && e.code !== 'unreachable') setMessage('app', `server: ${e.code}: ${e.message}`);
    },
    onStatus: (s, info) => {
      stats.state = s;
      if (s === 'open') setMessage('conn', null);
      else if (s === 'reconnecting') {
        const why = info.error.code === 'unreachable' ? 'Drape server unreachable' : `connection closed (code ${info.error.closeCode})`;
        setMessage('conn', `${why}; reconnecting in ${(info.delayMs / 1000).toFixed(1)} s`);
      } else if (s === 'closed') setMessage('conn', 'connection closed');
    },
  });
  await reopen();
  setInterval(tick, Math.max(4, 500 / fps));
  setInterval(watch, 250);
}

main().catch((e) => {
  stats.errors++;
  stats.last_error = e.message;
  setMessage('app', `viewer failed: ${e.message}`);
  console.error(e);
});
