// rig.js: SMPL's skeleton (joint names, parents, Drape's rest joints) and
// poseFromSkeleton, which reads a three.js Skeleton of another rig (Mixamo's
// built in) as SMPL poses ready for sendPose; also the quaternion helpers the
// motions use to resample. No three.js import: bones are read through their
// `name`, `matrixWorld.elements`, `updateWorldMatrix` and the skeleton's
// `bones`/`boneInverses`, so node and the browser share it with the client.
// docs/viewer.md ("Your own rig") says how the rest pose is handled.

export const SMPL_JOINTS = [
  'pelvis', 'left_hip', 'right_hip', 'spine1', 'left_knee', 'right_knee', 'spine2', 'left_ankle', 'right_ankle',
  'spine3', 'left_foot', 'right_foot', 'neck', 'left_collar', 'right_collar', 'head', 'left_shoulder',
  'right_shoulder', 'left_elbow', 'right_elbow', 'left_wrist', 'right_wrist', 'left_hand', 'right_hand',
];
export const PARENTS = [-1, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 9, 9, 12, 13, 14, 16, 17, 18, 19, 20, 21];

// Rest joints [24][3] of Drape's procedural body at betas = 0 (train/assets.py):
// metres, y up, facing +z, left on +x, feet on y = 0, arms out (T-pose).
const LEFT = {
  0: [0, 0.93, 0], 3: [0, 1.04, 0], 6: [0, 1.16, 0], 9: [0, 1.28, 0], 12: [0, 1.45, 0], 15: [0, 1.55, 0.01],
  1: [0.085, 0.86, 0], 4: [0.09, 0.49, 0], 7: [0.09, 0.08, 0], 10: [0.095, 0.03, 0.12],
  13: [0.07, 1.38, 0], 16: [0.17, 1.4, 0], 18: [0.43, 1.4, 0], 20: [0.68, 1.4, 0], 22: [0.77, 1.4, 0],
};
const MIRROR = { 1: 2, 4: 5, 7: 8, 10: 11, 13: 14, 16: 17, 18: 19, 20: 21, 22: 23 };
export const REST_JOINTS = (() => {
  const j = Array.from({ length: 24 }, () => [0, 0, 0]);
  for (const [k, p] of Object.entries(LEFT)) {
    j[k] = p.slice();
    if (MIRROR[k] !== undefined) j[MIRROR[k]] = [-p[0], p[1], p[2]];
  }
  return j;
})();

// Mixamo's bone names (without the "mixamorig:" prefix) for SMPL's joints.
// SMPL's hand joint sits at the knuckles: Mixamo's middle finger's first bone.
export const MIXAMO_MAP = {
  pelvis: 'Hips', left_hip: 'LeftUpLeg', right_hip: 'RightUpLeg', spine1: 'Spine', left_knee: 'LeftLeg',
  right_knee: 'RightLeg', spine2: 'Spine1', left_ankle: 'LeftFoot', right_ankle: 'RightFoot', spine3: 'Spine2',
  left_foot: 'LeftToeBase', right_foot: 'RightToeBase', neck: 'Neck', left_collar: 'LeftShoulder',
  right_collar: 'RightShoulder', head: 'Head', left_shoulder: 'LeftArm', right_shoulder: 'RightArm',
  left_elbow: 'LeftForeArm', right_elbow: 'RightForeArm', left_wrist: 'LeftHand', right_wrist: 'RightHand',
  left_hand: 'LeftHandMiddle1', right_hand: 'RightHandMiddle1',
};

// ---- quaternions: [x, y, z, w] arrays, float64 ----

export function qMul(a, b, out = [0, 0, 0, 1]) {
  const [ax, ay, az, aw] = a;
  const [bx, by, bz, bw] = b;
  out[0] = aw * bx + ax * bw + ay * bz - az * by;
  out[1] = aw * by - ax * bz + ay * bw + az * bx;
  out[2] = aw * bz + ax * by - ay * bx + az * bw;
  out[3] = aw * bw - ax * bx - ay * by - az * bz;
  return out;
}

