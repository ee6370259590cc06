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
// a root that travels jumps back to the start at the loop.
export async function loadShippedClips(base = 'clips/') {
  try {
    const index = await (await fetch(`${base}index.json`)).json();
    for (const c of index.clips) {
      const d = await (await fetch(base + c.file)).json();
      CLIPS[`shipped-${c.name}`] = { label: `${c.name.replace('_', ' ')} (shipped)`, seconds: d.frames / d.fps, data: d };
    }
  } catch (e) {
    // no shipped clips: the procedural ones remain
  }
}

// The frames of a clip at fps: an array of {pose, trans}, made once.
export function clipFrames(name, fps) {
  const clip = CLIPS[name];
  if (clip.data) {
    const { data, frames: n } = clip.data;
    const out = [];
    for (let i = 0; i < n; i++) {
      const row = data.slice(75 * i, 75 * i + 75);
      out.push({ pose: Float32Array.from(row.slice(0, 72)), trans: Float32Array.from(row.slice(72, 75)) });
    }
    return out;
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
