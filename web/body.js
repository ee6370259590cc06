// The viewer's body (docs/viewer.md). ServerBody is the server's body model
// for the chosen betas (GET /v1/body: shaped rest mesh, joints, skinning
// weights), posed here every frame; it is what the page draws. StandInBody
// is the fallback until that route answers, or against a server without it:
// a capsule figure posed by forward kinematics of the 24 SMPL joints from
// the rest joints of Drape's procedural body at betas = 0 (train/assets.py),
// which follows the pose of the frame on screen but not the betas.
import * as THREE from 'three';

import { PARENTS, REST_JOINTS } from './rig.js';

export { PARENTS, REST_JOINTS };

// Forward kinematics of the 24 joints, into rot[j] (world quaternions) and
// pos[j] (world positions): R_j = R_parent · rodrigues(θ_j), p_j = p_parent +
// R_parent (J_j − J_parent), the root at J_0 + trans (as drape_fk). J: the
// rest joints, flat [72]; s: scratch {local, axis, tmp}.
export function forwardKinematics(pose, trans, J, parents, rot, pos, s) {
  for (let j = 0; j < 24; j++) {
    const x = pose[3 * j];
    const y = pose[3 * j + 1];
    const z = pose[3 * j + 2];
    const angle = Math.hypot(x, y, z);
    if (angle > 1e-12) s.local.setFromAxisAngle(s.axis.set(x / angle, y / angle, z / angle), angle);
    else s.local.identity();
    const p = parents[j];
    if (p < 0) {
      rot[j].copy(s.local);
      pos[j].set(J[0] + trans[0], J[1] + trans[1], J[2] + trans[2]);
    } else {
      s.tmp.set(J[3 * j] - J[3 * p], J[3 * j + 1] - J[3 * p + 1], J[3 * j + 2] - J[3 * p + 2]).applyQuaternion(rot[p]);
      pos[j].copy(pos[p]).add(s.tmp);
      rot[j].copy(rot[p]).multiply(s.local);
    }
  }
}

const REST_FLAT = Float32Array.from(REST_JOINTS.flat());

// capsule radius per bone (by child joint); 0: no capsule
const RADIUS = [0, 0.075, 0.075, 0.11, 0.055, 0.055, 0.12, 0.045, 0.045, 0.12, 0.035, 0.035,
  0.05, 0.06, 0.06, 0, 0.05, 0.05, 0.04, 0.04, 0.035, 0.035, 0.03, 0.03];

export class StandInBody {
  constructor(material) {
    this.material = material;
    this.group = new THREE.Group();
    this.bones = [];
    const up = new THREE.Vector3(0, 1, 0);
    for (let j = 1; j < 24; j++) {
      if (!RADIUS[j]) continue;
      const p = REST_JOINTS[PARENTS[j]];
      const c = REST_JOINTS[j];
      const len = Math.hypot(c[0] - p[0], c[1] - p[1], c[2] - p[2]);
      const mesh = new THREE.Mesh(new THREE.CapsuleGeometry(RADIUS[j], Math.max(0.001, len), 4, 12), material);
      this.group.add(mesh);
      this.bones.push({ j, mesh });
    }
    this.head = new THREE.Mesh(new THREE.SphereGeometry(0.1, 16, 12), material);
    this.group.add(this.head);
    // FK state, reused every frame
    this.rot = Array.from({ length: 24 }, () => new THREE.Quaternion());
    this.pos = Array.from({ length: 24 }, () => new THREE.Vector3());
    this.local = new THREE.Quaternion();
    this.axis = new THREE.Vector3();
    this.tmp = new THREE.Vector3();
    this.dir = new THREE.Vector3();
    this.up = up;
    this.setPose(new Float32Array(72), [0, 0, 0]);
  }

  clone() {
    return new StandInBody(this.material);
  }

  // frees its geometries (three.js keeps them on the GPU until then)
  dispose() {
    for (const { mesh } of this.bones) mesh.geometry.dispose();
    this.head.geometry.dispose();
  }

  // world bounding box of what is drawn, into box (a THREE.Box3)
  bounds(box) {
    return box.setFromObject(this.group);
  }

  // pose: 72 axis-angle (local, SMPL order); trans: 3
  setPose(pose, trans) {
    forwardKinematics(pose, trans, REST_FLAT, PARENTS, this.rot, this.pos, this);
    for (const { j, mesh } of this.bones) {
      const a = this.pos[PARENTS[j]];
      const b = this.pos[j];
      mesh.position.copy(a).add(b).multiplyScalar(0.5);
      this.dir.copy(b).sub(a).normalize();
      mesh.quaternion.setFromUnitVectors(this.up, this.dir);
    }
    this.head.position.copy(this.pos[15]);
    this.tmp.set(0, 0.05, 0).applyQuaternion(this.rot[15]);
    this.head.position.add(this.tmp);
  }
}