export const qConj = (q) => [-q[0], -q[1], -q[2], q[3]];

export function qFromAxisAngle(x, y, z) {
  const a = Math.hypot(x, y, z);
  if (a < 1e-12) return [x / 2, y / 2, z / 2, 1];
  const s = Math.sin(a / 2) / a;
  return [x * s, y * s, z * s, Math.cos(a / 2)];
}

// the rotation vector (axis · angle, angle in [0, π]) into out[off..off+2]
export function qToAxisAngle(q, out, off = 0) {
  let [x, y, z, w] = q;
  if (w < 0) {
    x = -x; y = -y; z = -z; w = -w;
  }
  const s = Math.hypot(x, y, z);
  const k = s < 1e-12 ? 2 : (2 * Math.atan2(s, w)) / s;
  out[off] = x * k;
  out[off + 1] = y * k;
  out[off + 2] = z * k;
  return out;
}

export function qRotate(q, v) {
  const [x, y, z, w] = q;
  const [vx, vy, vz] = v;
  // t = 2 q×v; v' = v + w t + q×t
  const tx = 2 * (y * vz - z * vy);
  const ty = 2 * (z * vx - x * vz);
  const tz = 2 * (x * vy - y * vx);
  return [vx + w * tx + y * tz - z * ty, vy + w * ty + z * tx - x * tz, vz + w * tz + x * ty - y * tx];
}

// the rotation of a 3×3 matrix given as columns (unit, orthogonal) → quaternion
function qFromColumns(c0, c1, c2) {
  const m00 = c0[0], m10 = c0[1], m20 = c0[2];
  const m01 = c1[0], m11 = c1[1], m21 = c1[2];
  const m02 = c2[0], m12 = c2[1], m22 = c2[2];
  const tr = m00 + m11 + m22;
  let q;
  if (tr > 0) {
    const s = 0.5 / Math.sqrt(tr + 1);
    q = [(m21 - m12) * s, (m02 - m20) * s, (m10 - m01) * s, 0.25 / s];
  } else if (m00 > m11 && m00 > m22) {
    const s = 2 * Math.sqrt(1 + m00 - m11 - m22);
    q = [0.25 * s, (m01 + m10) / s, (m02 + m20) / s, (m21 - m12) / s];
  } else if (m11 > m22) {
    const s = 2 * Math.sqrt(1 + m11 - m00 - m22);
    q = [(m01 + m10) / s, 0.25 * s, (m12 + m21) / s, (m02 - m20) / s];
  } else {
    const s = 2 * Math.sqrt(1 + m22 - m00 - m11);
    q = [(m02 + m20) / s, (m12 + m21) / s, 0.25 * s, (m10 - m01) / s];
  }
  const n = Math.hypot(...q);
  return q.map((v) => v / n);
}

const unit = (v) => {
  const n = Math.hypot(v[0], v[1], v[2]);
  return [v[0] / n, v[1] / n, v[2] / n];
};
const cross = (a, b) => [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]];
const dot = (a, b) => a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
const sub = (a, b) => [a[0] - b[0], a[1] - b[1], a[2] - b[2]];

// The rotation (quaternion) and translation of a column-major 4×4 (three's
// Matrix4.elements); scale, uniform or not, is divided out of the columns.
export function matrixRotation(e) {
  return qFromColumns(unit([e[0], e[1], e[2]]), unit([e[4], e[5], e[6]]), unit([e[8], e[9], e[10]]));
}

// the shortest rotation taking direction u to direction v
export function qArc(u, v) {
  u = unit(u);
  v = unit(v);
  const d = dot(u, v);
  if (d < -1 + 1e-12) {
    // opposite: half a turn about any axis perpendicular to u
    const a = unit(Math.abs(u[0]) < 0.9 ? cross(u, [1, 0, 0]) : cross(u, [0, 1, 0]));
    return [a[0], a[1], a[2], 0];
  }
  const c = cross(u, v);
  const q = [c[0], c[1], c[2], 1 + d];
  const n = Math.hypot(...q);
  return q.map((x) => x / n);
}

