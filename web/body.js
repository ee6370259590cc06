// The viewer's stand-in body: a capsule figure posed in JavaScript by
// forward kinematics of the 24 SMPL joints, from the rest joints of Drape's
// procedural body at betas = 0 (train/assets.py; the server does not expose
// the body's joints or mesh, docs/viewer.md). It follows the pose of the frame
// on screen, so it moves with the garment, but it does not change with betas.
import * as THREE from 'three';

export const PARENTS = [-1, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 9, 9, 12, 13, 14, 16, 17, 18, 19, 20, 21];

// rest joints [24][3] (meters, y up, feet on y = 0, left on +x)
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

// capsule radius per bone (by child joint); 0: no capsule
const RADIUS = [0, 0.075, 0.075, 0.11, 0.055, 0.055, 0.12, 0.045, 0.045, 0.12, 0.035, 0.035,
  0.05, 0.06, 0.06, 0, 0.05, 0.05, 0.04, 0.04, 0.035, 0.035, 0.03, 0.03];

export class StandInBody {
  constructor(material) {
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

  // pose: 72 axis-angle (local, SMPL order); trans: 3
  setPose(pose, trans) {
    for (let j = 0; j < 24; j++) {
      const x = pose[3 * j];
      const y = pose[3 * j + 1];
      const z = pose[3 * j + 2];
      const angle = Math.hypot(x, y, z);
      if (angle > 1e-12) this.local.setFromAxisAngle(this.axis.set(x / angle, y / angle, z / angle), angle);
      else this.local.identity();
      const r = REST_JOINTS[j];
      const pj = PARENTS[j];
      if (pj < 0) {
        this.rot[j].copy(this.local);
        this.pos[j].set(r[0] + trans[0], r[1] + trans[1], r[2] + trans[2]);
      } else {
        const rp = REST_JOINTS[pj];
        this.tmp.set(r[0] - rp[0], r[1] - rp[1], r[2] - rp[2]).applyQuaternion(this.rot[pj]);
        this.pos[j].copy(this.pos[pj]).add(this.tmp);
        this.rot[j].copy(this.rot[pj]).multiply(this.local);
      }
    }
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
