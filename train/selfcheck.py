"""Self-checks of the Python side: bundle format, assets, reference model.

    /usr/bin/python3 train/selfcheck.py [--presets tiny,small] [--seed 0]

Prints one line per check and exits non-zero if any fails.
"""
import argparse
import os
import sys
import tempfile

import numpy as np
import torch
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components
from scipy.spatial.transform import Rotation

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import assets  # noqa: E402
import weld  # noqa: E402
from bundle import BundleError, read_bundle, write_bundle  # noqa: E402
from make_bundle import make_bundle  # noqa: E402
from reference import Drape, infer, network_names, skinning_transforms  # noqa: E402

FAILED = []


def check(name, ok, detail=""):
    print(f"{'ok  ' if ok else 'FAIL'} {name}{': ' + detail if detail else ''}")
    if not ok:
        FAILED.append(name)


def check_bundle_format(tmp):
    cfg = {"format_version": 1, "x": [1, 2]}
    t = {"a": np.arange(6, dtype=np.float32).reshape(2, 3), "b": np.array([1, -2], np.int32),
         "c": np.ones((3, 1), np.float16), "empty": np.zeros((0, 4), np.float32)}
    path = os.path.join(tmp, "fmt.safetensors")
    write_bundle(path, cfg, t)
    raw = open(path, "rb").read()
    n = int.from_bytes(raw[:8], "little")
    cfg2, t2 = read_bundle(path)
    same = cfg2 == cfg and t2.keys() == t.keys() and all(
        t2[k].dtype == t[k].dtype and np.array_equal(t2[k], t[k]) for k in t)
    check("bundle: round trip (F32, I32, F16, empty), header padded to 8", same and (8 + n) % 8 == 0)

    def rejects(blob, what):
        bad = os.path.join(tmp, "bad.safetensors")
        open(bad, "wb").write(blob)
        try:
            read_bundle(bad)
        except BundleError as e:
            return True, str(e)
        return False, f"{what} accepted"

    results = [rejects(raw[:-4], "truncated data"), rejects(raw[:6], "short file"),
               rejects((10 ** 9).to_bytes(8, "little") + raw[8:], "huge header length"),
               rejects(raw + b"\0" * 8, "trailing bytes"),
               rejects(raw.replace(b'"F32"', b'"F64"', 1), "unknown dtype")]
    nan = raw[:8 + n] + np.full(6, np.nan, np.float32).tobytes() + raw[8 + n + 24:]
    results.append(rejects(nan, "NaN values"))
    check("bundle: reader rejects truncated/oversized/trailing/bad dtype/NaN",
          all(r[0] for r in results), "; ".join(r[1] for r in results))


def components(faces, n):
    e = np.concatenate([faces[:, [0, 1]], faces[:, [1, 2]]])
    return connected_components(coo_matrix((np.ones(len(e)), (e[:, 0], e[:, 1])), shape=(n, n)))