// the rotation taking the orthonormal frame (a1, b1) to (a2, b2): a exactly, b as near as it can
function qFrames(a1, b1, a2, b2) {
  const frame = (a, b) => {
    const x = unit(a);
    const z = unit(cross(x, b));
    return [x, cross(z, x), z];
  };
  const [x1, y1, z1] = frame(a1, b1);
  const [x2, y2, z2] = frame(a2, b2);
  // R = F2 · F1ᵀ, column k of R = Σ_i F2[:,i] F1[k,i]
  const col = (k) => [0, 1, 2].map((r) => x2[r] * x1[k] + y2[r] * y1[k] + z2[r] * z1[k]);
  return qFromColumns(col(0), col(1), col(2));
}

export function qSlerp(a, b, t) {
  let d = dot(a, b) + a[3] * b[3];
  let bb = b;
  if (d < 0) {
    d = -d;
    bb = b.map((v) => -v);
  }
  if (d > 0.9995) {
    const q = a.map((v, i) => v + t * (bb[i] - v));
    const n = Math.hypot(...q);
    return q.map((v) => v / n);
  }
  const th = Math.acos(d);
  const s = Math.sin(th);
  const wa = Math.sin((1 - t) * th) / s;
  const wb = Math.sin(t * th) / s;
  return a.map((v, i) => wa * v + wb * bb[i]);
}

// The angle (rad) of the rotation between two axis-angle vectors.
export function turnAngle(a, b) {
  const q = qMul(qConj(qFromAxisAngle(a[0], a[1], a[2])), qFromAxisAngle(b[0], b[1], b[2]));
  return 2 * Math.atan2(Math.hypot(q[0], q[1], q[2]), Math.abs(q[3]));
}

// The global rotations of SMPL's joints for a pose (72 axis-angle).
export function globalRotations(pose) {
  const g = [];
  for (let j = 0; j < 24; j++) {
    const l = qFromAxisAngle(pose[3 * j], pose[3 * j + 1], pose[3 * j + 2]);
    g.push(PARENTS[j] < 0 ? l : qMul(g[PARENTS[j]], l));
  }
  return g;
}

// ---- a rig's skeleton → SMPL poses ----

const MIXAMO_PREFIX = /^mixamorig\d*[:_]?/i;

// the descendant of SMPL joint j whose direction from j is the bone's aim
// (spine3 aims at the neck, the pelvis is handled apart)
const AIM = (() => {
  const a = new Array(24).fill(-1);
  for (let j = 1; j < 24; j++) if (a[PARENTS[j]] < 0) a[PARENTS[j]] = j;
  a[9] = 12;
  return a;
})();

function worldMatrix(bone) {
  return bone.matrixWorld.elements;
}

function invertAffine(e) {
  // inverse of an affine 4×4 (column-major), general 3×3 part
  const a = e[0], b = e[4], c = e[8], d = e[1], f = e[5], g = e[9], h = e[2], i = e[6], k = e[10];
  const A = f * k - g * i, B = -(d * k - g * h), C = d * i - f * h;
  const det = a * A + b * B + c * C;
  if (!Number.isFinite(det) || Math.abs(det) < 1e-300) throw new Error('poseFromSkeleton: a bone inverse is singular');
  const inv = [
    A / det, B / det, C / det, 0,
    -(b * k - c * i) / det, (a * k - c * h) / det, -(a * i - b * h) / det, 0,
    (b * g - c * f) / det, -(a * g - c * d) / det, (a * f - b * d) / det, 0,
    0, 0, 0, 1,
  ];
  const t = [e[12], e[13], e[14]];
  for (let r = 0; r < 3; r++) inv[12 + r] = -(inv[r] * t[0] + inv[4 + r] * t[1] + inv[8 + r] * t[2]);
  return inv;
}