// The server's body model (GET /v1/body?betas=...): the shaped rest mesh,
// its joints and the 4 largest skinning weights per vertex, posed here by
// forward kinematics and linear blend skinning on the CPU, every frame, in
// place (a couple of thousand vertices: well under a millisecond). This is
// the body the garment was computed against, so it follows the betas too.
export class ServerBody {
  constructor(data, material) {
    this.data = data; // shared by the copies the side-by-side view makes (clone)
    this.n = data.vertices;
    this.rest = Float32Array.from(data.positions);
    this.J = Float32Array.from(data.joints);
    this.parents = data.parents;
    this.idx = Int32Array.from(data.skin_idx);
    this.w = Float32Array.from(data.skin_w);
    const g = new THREE.BufferGeometry();
    g.setAttribute('position', new THREE.BufferAttribute(Float32Array.from(this.rest), 3));
    g.setIndex(data.indices);
    g.computeVertexNormals();
    this.geometry = g;
    this.material = material;
    this.group = new THREE.Group();
    const mesh = new THREE.Mesh(g, material);
    mesh.frustumCulled = false; // its bounds are the rest pose's, and it walks away from them
    this.group.add(mesh);
    this.rot = Array.from({ length: 24 }, () => new THREE.Quaternion());
    this.pos = Array.from({ length: 24 }, () => new THREE.Vector3());
    this.A = new Float32Array(24 * 12); // per joint: R (row-major 3x3), then t
    this.m = new THREE.Matrix4();
    this.local = new THREE.Quaternion();
    this.axis = new THREE.Vector3();
    this.tmp = new THREE.Vector3();
  }

  // another body of the same shape, posed on its own
  clone() {
    return new ServerBody(this.data, this.material);
  }

  dispose() {
    this.geometry.dispose();
  }

  // headers: the API key's, when the server has keys (every /v1/ route needs one)
  static async load(baseUrl, betas, material, headers = {}) {
    const r = await fetch(`${baseUrl}/v1/body?betas=${betas.map((b) => b.toFixed(3)).join(',')}`, { headers });
    if (!r.ok) throw new Error(`GET /v1/body: HTTP ${r.status}`);
    return new ServerBody(await r.json(), material);
  }

  setPose(pose, trans) {
    const J = this.J;
    forwardKinematics(pose, trans, J, this.parents, this.rot, this.pos, this);
    for (let j = 0; j < 24; j++) {
      // A_j = [R_j | pos_j − R_j J_j]
      const e = this.m.makeRotationFromQuaternion(this.rot[j]).elements; // column-major
      const a = this.A.subarray(12 * j, 12 * j + 12);
      a[0] = e[0]; a[1] = e[4]; a[2] = e[8];
      a[3] = e[1]; a[4] = e[5]; a[5] = e[9];
      a[6] = e[2]; a[7] = e[6]; a[8] = e[10];
      const jx = J[3 * j], jy = J[3 * j + 1], jz = J[3 * j + 2];
      a[9] = this.pos[j].x - (a[0] * jx + a[1] * jy + a[2] * jz);
      a[10] = this.pos[j].y - (a[3] * jx + a[4] * jy + a[5] * jz);
      a[11] = this.pos[j].z - (a[6] * jx + a[7] * jy + a[8] * jz);
    }
    const out = this.geometry.attributes.position.array;
    const { rest, idx, w, A } = this;
    for (let v = 0; v < this.n; v++) {
      const x = rest[3 * v], y = rest[3 * v + 1], z = rest[3 * v + 2];
      let ox = 0, oy = 0, oz = 0;
      for (let k = 0; k < 4; k++) {
        const wk = w[4 * v + k];
        if (wk === 0) continue;
        const a = 12 * idx[4 * v + k];
        ox += wk * (A[a] * x + A[a + 1] * y + A[a + 2] * z + A[a + 9]);
        oy += wk * (A[a + 3] * x + A[a + 4] * y + A[a + 5] * z + A[a + 10]);
        oz += wk * (A[a + 6] * x + A[a + 7] * y + A[a + 8] * z + A[a + 11]);
      }
      out[3 * v] = ox; out[3 * v + 1] = oy; out[3 * v + 2] = oz;
    }
    this.geometry.attributes.position.needsUpdate = true;
    this.geometry.computeVertexNormals();
  }
}
