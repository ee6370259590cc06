// Motion clips for the viewer: the clips shipped in web/clips/ (recorded from
// train/motions.py, loaded by loadShippedClips) and a few loops made here in
// JavaScript from sines, for when those are absent (docs/viewer.md). A clip is a loop of frames at the model's
// fps; each frame is {pose: Float32Array(72) (24 SMPL joints × axis-angle,
// local rotations), trans: Float32Array(3)}. The body faces +z, y up, left on
// +x (train/assets.py).

export const J = {
  pelvis: 0, lHip: 1, rHip: 2, spine1: 3, lKnee: 4, rKnee: 5, spine2: 6, lAnkle: 7, rAnkle: 8,
  spine3: 9, lFoot: 10, rFoot: 11, neck: 12, lCollar: 13, rCollar: 14, head: 15,
  lShoulder: 16, rShoulder: 17, lElbow: 18, rElbow: 19, lWrist: 20, rWrist: 21, lHand: 22, rHand: 23,
};

import { qFromAxisAngle, qSlerp, qToAxisAngle, turnAngle } from './rig.js';

const TAU = 2 * Math.PI;

function set(pose, joint, x, y, z) {
  pose[3 * joint] = x;
  pose[3 * joint + 1] = y;
  pose[3 * joint + 2] = z;
}

// arms hanging (the rest pose is a T-pose): shoulders about z; swing about y
function arms(pose, lift, swingL, swingR) {
  set(pose, J.lShoulder, 0, swingL, -1.25 + lift);
  set(pose, J.rShoulder, 0, swingR, 1.25 - lift);
}

// Each clip: seconds per loop and a function of the phase (0..1) filling pose/trans.
export const CLIPS = {
  walk: {
    seconds: 1.2,
    label: 'walk (in place)',
    fill(ph, pose, trans) {
      const s = Math.sin(TAU * ph);
      const c = Math.cos(TAU * ph);
      // hip flexion is a negative x rotation (leg forward, +z); knees bend with positive x
      set(pose, J.lHip, -0.45 * s, 0, 0);
      set(pose, J.rHip, 0.45 * s, 0, 0);
      set(pose, J.lKnee, 0.55 * Math.max(0, c) + 0.1, 0, 0);
      set(pose, J.rKnee, 0.55 * Math.max(0, -c) + 0.1, 0, 0);
      set(pose, J.lAnkle, -0.1 * s, 0, 0);
      set(pose, J.rAnkle, 0.1 * s, 0, 0);
      set(pose, J.pelvis, 0, 0.12 * s, 0);
      set(pose, J.spine2, 0, -0.12 * s, 0);
      arms(pose, 0, 0.35 * s, 0.35 * s);
      set(pose, J.lElbow, 0, 0.25, 0);
      set(pose, J.rElbow, 0, -0.25, 0);
      trans[0] = 0;
      trans[1] = 0.015 * Math.abs(Math.sin(TAU * ph)) - 0.01;
      trans[2] = 0;
    },
  },
  sway: {
    seconds: 2.4,
    label: 'sway (hips side to side)',
    fill(ph, pose, trans) {
      const s = Math.sin(TAU * ph);
      set(pose, J.pelvis, 0, 0.2 * Math.sin(2 * TAU * ph), 0.12 * s);
      set(pose, J.lHip, 0, 0, -0.12 * s);
      set(pose, J.rHip, 0, 0, -0.12 * s);
      set(pose, J.spine1, 0, 0, -0.08 * s);
      set(pose, J.spine2, 0, 0, -0.05 * s);
      arms(pose, 0.1, 0, 0);
      set(pose, J.lElbow, 0, 0.4, 0);
      set(pose, J.rElbow, 0, -0.4, 0);
      trans[0] = 0.06 * s;
      trans[1] = 0;
      trans[2] = 0;
    },
  },
  arms: {
    seconds: 3,
    label: 'arms (raise and lower)',
    fill(ph, pose, trans) {
      const up = 0.5 - 0.5 * Math.cos(TAU * ph); // 0 down .. 1 up
      arms(pose, 1.6 * up, 0, 0);
      set(pose, J.lElbow, 0, 0.9 * Math.sin(Math.PI * up), 0);
      set(pose, J.rElbow, 0, -0.9 * Math.sin(Math.PI * up), 0);
      set(pose, J.spine3, -0.08 * up, 0, 0);
      set(pose, J.lKnee, 0.15 * up, 0, 0);
      set(pose, J.rKnee, 0.15 * up, 0, 0);
      set(pose, J.lHip, -0.08 * up, 0, 0);
      set(pose, J.rHip, -0.08 * up, 0, 0);
      trans[0] = 0;
      trans[1] = -0.01 * up;
      trans[2] = 0;
    },
  },
  rest: {
    seconds: 1,
    label: 'rest (T-pose)',
    fill() {},
  },
};

