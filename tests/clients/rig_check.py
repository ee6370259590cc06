"""Checks a garment's rig in a bundle (made by `drape garment add`, in C)
against train/assets.py garment_rig() on the same rest mesh, for
tests/test_garment.c: bones, bone_joint_w, skin_idx, body_nn and
bone_body_nn exactly, skin_w0 within float32 rounding.
    rig_check.py BUNDLE GARMENT"""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "train"))
import assets  # noqa: E402
import bundle  # noqa: E402


def main():
    path, g = sys.argv[1], sys.argv[2]
    cfg, t = bundle.read_bundle(path)
    body = {"v_template": t["body.v_template"].astype(np.float64), "weights": t["body.weights"].astype(np.float64)}
    rest = t[f"garment.{g}.rest"].astype(np.float64)  # the float32 the C rig read
    want = assets.garment_rig(rest, t[f"garment.{g}.faces"], body, cfg["bones"], cfg["skin_k"])
    bad = 0
    for k, v in want.items():
        got = t[f"garment.{g}.{k}"].astype(np.float64)
        if got.shape != v.shape:
            print(f"{k}: shape {got.shape}, garment_rig's {v.shape}")
            bad += 1
            continue
        diff = float(np.abs(got - v).max())
        tol = 1e-6 if k == "skin_w0" else 0.0  # W0 is stored as float32
        print(f"{k}: {got.shape} max |C - Python| = {diff:.3g} (tolerance {tol:g})")
        bad += diff > tol
    print("garment_rig agrees" if not bad else f"{bad} tensors differ")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