class Retarget {
  constructor(skeleton, map, opts) {
    this.skeleton = skeleton;
    this.map = map;
    this.opts = opts;
    const bones = skeleton.bones;
    const byName = new Map();
    for (let i = 0; i < bones.length; i++) {
      byName.set(bones[i].name, i);
      const bare = bones[i].name.replace(MIXAMO_PREFIX, '');
      if (!byName.has(bare)) byName.set(bare, i);
    }
    this.index = SMPL_JOINTS.map((name) => {
      const want = map[name];
      if (!want) return -1;
      const i = byName.get(want) ?? byName.get(want.replace(MIXAMO_PREFIX, ''));
      return i === undefined ? -1 : i;
    });
    for (const name of Object.keys(map)) {
      if (!SMPL_JOINTS.includes(name)) throw new Error(`poseFromSkeleton: '${name}' is not an SMPL joint (${SMPL_JOINTS.join(', ')})`);
    }
    if (this.index[0] < 0) throw new Error(`poseFromSkeleton: no bone '${map.pelvis}' for the pelvis`);
    this.rest = null; // per SMPL joint: the mapped bone's rest world rotation (or null)
    this.restRoot = null; // the hips bone's rest world position
    this.C = null; // per SMPL joint: the SMPL global rotation of the rig's rest pose
    this.scale = opts.scale ?? 1;
    if (!(this.scale > 0)) throw new Error('poseFromSkeleton: scale must be > 0');
    if (opts.restPose && opts.restPose.length !== 72) throw new Error('poseFromSkeleton: restPose must hold 72 numbers');
  }

  // the rest world matrices of the mapped bones: the bind pose, or this frame's
  captureRest() {
    const { skeleton, opts } = this;
    const mode = opts.rest ?? 'bind';
    if (mode !== 'bind' && mode !== 'first') throw new Error(`poseFromSkeleton: rest '${mode}' is not 'bind' or 'first'`);
    const mats = this.index.map((i) => {
      if (i < 0) return null;
      if (mode === 'first') return worldMatrix(skeleton.bones[i]).slice();
      // three's bone inverses are the inverses of the bones' world matrices at bind time
      const inv = skeleton.boneInverses && skeleton.boneInverses[i];
      if (!inv) throw new Error(`poseFromSkeleton: bone ${skeleton.bones[i].name} has no bone inverse (use rest: 'first')`);
      return invertAffine(inv.elements);
    });
    this.rest = mats.map((m) => (m ? matrixRotation(m) : null));
    this.restRoot = [mats[0][12], mats[0][13], mats[0][14]];
    const pos = mats.map((m) => (m ? [m[12], m[13], m[14]] : null));
    this.C = this.opts.restPose ? globalRotations(this.opts.restPose) : this.estimateRest(pos);
  }

  // The rig's rest as SMPL global rotations, from its bone directions: the
  // pelvis from two directions (up the spine, across the hips), every other
  // mapped joint by the shortest turn from where SMPL's T-pose puts its aim
  // (its parent's rest applied) to where the rig's rest has it. Exact for
  // rests that differ from the T-pose by swings (an A-pose, spread legs);
  // a twist about a bone is not seen: pass restPose then.
  estimateRest(pos) {
    const T = REST_JOINTS;
    const C = new Array(24);
    const up = [12, 9, 6, 3].find((j) => pos[j]);
    const upRig = up !== undefined ? sub(pos[up], pos[0]) : null;
    const upT = up !== undefined ? sub(T[up], T[0]) : null;
    if (upRig && pos[1] && pos[2]) C[0] = qFrames(upT, sub(T[1], T[2]), upRig, sub(pos[1], pos[2]));
    else if (upRig) C[0] = qArc(upT, upRig);
    else C[0] = [0, 0, 0, 1];
    for (let j = 1; j < 24; j++) {
      const cp = C[PARENTS[j]];
      C[j] = cp;
      if (!pos[j]) continue;
      // the nearest mapped joint down the aim chain
      let a = AIM[j];
      while (a >= 0 && !pos[a]) a = AIM[a];
      if (a < 0) continue;
      const predicted = qRotate(cp, sub(T[a], T[j]));
      C[j] = qMul(qArc(predicted, sub(pos[a], pos[j])), cp);
    }
    return C;
  }

