// The Drape viewer: a garment streamed from draped on the server's body
// (GET /v1/body), with three.js. Served by draped at / (--web-root web).
// docs/viewer.md describes the choices (the body, the clips, the stats).
// URL parameters (all optional): garment, clip, format, token (API key).
import * as THREE from 'three';
import { OrbitControls } from 'three/addons/controls/OrbitControls.js';
import { GLTFLoader } from 'three/addons/loaders/GLTFLoader.js';
import { connect, FORMATS, ready as decoderReady } from './drape-client.js';
import { CLIPS, clipFrames, loadShippedClips } from './motion.js';
import { ServerBody, StandInBody } from './body.js';

const params = new URLSearchParams(location.search);
const token = params.get('token');
const authHeaders = token ? { Authorization: `Bearer ${token}` } : {};
const wsUrl = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/v1/stream` +
  (token ? `?token=${encodeURIComponent(token)}` : '');

const WINDOW_MS = 5000; // stats window
const RING = 1024; // stats samples and sent poses remembered
const $ = (id) => document.getElementById(id);

// ---- the numbers, on screen and on window.drapeStats ----
const stats = {
  frames: 0, fps: 0, render_fps: 0, rtt_p50: 0, rtt_p99: 0, server_p50: 0, server_p99: 0,
  bytes: 0, dropped: 0, errors: 0, late: false, state: 'starting', last_error: '',
  garment: '', format: '', clip: '', vertices: 0, body: 'stand-in',
};
window.drapeStats = stats;
const samples = { t: new Float64Array(RING), rtt: new Float64Array(RING), srv: new Float64Array(RING), n: 0 };
const scratch = new Float64Array(RING);

function percentiles(arr, from, count) {
  // arr samples at ring indices from..from+count-1; returns [p50, p99] (nearest rank)
  if (!count) return [0, 0];
  for (let i = 0; i < count; i++) scratch[i] = arr[(from + i) % RING];
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
  $('overlay').textContent = [
    `${stats.garment || '-'} · ${stats.format || '-'} · ${stats.clip || '-'} · ${stats.vertices} vertices`,
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
const renderer = new THREE.WebGLRenderer({ antialias: true });
renderer.setPixelRatio(Math.min(2, window.devicePixelRatio || 1));
renderer.setSize(window.innerWidth, window.innerHeight);
$('view').appendChild(renderer.domElement);
const scene = new THREE.Scene();
scene.background = new THREE.Color(0x1d2027);
const camera = new THREE.PerspectiveCamera(40, window.innerWidth / window.innerHeight, 0.05, 50);
camera.position.set(1.2, 1.3, 2.6);
const orbit = new OrbitControls(camera, renderer.domElement);
orbit.target.set(0, 0.95, 0);
orbit.update();
scene.add(new THREE.HemisphereLight(0xdde4ff, 0x3a3228, 1.1));
const sun = new THREE.DirectionalLight(0xffffff, 1.8);
sun.position.set(2, 4, 3);
scene.add(sun);
const grid = new THREE.GridHelper(4, 16, 0x444a55, 0x30343c);
scene.add(grid);
// The body: the server's body model for the chosen betas (GET /v1/body),
// posed here with each frame's pose; the stand-in figure until it is loaded
// or if the server has no body route.
const bodyMaterial = new THREE.MeshStandardMaterial({ color: 0xc9b8a6, roughness: 0.8 });
let body = new StandInBody(bodyMaterial);
scene.add(body.group);
let bodyBetas = '';
async function loadBody(betas) {
  const key = betas.join(',');
  if (key === bodyBetas) return;
  bodyBetas = key;
  try {
    const b = await ServerBody.load(location.origin, betas, bodyMaterial);
    if (bodyBetas !== key) return;
    scene.remove(body.group);
    body = b;
    scene.add(body.group);
    stats.body = 'server';
  } catch (e) {
    stats.body = 'stand-in';
  }
}
const garmentMaterial = new THREE.MeshStandardMaterial({ color: 0x2f6fe0, roughness: 0.65, side: THREE.DoubleSide });
let garmentMesh = null;
const glbCache = new Map();

window.addEventListener('resize', () => {
  camera.aspect = window.innerWidth / window.innerHeight;
  camera.updateProjectionMatrix();
  renderer.setSize(window.innerWidth, window.innerHeight);
});

let renderCount = 0;
let renderT0 = performance.now();
renderer.setAnimationLoop(() => {
  orbit.update();
  renderer.render(scene, camera);
  renderCount++;
});

async function loadGarment(name) {
  if (!glbCache.has(name)) {
    const res = await fetch(`/v1/garments/${encodeURIComponent(name)}?format=glb`, { headers: authHeaders });
    if (!res.ok) throw new Error(`GET /v1/garments/${name}: HTTP ${res.status}`);
    const gltf = await new GLTFLoader().parseAsync(await res.arrayBuffer(), '');
    let geometry = null;
    gltf.scene.traverse((o) => {
      if (o.isMesh && !geometry) geometry = o.geometry;
    });
    if (!geometry) throw new Error(`garment ${name}: no mesh in the glTF`);
    geometry.attributes.position.setUsage(THREE.DynamicDrawUsage);
    glbCache.set(name, geometry);
  }
  const geometry = glbCache.get(name);
  if (!garmentMesh) {
    garmentMesh = new THREE.Mesh(geometry, garmentMaterial);
    garmentMesh.frustumCulled = false; // the vertices move every frame
    scene.add(garmentMesh);
  } else {
    garmentMesh.geometry = geometry;
  }
  return geometry;
}

// ---- state ----
let model = null;
let client = null;
let fps = 30;
let frames = [];
let clipIndex = 0;
let playing = true;
let avatarSeq = 0; // avatar keys: 1, 2, ... one per (re)open
let current = null; // {avatar, geometry, ready}
let seq = 0;
let sentCount = 0;
let playT0 = 0;
let lastFrameAt = 0;
let droppedBefore = 0;
const sentPoses = new Array(RING); // seq % RING → the clip frame sent with it

function choice() {
  const betas = [...document.querySelectorAll('#betas input')].map((i) => Number(i.value));
  return {
    garment: $('garment').value,
    format: $('format').value,
    mode: $('physics').checked ? 'physics' : 'neural',
    betas,
  };
}

async function reopen() {
  const c = choice();
  if (current) {
    client.closeAvatar(current.avatar);
    droppedBefore = stats.dropped;
  }
  const avatar = ++avatarSeq;
  current = { avatar, geometry: null, ready: false };
  const mine = current;
  stats.garment = c.garment;
  stats.format = c.format;
  loadBody(c.betas);
  try {
    const geometry = await loadGarment(c.garment);
    if (current !== mine) return;
    mine.geometry = geometry;
    const opened = await client.openAvatar({ avatar, ...c });
    if (current !== mine) return;
    if (opened.vertices !== geometry.attributes.position.count) {
      throw new Error(`the stream has ${opened.vertices} vertices, the glTF ${geometry.attributes.position.count}`);
    }
    stats.vertices = opened.vertices;
    mine.ready = true;
    lastFrameAt = performance.now();
    setMessage('app', null);
  } catch (e) {
    if (current !== mine) return;
    stats.errors++;
    stats.last_error = `${e.code || 'error'}: ${e.message}`;
    setMessage('app', `cannot open ${c.garment} (${c.format}): ${e.message}`);
  }
}

function onFrame(f) {
  if (!current || f.avatar !== current.avatar || !current.geometry) return;
  const attr = current.geometry.attributes.position;
  if (f.count !== attr.count) return;
  attr.array.set(f.positions);
  attr.needsUpdate = true;
  current.geometry.computeVertexNormals();
  const sent = sentPoses[f.seq % RING];
  if (sent) body.setPose(sent.pose, sent.trans);
  const now = performance.now();
  const i = samples.n % RING;
  samples.t[i] = now;
  samples.rtt[i] = f.rtt ?? 0;
  samples.srv[i] = f.serverMs;
  samples.n++;
  stats.frames++;
  stats.bytes = f.bytes;
  stats.dropped = droppedBefore + f.dropped;
  lastFrameAt = now;
  if (stats.late) {
    stats.late = false;
    setMessage('late', null);
  }
}

function setClip(name) {
  frames = clipFrames(name, fps);
  clipIndex = 0;
  stats.clip = name;
}

function tick() {
  const now = performance.now();
  if (!playing || !current || !current.ready || client.state !== 'open') {
    playT0 = now;
    sentCount = 0;
    return;
  }
  const due = Math.floor(((now - playT0) * fps) / 1000);
  if (due - sentCount > 3) sentCount = due - 1; // a stalled tab: skip ahead, no burst
  while (sentCount < due) {
    const fr = frames[clipIndex];
    clipIndex = (clipIndex + 1) % frames.length;
    seq++;
    sentPoses[seq % RING] = fr;
    client.sendPose(current.avatar, seq, fr.pose, fr.trans);
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
  if (playing && current && current.ready && client.state === 'open' && now - lastFrameAt > lateMs) {
    stats.late = true;
    setMessage('late', `frame late: nothing for ${((now - lastFrameAt) / 1000).toFixed(1)} s`, 'warn');
  }
  renderOverlay();
}

// ---- controls ----
function fillSelect(el, values, labels, chosen) {
  el.replaceChildren(...values.map((v, i) => new Option(labels ? labels[i] : v, v)));
  if (chosen && values.includes(chosen)) el.value = chosen;
}

function buildControls() {
  const cfg = model.config;
  fillSelect($('garment'), model.garments.map((g) => g.name), null, params.get('garment'));
  const clips = Object.keys(CLIPS);
  fillSelect($('clip'), clips, clips.map((c) => CLIPS[c].label), params.get('clip') || (CLIPS['shipped-walk'] ? 'shipped-walk' : 'walk'));
  const formats = (model.formats || FORMATS).filter((f) => FORMATS.includes(f));
  fillSelect($('format'), formats, null, params.get('format') || (formats.includes('meshopt') ? 'meshopt' : formats[0]));
  $('physics-row').hidden = !(model.modes || []).includes('physics');
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
  $('garment').addEventListener('change', reopen);
  $('format').addEventListener('change', reopen);
  $('physics').addEventListener('change', reopen);
  $('clip').addEventListener('change', () => setClip($('clip').value));
  $('play').addEventListener('click', () => {
    playing = !playing;
    $('play').textContent = playing ? 'pause' : 'play';
    setMessage('late', null);
    stats.late = false;
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
  await loadShippedClips();
  model = await fetchModel();
  setMessage('conn', null);
  fps = model.config.fps || 30;
  await decoderReady;
  buildControls();
  setClip($('clip').value);
  client = connect(wsUrl, {
    onFrame,
    // after a reconnect the client re-opens the avatar by itself
    onOpened: (m) => {
      if (current && m.avatar === current.avatar && current.geometry && m.vertices === current.geometry.attributes.position.count) {
        current.ready = true;
        lastFrameAt = performance.now();
        setMessage('app', null);
      }
    },
    onError: (e) => {
      // the close (or a late pose) of an avatar this page already replaced,
      // e.g. sent while the socket was reconnecting: nothing to show
      if (e.code === 'not_open' && (!current || e.avatar !== current.avatar)) {
        stats.stale = (stats.stale || 0) + 1;
        return;
      }
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
