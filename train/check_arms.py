"""What `train.py arms` promises, checked on a bundle and its copy: only the
body's shapedirs change, only in x, for β1 (girth) and β2 (shoulder width),
on the vertices the arm joints move; and a thick, narrow-shouldered shape
with its arms lowered has fewer arm vertices inside its trunk.

    /usr/bin/python3 train/check_arms.py BEFORE.safetensors AFTER.safetensors
"""
import sys

import numpy as np
import torch
from scipy.spatial import cKDTree

import reference
from assets import ARM_JOINTS
from bundle import read_bundle
from train import posed_body

TRUNK_JOINTS = (0, 3, 6, 9, 13, 14)  # pelvis, spine, the collars


def ok(cond, what):
    if not cond:
        raise SystemExit(f"check_arms: FAILED: {what}")
    print(f"check_arms: ok: {what}")


def arms_in_trunk(path, betas):
    """Arm vertices inside the trunk by the collision metric's test (the
    nearest trunk vertex's normal), the arms lowered 70° from the T-pose."""
    model = reference.Drape.load(path)
    b = model.body
    beta = torch.tensor(betas, dtype=torch.float32)
    ident = {"beta": beta, "J": b["J_regressor"] @ (b["v_template"] + b["shapedirs"] @ beta)}
    pose = torch.zeros(1, 72)
    pose[0, 16 * 3 + 2], pose[0, 17 * 3 + 2] = -1.22, 1.22
    body, normals = posed_body(model, ident, pose, torch.zeros(1, 3))
    x, n = body[0].numpy(), normals[0].numpy()
    dom = b["weights"].numpy().argmax(1)
    arm, trunk = np.flatnonzero(np.isin(dom, ARM_JOINTS)), np.flatnonzero(np.isin(dom, TRUNK_JOINTS))
    k = cKDTree(x[trunk]).query(x[arm])[1]
    return int((((x[arm] - x[trunk[k]]) * n[trunk[k]]).sum(1) < 0).sum())


def main(before, after):
    _, t0 = read_bundle(before)
    _, t1 = read_bundle(after)
    ok(sorted(t0) == sorted(t1), "the same tensors")
    ok(all(np.array_equal(t0[k], t1[k]) for k in t0 if k != "body.shapedirs"), "all but body.shapedirs unchanged")
    d = t1["body.shapedirs"].astype(np.float64) - t0["body.shapedirs"]
    moved = np.abs(d).sum((1, 2)) > 0
    ok(moved.any() and not np.abs(d[:, 1:]).any() and not np.abs(d[:, :, [0] + list(range(3, d.shape[2]))]).any(),
       "only x of betas 1 and 2 moved")
    armw = t0["body.weights"][:, ARM_JOINTS].sum(1)
    ok(np.all(armw[moved] > 0), f"only arm-weighted vertices moved ({moved.sum()})")
    thick = [0, 3, -3] + [0] * (d.shape[2] - 3)
    n0, n1 = arms_in_trunk(before, thick), arms_in_trunk(after, thick)
    ok(n1 < n0, f"girth +3, shoulders -3, arms lowered: {n0} -> {n1} arm vertices inside the trunk")
    z = [0] * d.shape[2]
    ok(arms_in_trunk(before, z) == arms_in_trunk(after, z), "the zero shape unchanged")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    main(sys.argv[1], sys.argv[2])