def check_assets(cfg, t, preset):
    v, f = t["body.v_template"].astype(np.float64), t["body.faces"]
    ncomp, label = components(f, len(v))
    vols = [assets.signed_volume(v, f[label[f[:, 0]] == c]) for c in range(ncomp)]
    check(f"{preset} body: {len(v)} verts, {ncomp} closed surface(s), all wound outward",
          min(vols) > 0, f"min piece volume {min(vols):.2e} m^3")
    w = t["body.weights"]
    check(f"{preset} body: weights nonnegative, rows sum to 1",
          w.min() >= 0 and np.abs(w.sum(1) - 1).max() < 1e-5)
    Jr = t["body.J_regressor"]
    J = Jr.astype(np.float64) @ v
    check(f"{preset} body: J_regressor nonnegative, rows sum to 1, reproduces the rest joints",
          Jr.min() >= 0 and np.abs(Jr.sum(1) - 1).max() < 1e-5
          and np.abs(J - assets.rest_joints()).max() < 1e-4,
          f"|J - intended| max {np.abs(J - assets.rest_joints()).max():.1e} m")
    check(f"{preset} body: feet on y = 0, 1.70 m tall",
          abs(v[:, 1].min()) < 0.01 and abs(v[:, 1].max() - 1.70) < 0.01,
          f"y in [{v[:, 1].min():.3f}, {v[:, 1].max():.3f}]")
    A = skinning_transforms(torch.eye(3).expand(1, 24, 3, 3), torch.zeros(1, 3),
                            torch.from_numpy(J.astype(np.float32)), t["body.parents"])
    check(f"{preset} FK: every A_k is the identity at θ = 0",
          torch.allclose(A[0], torch.eye(3, 4).expand(24, 3, 4), atol=1e-6))

    for g in cfg["garments"]:
        p = f"garment.{g}."
        rest, gf, uv, uvf = t[p + "rest"], t[p + "faces"], t[p + "uv"], t[p + "uv_faces"]
        a, b, c = rest[gf[:, 0]], rest[gf[:, 1]], rest[gf[:, 2]]
        n = np.cross(b - a, c - a)
        radial = (a + b + c) / 3 * np.array([1, 0, 1])
        check(f"{preset} {g}: {len(rest)} verts, {len(uv)} uvs, faces wound outward",
              np.all(np.sum(n * radial, 1) > 0) and len(uv) > len(rest))
        tri = uv[uvf].astype(np.float64)
        area = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
        layers = uv_layers(tri)
        check(f"{preset} {g}: UVs in [0,1], no flipped or overlapping UV triangles",
              uv.min() >= 0 and uv.max() <= 1 and (np.all(area > 0) or np.all(area < 0))
              and layers == 1, f"max {layers} triangle(s) over a point of a 512x512 grid")
        inside = assets.inside_body({"pieces": assets.body_pieces()}, rest.astype(np.float64))
        nn = t[p + "body_nn"]
        vn = weld.vertex_normals(v, f)
        pen = np.sum(vn[nn] * (rest - v[nn]), 1) < 0
        check(f"{preset} {g}: rest garment clear of the canonical body",
              not inside.any() and not pen.any(),
              f"{inside.sum()} verts inside, {pen.mean() * 100:.1f}% behind nearest body normal")
        sw, si = t[p + "skin_w0"], t[p + "skin_idx"]
        check(f"{preset} {g}: skin_w0 rows sum to 1, skin_idx in range, bone_joint_w rows sum to 1",
              np.abs(sw.sum(1) - 1).max() < 1e-5 and si.min() >= 0 and si.max() < cfg["bones"]
              and np.abs(t[p + "bone_joint_w"].sum(1) - 1).max() < 1e-5)
    names = set(network_names(cfg))
    data = {k for k in t if k.startswith(("body.", "garment."))}
    check(f"{preset} bundle: tensors = body + garments + network state_dict names",
          names | data == set(t) and not names & data)


def uv_layers(tri, n=512):
    """Most UV triangles strictly containing one point of an n x n grid."""
    count = np.zeros((n, n), np.int32)
    centres = (np.arange(n) + 0.5) / n
    for a, b, c in tri:
        lo, hi = np.minimum(np.minimum(a, b), c), np.maximum(np.maximum(a, b), c)
        js = np.flatnonzero((centres >= lo[0]) & (centres <= hi[0]))
        is_ = np.flatnonzero((centres >= lo[1]) & (centres <= hi[1]))
        if len(js) == 0 or len(is_) == 0:
            continue
        pu, pv = centres[js][None, :], centres[is_][:, None]
        d = (b[0] - a[0]) * (c[1] - a[1]) - (c[0] - a[0]) * (b[1] - a[1])
        l1 = ((pu - a[0]) * (c[1] - a[1]) - (c[0] - a[0]) * (pv - a[1])) / d
        l2 = ((b[0] - a[0]) * (pv - a[1]) - (pu - a[0]) * (b[1] - a[1])) / d
        inside = (l1 > 1e-9) & (l2 > 1e-9) & (1 - l1 - l2 > 1e-9)
        count[is_[0]:is_[-1] + 1, js[0]:js[-1] + 1] += inside
    return int(count.max())


def check_raster(model, garment, preset):
    S, G = model.static(garment), model.garments[garment]
    hu, wu = model.cfg["uv_size"]
    face = S["face"]
    i, j = np.nonzero(face >= 0)
    uv = G["uv"].numpy().astype(np.float64)
    corners = uv[G["uv_faces"].numpy()[face[i, j]]]  # [n,3,2]
    lam = S["bary"].numpy()[i, j].astype(np.float64)
    rec = np.einsum("nc,ncd->nd", lam, corners)
    centre = np.stack([(j + 0.5) / wu, (i + 0.5) / hu], 1)
    err = np.abs(rec - centre).max()
    check(f"{preset} raster: barycentrics reproduce every covered texel's UV centre",
          err < 1e-6 and lam.min() >= -1e-6, f"{len(i)} of {hu * wu} texels covered, max error {err:.1e}")