  read(out) {
    const { skeleton } = this;
    for (const b of skeleton.bones) if (!b.parent || !b.parent.isBone) b.updateWorldMatrix?.(true, true);
    if (!this.C) this.captureRest();
    const G = new Array(24);
    for (let j = 0; j < 24; j++) {
      const i = this.index[j];
      const p = PARENTS[j];
      if (i < 0) {
        // unmapped: no rotation of its own; its children carry what the rig did
        G[j] = G[p];
        out.pose[3 * j] = out.pose[3 * j + 1] = out.pose[3 * j + 2] = 0;
        continue;
      }
      const q = matrixRotation(worldMatrix(skeleton.bones[i]));
      // the rig's turn from its rest, applied to the rest as SMPL sees it
      G[j] = qMul(qMul(q, qConj(this.rest[j])), this.C[j]);
      const local = p < 0 ? G[j] : qMul(qConj(G[p]), G[j]);
      qToAxisAngle(local, out.pose, 3 * j);
    }
    const e = worldMatrix(skeleton.bones[this.index[0]]);
    for (let k = 0; k < 3; k++) out.trans[k] = (e[12 + k] - this.restRoot[k]) * this.scale;
    return out;
  }
}

const cache = new WeakMap(); // skeleton → {r: its Retarget, sig, and the last call's map and options}

// The SMPL pose of a three.js Skeleton's current state, for sendPose:
// {pose: Float32Array(72), trans: Float32Array(3)} (or into opts.out).
//   skeleton: a THREE.Skeleton (or a SkinnedMesh: its skeleton); its bones'
//     world matrices are brought up to date here.
//   map: {smplJointName: boneName} (SMPL_JOINTS names); default MIXAMO_MAP. Bone
//     names match exactly or without a "mixamorig:" / "mixamorig" prefix.
//     Unmapped SMPL joints get zero rotation (their children take the turn);
//     unmapped bones between mapped ones are composed into the next mapped one.
//   opts.rest: 'bind' (default: the rest is the bind pose, the inverses of
//     skeleton.boneInverses) or 'first' (the bones' pose at the first call).
//   opts.restPose: the rig's rest as an SMPL pose (72); default: estimated
//     from the rest's bone directions (exact for swings such as an A-pose).
//   opts.scale: world units → metres for the translation (default 1).
// The rest and the bone lookup are computed at the first call for a skeleton
// and kept (another map, or other rest/restPose/scale, starts again; compared
// by content, so a map or options written inline in the call keep them).
export function poseFromSkeleton(skeleton, map = MIXAMO_MAP, opts = {}) {
  if (skeleton && skeleton.isSkinnedMesh) skeleton = skeleton.skeleton;
  if (!skeleton || !Array.isArray(skeleton.bones)) throw new Error('poseFromSkeleton: not a three.js Skeleton');
  map = map || MIXAMO_MAP;
  // the same objects as the last call: nothing to compare; others, by content
  let c = cache.get(skeleton);
  if (!c || c.map !== map || c.rest !== opts.rest || c.restPose !== opts.restPose || c.scale !== opts.scale) {
    const sig = JSON.stringify([map, opts.rest, opts.restPose ? Array.from(opts.restPose) : null, opts.scale]);
    if (!c || c.sig !== sig) c = { r: new Retarget(skeleton, map, opts), sig };
    Object.assign(c, { map, rest: opts.rest, restPose: opts.restPose, scale: opts.scale });
    cache.set(skeleton, c);
  }
  const out = opts.out ?? { pose: new Float32Array(72), trans: new Float32Array(3) };
  return c.r.read(out);
}