// The clips shipped with the model (web/clips/, written by train/motions.py,
// the generator the model was trained on): added to CLIPS as "<kind>"-named
// entries with their recorded frames. They play at their own fps and loop;
// a root that travels jumps back to the start at the loop (a cut: see seamless).
export async function loadShippedClips(base = 'clips/') {
  try {
    const index = await (await fetch(`${base}index.json`)).json();
    for (const c of index.clips) {
      const d = await (await fetch(base + c.file)).json();
      CLIPS[`shipped-${c.name}`] = { label: `${c.name.replace('_', ' ')} (shipped)`, seconds: d.frames / d.fps, data: d, group: 'shipped' };
    }
  } catch (e) {
    // no shipped clips: the procedural ones remain
  }
}

// The motion-capture clips the server ships (GET /v1/motions), added to
// CLIPS as "motion-<name>" entries whose frames are fetched when first played
// (loadMotion). Returns their names, or [] when the route is absent (404) or
// unreachable: the menu then just does not list them.
export async function loadServerMotions(headers = {}) {
  try {
    const r = await fetch('/v1/motions', { headers });
    if (!r.ok) return [];
    const { motions } = await r.json();
    const names = [];
    for (const m of motions || []) {
      if (typeof m.name !== 'string' || !m.name) continue;
      const key = `motion-${m.name}`;
      CLIPS[key] = { label: `${m.title || m.name} (capture)`, seconds: m.frames / m.fps, motion: m.name, group: 'motion capture' };
      names.push(key);
    }
    return names;
  } catch (e) {
    return [];
  }
}

// The error a motion route answered, as text: its JSON error's message, else the status.
async function routeError(r, what) {
  let msg = `HTTP ${r.status}`;
  try {
    const j = await r.json();
    if (j && j.error && j.error.message) msg = j.error.message;
  } catch (e) {
    // not JSON: the status says it
  }
  const err = new Error(`${what}: ${msg}`);
  err.status = r.status;
  return err;
}

// Fills CLIPS[key].frames for a server motion (GET /v1/motions/{name}).
export async function loadMotion(key, headers = {}) {
  const clip = CLIPS[key];
  if (!clip || clip.frames || !clip.motion) return;
  const r = await fetch(`/v1/motions/${encodeURIComponent(clip.motion)}`, { headers });
  if (!r.ok) throw await routeError(r, clip.motion);
  Object.assign(clip, motionFrames(await r.json(), clip.motion));
}

let files = 0;
// A motion file (BVH, NPZ: the bytes as they are) converted by the server
// (POST /v1/motions/convert), added to CLIPS; returns its key. A refused
// file throws an Error with the server's message (400 bad_motion, 413).
export async function convertMotionFile(name, bytes, headers = {}) {
  const r = await fetch('/v1/motions/convert', {
    method: 'POST',
    headers: { ...headers, 'Content-Type': 'application/octet-stream' },
    body: bytes,
  });
  if (!r.ok) throw await routeError(r, name);
  const key = `file-${++files}`;
  CLIPS[key] = { label: `${name} (file)`, group: 'your files', file: name, ...motionFrames(await r.json(), name) };
  return key;
}