def check_model(cfg, t, tmp, preset, rng):
    path = os.path.join(tmp, f"{preset}.safetensors")
    write_bundle(path, cfg, t)
    model = Drape.load(path)
    g = cfg["garments"][0]
    check_raster(model, g, preset)
    rest = t[f"garment.{g}.rest"]

    # (c) θ = 0: plain skinning returns the retargeted garment, any betas.
    zero = np.zeros((3, 75), np.float32)
    _, f0 = infer(model, g, [], zero, lbs_only=True)
    err0 = np.abs(f0["world"] - rest).max()
    check(f"{preset} θ = 0, β = 0: --lbs-only output = garment rest", err0 < 1e-6, f"max {err0:.1e} m")
    betas = rng.uniform(-3, 3, cfg["betas"])
    ident, fb = infer(model, g, betas, zero, lbs_only=True)
    errb = np.abs(fb["world"] - ident["g"].numpy()).max()
    check(f"{preset} θ = 0, random β: --lbs-only output = g(β) (no dependence on J)",
          errb < 1e-6, f"max {errb:.1e} m")

    # (d) A constant yaw plus a translation of the whole motion moves the output rigidly.
    seq = assets.random_motion(rng, 6)
    ident, fa = infer(model, g, betas[:4], seq)
    alpha, shift = 0.7, np.array([0.3, 0.1, -0.5])
    Ry = Rotation.from_rotvec([0, alpha, 0]).as_matrix()
    J0 = ident["J"][0].numpy().astype(np.float64)
    moved = seq.astype(np.float64).copy()
    moved[:, :3] = (Rotation.from_rotvec([0, alpha, 0]) * Rotation.from_rotvec(moved[:, :3])).as_rotvec()
    moved[:, 72:] = (J0 + moved[:, 72:]) @ Ry.T + shift - J0
    _, fm = infer(model, g, betas[:4], moved.astype(np.float32))
    err = np.abs(fm["world"] - (fa["world"] @ Ry.T + shift)).max()
    moving = np.abs(fa["delta"]).max() > 1e-4 or cfg.get("weights_init") == "zero"
    check(f"{preset} rigid yaw {alpha} rad + shift: output moves by the same rigid motion",
          err < 1e-5 and moving, f"max {err:.1e} m, |delta| max {np.abs(fa['delta']).max():.1e} m")
    return model, seq


def check_zero_vs_lbs(tmp, preset, seed, rng):
    cfg, t = make_bundle(preset, seed, "zero", log=lambda m: None)
    path = os.path.join(tmp, f"{preset}-zero.safetensors")
    write_bundle(path, cfg, t)
    model = Drape.load(path)
    g, seq = cfg["garments"][0], assets.random_motion(rng, 5)
    betas = rng.uniform(-3, 3, 3)
    _, full = infer(model, g, betas, seq)
    _, lbs = infer(model, g, betas, seq, lbs_only=True)
    err = np.abs(full["world"] - lbs["world"]).max()
    check(f"{preset} zero weights: reference = --lbs-only", err < 1e-6, f"max {err:.1e} m")


def check_random_is_visible(cfg, model, seq, preset):
    g = cfg["garments"][0]
    _, full = infer(model, g, [1.0], seq)
    _, lbs = infer(model, g, [1.0], seq, lbs_only=True)
    d = np.linalg.norm(full["world"] - lbs["world"], axis=-1)
    check(f"{preset} random weights: corrections visible but bounded",
          1e-3 < d.max() < 0.08, f"|ref - lbs| mean {d.mean() * 100:.2f} cm, max {d.max() * 100:.2f} cm")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--presets", default="tiny,small")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    rng = np.random.default_rng(1234)
    with tempfile.TemporaryDirectory() as tmp:
        check_bundle_format(tmp)
        for preset in a.presets.split(","):
            cfg, t = make_bundle(preset, a.seed, "random", log=lambda m: None)
            check_assets(cfg, t, preset)
            model, seq = check_model(cfg, t, tmp, preset, rng)
            check_random_is_visible(cfg, model, seq, preset)
            check_zero_vs_lbs(tmp, preset, a.seed, rng)
    if FAILED:
        print(f"selfcheck: {len(FAILED)} check(s) failed")
        sys.exit(1)
    print("selfcheck: all checks passed")


if __name__ == "__main__":
    main()