// {fps, pose: [[72]...], trans: [[3]...]} → {fps, seconds, frames: [{pose, trans}]}, checked
function motionFrames(m, what) {
  const bad = (why) => {
    throw new Error(`${what}: ${why}`);
  };
  if (!m || !Array.isArray(m.pose) || !m.pose.length) bad('no poses');
  if (!(m.fps > 0 && m.fps <= 1000)) bad(`fps ${m.fps}`);
  if (m.trans && m.trans.length !== m.pose.length) bad(`${m.pose.length} poses but ${m.trans.length} translations`);
  const frames = m.pose.map((p, i) => {
    const t = m.trans ? m.trans[i] : [0, 0, 0];
    if (!Array.isArray(p) || p.length !== 72 || !Array.isArray(t) || t.length !== 3) bad(`frame ${i} is not 72 + 3 numbers`);
    const pose = Float32Array.from(p);
    const trans = Float32Array.from(t);
    if (!pose.every(Number.isFinite) || !trans.every(Number.isFinite)) bad(`frame ${i} holds a non-number`);
    return { pose, trans };
  });
  return { fps: m.fps, seconds: frames.length / m.fps, frames };
}

// frames recorded at `from` fps → at `to` fps: rotations slerped per joint, translations lerped
function resample(frames, from, to) {
  if (Math.abs(from - to) < 1e-6 || frames.length < 2) return frames;
  const n = Math.max(1, Math.floor(((frames.length - 1) * to) / from + 1e-9) + 1);
  const out = [];
  for (let i = 0; i < n; i++) {
    const x = (i * from) / to;
    const i0 = Math.min(frames.length - 1, Math.floor(x));
    const i1 = Math.min(frames.length - 1, i0 + 1);
    const f = x - i0;
    const a = frames[i0];
    const b = frames[i1];
    const pose = new Float32Array(72);
    for (let j = 0; j < 24; j++) {
      const q = qSlerp(qFromAxisAngle(a.pose[3 * j], a.pose[3 * j + 1], a.pose[3 * j + 2]),
        qFromAxisAngle(b.pose[3 * j], b.pose[3 * j + 1], b.pose[3 * j + 2]), f);
      qToAxisAngle(q, pose, 3 * j);
    }
    const trans = Float32Array.from([0, 1, 2], (k) => a.trans[k] + f * (b.trans[k] - a.trans[k]));
    out.push({ pose, trans });
  }
  return out;
}

// Whether a clip's loop is seamless: the step from its last frame to its
// first is no bigger than its steps inside (twice the largest, plus 1 cm of
// root and 0.05 rad of any joint). Loops that are not are cuts: the viewer
// sends their first pose again with reset: true.
export function seamless(frames) {
  if (frames.length < 2) return true;
  const step = (a, b) => {
    const root = Math.hypot(b.trans[0] - a.trans[0], b.trans[1] - a.trans[1], b.trans[2] - a.trans[2]);
    let turn = 0;
    for (let j = 0; j < 24; j++) turn = Math.max(turn, turnAngle(a.pose.subarray(3 * j, 3 * j + 3), b.pose.subarray(3 * j, 3 * j + 3)));
    return [root, turn];
  };
  let root = 0;
  let turn = 0;
  for (let i = 1; i < frames.length; i++) {
    const [r, t] = step(frames[i - 1], frames[i]);
    root = Math.max(root, r);
    turn = Math.max(turn, t);
  }
  const [r, t] = step(frames[frames.length - 1], frames[0]);
  return r <= 2 * root + 0.01 && t <= 2 * turn + 0.05;
}

// The frames of a clip at fps: an array of {pose, trans}, made once.
export function clipFrames(name, fps) {
  const clip = CLIPS[name];
  if (clip.frames) return resample(clip.frames, clip.fps, fps);
  if (clip.data) {
    const { data, frames: n } = clip.data;
    const out = [];
    for (let i = 0; i < n; i++) {
      const row = data.slice(75 * i, 75 * i + 75);
      out.push({ pose: Float32Array.from(row.slice(0, 72)), trans: Float32Array.from(row.slice(72, 75)) });
    }
    return resample(out, clip.data.fps || fps, fps);
  }
  const n = Math.max(1, Math.round(clip.seconds * fps));
  const frames = [];
  for (let i = 0; i < n; i++) {
    const pose = new Float32Array(72);
    const trans = new Float32Array(3);
    clip.fill(i / n, pose, trans);
    frames.push({ pose, trans });
  }
  return frames;
}
