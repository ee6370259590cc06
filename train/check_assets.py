"""Checks of the procedural assets (train/assets.py) and motions (train/motions.py).

    /usr/bin/python3 train/check_assets.py body
    /usr/bin/python3 train/check_assets.py garment NAME [--resolution default]
    /usr/bin/python3 train/check_assets.py motions
    /usr/bin/python3 train/check_assets.py heldout --recipe R --eval-args ARGS
    /usr/bin/python3 train/check_assets.py clips
    /usr/bin/python3 train/check_assets.py recorded [--recipe R] [--base B]

Run by tests/test_assets.c. Prints one line per check; exits 1 on the first
failure with what failed.
"""
import argparse
import hashlib
import os
import sys
import tempfile

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components
from scipy.spatial import cKDTree

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import assets  # noqa: E402
import weld  # noqa: E402
import motions  # noqa: E402

V_RANGE = (2000, 8000)  # garment vertices at the default-model resolution
# the default model's garments (the Makefile's MODEL_GARMENTS); the miniskirt
# is the test bundles' second garment and stays smaller
DEFAULT_MODEL_GARMENTS = ("skirt", "dress", "tshirt")
UV_RASTER = 1024  # texels per side of the overlap raster


class Failed(Exception):
    pass


def ok(cond, what):
    if not cond:
        raise Failed(what)
    print(f"ok   {what}")


def digest(obj):
    """sha256 of every array in a (nested) dict/tuple/list, in order."""
    h = hashlib.sha256()

    def feed(x):
        if isinstance(x, dict):
            for k in sorted(x):
                if k != "pieces":
                    h.update(k.encode())
                    feed(x[k])
        elif isinstance(x, (tuple, list)):
            for v in x:
                feed(v)
        else:
            a = np.ascontiguousarray(x)
            h.update(str((a.dtype, a.shape)).encode())
            h.update(a.tobytes())
    feed(obj)
    return h.hexdigest()


def edge_faces(faces):
    """Undirected edges [E,2] and how many faces hold each."""
    e = np.sort(np.concatenate([faces[:, [0, 1]], faces[:, [1, 2]], faces[:, [2, 0]]]), axis=1)
    return np.unique(e, axis=0, return_counts=True)


def components(n, edges):
    g = sp.coo_matrix((np.ones(len(edges)), (edges[:, 0], edges[:, 1])), shape=(n, n))
    return connected_components(g, directed=False)[0]


# ---------------------------------------------------------------------------


def check_body():
    ok(digest(assets.make_body("default", np.random.default_rng(3)))
       == digest(assets.make_body("default", np.random.default_rng(3))), "body: same seed, same bytes")
    for res, (lo, hi) in (("small", (1500, 6000)), ("default", (1500, 6000)), ("paper", (2000, 6000))):
        b = assets.make_body(res, np.random.default_rng(0))
        v, f, W = b["v_template"], b["faces"], b["weights"]
        ok(lo <= len(v) <= hi, f"body {res}: {len(v)} vertices in [{lo}, {hi}]")
        _, cnt = edge_faces(f)
        ok(np.all(cnt == 2), f"body {res}: closed (every edge in exactly 2 faces)")
        ok(assets.signed_volume(v, f) > 0.03, f"body {res}: outward faces, volume {assets.signed_volume(v, f):.4f} m³")
        # Welded: one surface, consistently wound, a sphere (χ = 2), and no
        # vertex inside any piece (nothing of the surface hides inside the body).
        und, _ = edge_faces(f)
        directed = np.concatenate([f[:, [0, 1]], f[:, [1, 2]], f[:, [2, 0]]])
        ok(components(len(v), und) == 1 and len(np.unique(directed, axis=0)) == len(directed)
           and len(v) - len(und) + len(f) == 2, f"body {res}: one surface, wound consistently, χ = 2")
        depth = min(weld.piece_field(pc, v).min() for pc in b["pieces"])
        ok(depth > -1e-3, f"body {res}: no vertex inside the body (deepest {1000 * -depth:.2f} mm into a piece)")
        ok(np.all(W >= 0) and np.allclose(W.sum(1), 1), f"body {res}: skinning weights >= 0, rows sum to 1")
        J = b["J_regressor"] @ v
        ok(np.abs(J - assets.rest_joints()).max() < 1e-6, f"body {res}: J_regressor gives the rest joints")
        ok(len(b["parents"]) == 24 and np.array_equal(b["parents"], assets.PARENTS), f"body {res}: 24 SMPL joints")
    # The shape space: each of β0..β3 at ±3 changes what it should.
    D = b["shapedirs"]

    def shaped(k, val):
        beta = np.zeros(assets.NUM_BETAS)
        beta[k] = val
        vs = v + D @ beta
        return vs, b["J_regressor"] @ vs
    measures = {
        0: ("height", lambda vs, J: vs[:, 1].max() - vs[:, 1].min()),
        1: ("waist girth", lambda vs, J: np.ptp(vs[np.abs(vs[:, 1] - 1.1) < 0.02][:, 2])),
        2: ("shoulder width", lambda vs, J: J[16, 0] - J[17, 0]),
        3: ("hip width", lambda vs, J: J[1, 0] - J[2, 0]),
    }
    for k, (name, m) in measures.items():
        lo, hi = m(*shaped(k, -3)), m(*shaped(k, 3))
        ok(hi > 1.04 * lo, f"body: β{k} ({name}) from −3 to 3: {lo:.3f} → {hi:.3f} m")
    for k in range(assets.NUM_BETAS):
        vs, _ = shaped(k, 3)
        ok(np.all(np.isfinite(vs)) and np.abs(vs - v).max() < 0.2, f"body: β{k} = 3 moves vertices ≤ 0.2 m")


def uv_overlaps(uv, uv_faces, n=UV_RASTER):
    """Texel centres strictly inside two or more UV triangles, and the faces
    whose triangle holds no texel centre (too thin to tell)."""
    count = np.zeros((n, n), np.int32)
    P = uv[uv_faces] * n - 0.5  # texel (i, j) has its centre at integer (j, i)
    for a, b, c in P:
        x0, y0 = np.ceil(np.minimum(np.minimum(a, b), c)).astype(int)
        x1, y1 = np.floor(np.maximum(np.maximum(a, b), c)).astype(int)
        if x1 < x0 or y1 < y0:
            continue
        X, Y = np.meshgrid(np.arange(x0, x1 + 1), np.arange(y0, y1 + 1))
        d = (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0])
        l1 = ((X - a[0]) * (c[1] - a[1]) - (Y - a[1]) * (c[0] - a[0])) / d
        l2 = ((b[0] - a[0]) * (Y - a[1]) - (b[1] - a[1]) * (X - a[0])) / d
        inside = (l1 > 1e-9) & (l2 > 1e-9) & (1 - l1 - l2 > 1e-9)
        count[Y[inside], X[inside]] += 1
    return int((count > 1).sum()), float((count > 0).mean())


def check_garment(name, res):
    rng = np.random.default_rng(0)
    body = assets.make_body(res, rng)
    g1 = assets.GARMENTS[name](body, res)
    ok(digest(g1) == digest(assets.GARMENTS[name](body, res)), f"{name}: same bytes twice")
    rest, faces, uv, uv_faces = g1
    V, F = len(rest), len(faces)
    if res == "default" and name in DEFAULT_MODEL_GARMENTS:
        ok(V_RANGE[0] <= V <= V_RANGE[1], f"{name}: {V} vertices in {list(V_RANGE)} at resolution {res}")
    ok(faces.min() >= 0 and faces.max() < V and len(np.unique(faces)) == V, f"{name}: faces index every vertex")
    ok(np.all(np.isfinite(rest)), f"{name}: finite rest positions")

    # Topology: one piece, manifold edges, consistent orientation, simple boundary.
    edges, cnt = edge_faces(faces)
    ok(components(V, edges) == 1, f"{name}: one connected component")
    ok(cnt.max() <= 2, f"{name}: manifold edges (max {cnt.max()} faces per edge)")
    directed = np.concatenate([faces[:, [0, 1]], faces[:, [1, 2]], faces[:, [2, 0]]])
    _, dcnt = np.unique(directed, axis=0, return_counts=True)
    ok(dcnt.max() == 1, f"{name}: consistent orientation (no directed edge twice)")
    bnd = edges[cnt == 1]
    deg = np.bincount(bnd.ravel(), minlength=V)
    ok(np.all((deg == 0) | (deg == 2)), f"{name}: boundary loops are simple ({len(bnd)} boundary edges)")
    # Manifold vertices: the faces around a vertex form one fan, so it has as
    # many distinct neighbours as faces (one more on the boundary).
    nfaces = np.bincount(faces.ravel(), minlength=V)
    nbrs = np.bincount(edges.ravel(), minlength=V)
    bad = int((nbrs != nfaces + (deg > 0)).sum())
    ok(bad == 0, f"{name}: manifold vertices (one fan each)")

    # Outward: face normals point away from the nearest body vertex.
    a, b, c = rest[faces[:, 0]], rest[faces[:, 1]], rest[faces[:, 2]]
    n = np.cross(b - a, c - a)
    area = 0.5 * np.linalg.norm(n, axis=1)
    ok(area.min() > 1e-7, f"{name}: every face has area > 1e-7 m² (min {area.min():.2e})")
    cen = (a + b + c) / 3
    nn = body["v_template"][cKDTree(body["v_template"]).query(cen)[1]]
    out = np.einsum("ij,ij->i", n, cen - nn) > 0
    ok(area[out].sum() > 0.97 * area.sum(), f"{name}: outward orientation ({100 * area[out].sum() / area.sum():.1f}% of area)")
    ins = assets.inside_body(body, rest)
    ok(not ins.any(), f"{name}: no vertex inside the rest body ({ins.sum()} inside)")

    # UV atlas: per-face UVs in [0,1], positive area, no overlaps, two charts, seams.
    ok(uv_faces.shape == faces.shape and uv_faces.min() >= 0 and uv_faces.max() < len(uv),
       f"{name}: uv_faces [F,3] index uv")
    ok(uv.min() >= 0 and uv.max() <= 1, f"{name}: UVs in [0, 1]")
    owner = np.full(len(uv), -1)
    owner[uv_faces.ravel()] = faces.ravel()
    pairs = np.unique(np.stack([uv_faces.ravel(), faces.ravel()], 1), axis=0)
    ok(len(pairs) == len(uv) and np.all(owner >= 0), f"{name}: each UV index belongs to one vertex")
    p, q, r = uv[uv_faces[:, 0]], uv[uv_faces[:, 1]], uv[uv_faces[:, 2]]
    uv_area = 0.5 * ((q - p)[:, 0] * (r - p)[:, 1] - (q - p)[:, 1] * (r - p)[:, 0])
    ok(uv_area.min() > 1e-8, f"{name}: every UV triangle has positive area (min {uv_area.min():.2e})")
    over, cover = uv_overlaps(uv, uv_faces)
    ok(over == 0, f"{name}: no overlapping UV triangles ({over} texels of {UV_RASTER}² in two or more; "
       f"{100 * cover:.0f}% covered)")
    ok(abs(cover - uv_area.sum()) < 0.02, f"{name}: raster coverage matches the UV area ({uv_area.sum():.3f})")
    uv_edges, _ = edge_faces(uv_faces)
    ok(components(len(uv), uv_edges) == 2, f"{name}: two UV charts (front and back panel)")
    seam = np.bincount(pairs[:, 1], minlength=V) > 1
    ok(seam.sum() > 0, f"{name}: {seam.sum()} seam vertices with two UV copies")

    # Rig (docs/design.md §2.2).
    g = assets.garment_rig(rest, faces, body, 32, 8)
    ok(digest(g) == digest(assets.garment_rig(rest, faces, body, 32, 8)), f"{name}: rig same bytes twice")
    w = g["skin_w0"]
    ok(np.all(w >= 0) and np.allclose(w.sum(1), 1) and np.all(np.isfinite(w)), f"{name}: W0 rows >= 0, sum to 1")
    ok(len(np.unique(g["bones"], axis=0)) == 32, f"{name}: 32 distinct FPS bones")
    ok(np.all(g["skin_idx"] >= 0) and np.all(g["skin_idx"] < 32), f"{name}: skin_idx in range")
    ok(np.allclose(g["bone_joint_w"].sum(1), 1), f"{name}: bone_joint_w rows sum to 1")
    d = np.linalg.norm(rest - body["v_template"][g["body_nn"]], axis=1)
    ok(d.max() < 0.4, f"{name}: body_nn within 0.4 m (max {d.max():.3f} m)")
    att = assets.attach_vertices(rest)
    ok(len(att) >= 4, f"{name}: {len(att)} attached vertices (1 cm below the top)")


def check_motions():
    T_SEC = 4.0
    for kind in motions.KINDS:
        for seed in (0, 1, 2):
            seq, _ = motions.generate(kind, T_SEC, seed)
            again, _ = motions.generate(kind, T_SEC, seed)
            tag = f"motion {kind} seed {seed}"
            ok(seq.dtype == np.float32 and seq.shape == (120, 75), f"{tag}: float32 [120,75]")
            ok(seq.tobytes() == again.tobytes(), f"{tag}: same bytes twice")
            ok(np.all(np.isfinite(seq)), f"{tag}: no NaN/Inf")
            w = motions.joint_speeds(seq).max()
            ok(w <= motions.MAX_JOINT_SPEED, f"{tag}: joint speed {w:.2f} ≤ {motions.MAX_JOINT_SPEED} rad/s")
            xz = seq[:, [72, 74]].astype(np.float64)
            speed = np.linalg.norm(np.diff(xz, axis=0), axis=1) * motions.FPS
            y = seq[:, 73]
            psi = motions.heading(seq)
            if kind in ("walk", "run"):
                v = np.linalg.norm(xz[-1] - xz[0]) / T_SEC
                lo, hi = (0.6, 2.0) if kind == "walk" else (1.8, 4.5)
                ok(lo <= v <= hi, f"{tag}: advances at {v:.2f} m/s, in [{lo}, {hi}]")
            elif kind == "jump":
                k = int(np.argmax(y))
                ok(y[k] > y[0] + 0.05 and y[k:].min() < y[k] - 0.05,
                   f"{tag}: root rises {y[k] - y[0]:.3f} m and falls again")
            elif kind == "stop":
                ok(speed[:30].mean() > 0.5 and speed[-9:].max() < 0.02,
                   f"{tag}: speed {speed[:30].mean():.2f} m/s, then {speed[-9:].max():.3f} at the end")
            elif kind == "turn":
                dpsi = abs(psi[-5:].mean() - psi[:5].mean())
                ok(dpsi > np.pi / 4, f"{tag}: heading changes by {np.degrees(dpsi):.0f}°")
            elif kind in ("idle", "arm_swings"):  # stays in place
                ok(np.abs(xz - xz[0]).max() < 0.1, f"{tag}: stays within 0.1 m")
            # the wider families travel: check_families
        a, _ = motions.generate(kind, T_SEC, 0)
        b, _ = motions.generate(kind, T_SEC, 1)
        ok(not np.array_equal(a, b), f"motion {kind}: seeds 0 and 1 differ")
    spread = np.ptp(motions.generate("arm_swings", T_SEC, 0)[0][:, 3 * 16:3 * 16 + 3], axis=0).max()
    ok(spread > 0.3, f"motion arm_swings: left shoulder moves ({spread:.2f} rad)")

    # The command line, every kind; then the importer.
    seq, _ = motions.generate("walk", 2.0, 5, fps=60)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "m.npy")
        for kind in motions.KINDS:
            rc = motions.main(["--kind", kind, "--seconds", "1", "--seed", "4", "--out", path])
            ok(rc == 0 and np.array_equal(np.load(path), motions.generate(kind, 1.0, 4)[0]),
               f"motions.py --kind {kind} writes the generated sequence")
        np.save(path, seq)
        ok(np.array_equal(motions.load(path), seq), "import: round trip")
        half = motions.load(path, src_fps=60)
        ok(len(half) == 60 and np.abs(half - seq[::2]).max() < 1e-5, "import: 60 → 30 fps resampling")
        np.save(path, seq.astype(np.float64))
        ok(motions.load(path).dtype == np.float32, "import: float64 accepted, converted to float32")
        for bad, what in ((seq[:, :72], "[T,72]"), (seq.astype(np.int32), "int32"), (seq[0], "1-D")):
            np.save(path, bad)
            try:
                motions.load(path)
                ok(False, f"import: rejects {what}")
            except ValueError:
                ok(True, f"import: rejects {what}")
        nan = seq.copy()
        nan[3, 10] = np.nan
        np.save(path, nan)
        try:
            motions.load(path)
            ok(False, "import: rejects NaN")
        except ValueError:
            ok(True, "import: rejects NaN")


def check_families():
    """The motion families of issue 31 (train/motions.py): at least 12; each
    deterministic per seed, finite, inside the joint limits, within the speed
    bounds and its own root speed; the spin reaches its yaw rate; the limit
    check catches a joint outside; and the wide dataset plan never trains on
    a held-out family."""
    import dataset  # noqa: E402  (train/dataset.py: the plan)
    T_SEC = 4.0
    fams = list(motions.KINDS)
    ok(len(fams) >= 12, f"{len(fams)} motion families (at least 12)")
    held = motions.HELD_OUT_FAMILIES
    ok(len(held) >= 3 and {"spin", "random"} <= set(held) and set(held) <= set(fams),
       f"held out whole: {', '.join(held)} (at least three, the spin and the random trajectories among them)")
    for kind in fams:
        seqs = []
        for seed in range(6):
            seq, params = motions.generate(kind, T_SEC, seed)
            again, _ = motions.generate(kind, T_SEC, seed)
            tag = f"{kind} seed {seed}"
            ok(seq.dtype == np.float32 and seq.shape == (120, 75) and seq.tobytes() == again.tobytes(),
               f"{tag}: float32 [120,75], the same bytes twice")
            ok(np.all(np.isfinite(seq)), f"{tag}: finite")
            bad = motions.limit_violation(seq)
            ok(bad is None, f"{tag}: every joint inside its limits" + (f" ({bad})" if bad else ""))
            w = motions.joint_speeds(seq).max()
            v = (np.linalg.norm(np.diff(seq[:, [72, 74]].astype(np.float64), axis=0), axis=1) * motions.FPS).max()
            ok(w <= motions.MAX_JOINT_SPEED and v <= motions.ROOT_SPEED[kind],
               f"{tag}: joint speed {w:.2f} ≤ {motions.MAX_JOINT_SPEED} rad/s, root {v:.2f} ≤ "
               f"{motions.ROOT_SPEED[kind]} m/s")
            if "travel" in params:
                ok(0 <= params["travel"] <= motions.ROOT_SPEED[kind], f"{tag}: root travel {params['travel']:.2f} m/s")
            if kind == "spin":
                rate = np.abs(np.diff(motions.heading(seq))).max() * motions.FPS
                want = abs(params["rate"])
                ok(np.pi - 1e-6 <= want <= 4 * np.pi + 1e-6 and abs(rate - want) <= 0.03 * want,
                   f"{tag}: turns at {rate:.2f} rad/s, its drawn rate {want:.2f} (0.5–2 turns/s)")
            seqs.append(seq)
        ok(not np.array_equal(seqs[0], seqs[1]), f"{kind}: seeds 0 and 1 differ")
    # some spin reaches 1.5 turns/s in a few draws
    top = max(abs(motions.generate("spin", T_SEC, s)[1]["rate"]) for s in range(12))
    ok(top >= 3 * np.pi, f"spin: the fastest of 12 draws turns at {top / (2 * np.pi):.2f} turns/s")
    # the limit check can fail: a knee bent backwards, a root lying down
    seq, _ = motions.generate("walk", 1.0, 0)
    knee = seq.copy()
    knee[5, 3 * motions.L_KNEE] = -0.8
    ok(motions.limit_violation(knee) is not None, "limits: a knee bent backwards is caught")
    lying = seq.copy()
    lying[7, 0:3] = [1.4, 0, 0]
    ok(motions.limit_violation(lying) is not None, "limits: a root tilted 80° is caught")
    # the wide plan: held-out families only in `test`, at least 8 training
    # shapes, at least 20 minutes of training motion per garment
    cfg = {"betas": 10, "beta_range": [-3, 3], "garments": ["skirt", "dress", "tshirt"]}
    ap_args = ["--base", "x", "--out", "x", "--plan", "wide", "--garments", "skirt,dress,tshirt"]
    a = dataset.parse_args(ap_args)
    plan = dataset.plan(cfg, a)
    train = [s for s in plan if s["split"] == "train"]
    ok(not any(s["kind"] in held for s in train), "wide plan: no held-out family in the training split")
    ok({s["kind"] for s in plan if s["split"] == "test"} >= set(held), "wide plan: every held-out family is tested")
    wide_train = set(motions.WIDE_FAMILIES) - set(held)
    ok(wide_train == {s["kind"] for s in train},
       f"wide plan: each of its {len(wide_train)} training families is trained on, no other")
    shapes = {tuple(s["betas"]) for s in train}
    ok(len(shapes) >= 8, f"wide plan: {len(shapes)} training shapes")
    for g in cfg["garments"]:
        mins = sum(s["garment"] == g for s in train) * a.seconds / 60
        ok(mins >= 20, f"wide plan: {mins:.0f} minutes of training motion for {g}")
    test_shapes = {tuple(s["betas"]) for s in plan if s["test_betas"]}
    ok(not shapes & test_shapes, "wide plan: the test shapes are not training shapes")
    # --speed (docs/training-log.md, "Faster motion"): other draws of the
    # same shapes and training families, each played at its drawn speed
    fa = dataset.parse_args(ap_args + ["--train-seeds", "5", "--seconds", "3", "--only", "train", "--speed", "1.2,1.8"])
    fast = [s for s in dataset.plan(cfg, fa) if s["split"] == "train"]
    spd = np.array([s["speed"] for s in fast])
    ok(len(fast) == 1200 and 1.2 <= spd.min() and spd.max() <= 1.8 and spd.max() - spd.min() > 0.5
       and all(s["name"].endswith(f"-x{s['speed']:.2f}") for s in fast),
       f"--speed: {len(fast)} training sequences at speeds {spd.min():.2f}-{spd.max():.2f}, named by them")
    own = {(s["kind"], s["seed"]) for s in dataset.plan(cfg, dataset.parse_args(ap_args + ["--train-seeds", "5"]))}
    ok(not own & {(s["kind"], s["seed"]) for s in fast} and {tuple(s["betas"]) for s in fast} == shapes
       and not any(s["kind"] in held for s in fast),
       "--speed: other draws than the plan's own, on its training shapes, no held-out family")
    # played faster: at 1.5, every second frame is every third of the same
    # draw over 1.5 times the time (families whose draw does not depend on
    # the clip's length)
    for kind in ("walk", "arm_swings", "jump"):
        quick = dataset.make_motion(kind, 100003, 3, 30, 1.5)
        slow = dataset.make_motion(kind, 100003, 4.5, 30)
        err = float(np.abs(quick[::2] - slow[:135:3]).max())
        ok(quick.shape == (90, 75) and err < 1e-4, f"--speed: {kind} at 1.5 is its draw at 1.5/30-s steps ({err:.1e})")
    for bad in ("1.8,1.2", "0,2", "x"):
        try:
            dataset.parse_args(ap_args + ["--speed", bad])
            ok(False, f"--speed {bad} refused")
        except SystemExit as e:
            ok("expected LO,HI" in str(e), f"--speed {bad} refused: {e}")
    # --splice (docs/training-log.md, "Two families in one body"): other
    # draws, each with another training family's upper body
    sa = dataset.parse_args(ap_args + ["--train-seeds", "5", "--seconds", "3", "--splice"])
    sp = dataset.plan(cfg, sa)
    spt = [s for s in sp if s["split"] == "train"]
    ok(len(spt) == 1200 and all(s["upper"] in wide_train and s["upper"] != s["kind"]
                                and s["name"].endswith("-u" + s["upper"]) for s in spt)
       and {s["upper"] for s in spt} == wide_train,
       f"--splice: {len(spt)} training sequences, each with another training family's upper body, named by it")
    ok(not own & {(s["kind"], s["seed"]) for s in spt} and {tuple(s["betas"]) for s in spt} == shapes,
       "--splice: other draws than the plan's own, on its training shapes")
    plain = {s["name"]: s for s in dataset.plan(cfg, dataset.parse_args(ap_args + ["--train-seeds", "5", "--seconds", "3"]))}
    ok(all("upper" not in s and plain[s["name"]]["seed"] == s["seed"] for s in sp if s["split"] == "test"),
       "--splice: the test sequences are the plan's own, unspliced")
    s = next(s for s in spt if s["kind"] == "walk" and s["upper"] == "arms_overhead")
    m = dataset.make_motion(s["kind"], s["seed"], 3, 30, upper=s["upper"])
    low = dataset.make_motion("walk", s["seed"], 3, 30)
    up = dataset.make_motion("arms_overhead", s["seed"], 3, 30)
    lo_cols = np.setdiff1d(np.arange(75), dataset.UPPER_COLS)
    ok(np.array_equal(m[:, lo_cols], low[:, lo_cols]) and np.array_equal(m[:, dataset.UPPER_COLS], up[:, dataset.UPPER_COLS])
       and motions.limit_violation(m) is None,
       f"--splice: {s['name']} walks with the legs and root of its walk and the arms and spine of an arms_overhead draw")


def check_heldout(recipe_path, eval_args, base):
    """`make eval`'s per-seed table is held out from the recipe's training:
    none of its test sequences plays a motion (family and seed: the same
    motion, train/dataset.py's make_motion) that a dataset step of the recipe
    trains on, and its unseen shapes are no training shape."""
    import shlex
    import dataset
    import recipe
    from bundle import read_bundle
    cfg, _ = read_bundle(base)
    _, r = recipe.load(recipe_path)
    motions_seen, shapes_seen, steps = set(), set(), []
    minutes, shapes = {}, {}
    for s in r["step"]:
        if s["tool"] != "dataset":
            continue
        a = dataset.parse_args(["--base", base, "--out", "x"] + shlex.split(recipe._args(r, s)))
        train = [q for q in dataset.plan(cfg, a) if q["split"] == "train"]
        motions_seen |= {(q["kind"], q["seed"]) for q in train}
        shapes_seen |= {tuple(q["betas"]) for q in train}
        for q in train:
            minutes[q["garment"]] = minutes.get(q["garment"], 0) + a.seconds / 60
            shapes.setdefault(q["garment"], set()).add(tuple(q["betas"]))
        steps.append(f"{s['name']} ({len(train)})")
    ok(steps, f"{recipe_path}: the training data of the dataset steps {', '.join(steps) or '(none)'}")
    # issue 31's size, on the recipe's own arguments: at least 20 minutes
    # over at least 8 shapes per garment of the bundle (one no dataset step
    # trains on has none, and fails), no held-out family trained on
    for g in cfg["garments"]:
        m, n = minutes.get(g, 0), len(shapes.get(g, ()))
        ok(m >= 20 - 1e-9 and n >= 8, f"{g}: {m:.1f} minutes of training motion over {n} shapes")
    trained_held = sorted({k for k, _ in motions_seen} & set(motions.HELD_OUT_FAMILIES))
    ok(not trained_held, "no held-out family in the recipe's training data" +
       (f": {', '.join(trained_held)}" if trained_held else ""))
    a = dataset.parse_args(["--base", base, "--out", "x"] + shlex.split(eval_args))
    test = [q for q in dataset.plan(cfg, a) if q["split"] == "test"]
    ok(test, f"make eval's plan: {len(test)} test sequences")
    trained = [q["name"] for q in test if (q["kind"], q["seed"]) in motions_seen]
    ok(not trained, "make eval's sequences play no motion (family and seed) the recipe trains on" + (
       f": {len(trained)} of {len(test)} do, {', '.join(trained[:6])}{' ...' if len(trained) > 6 else ''}"
       if trained else ""))
    shaped = [q["name"] for q in test if q["test_betas"] and tuple(q["betas"]) in shapes_seen]
    ok(not shaped, "make eval's unseen shapes are no training shape" + (
       f": {len(shaped)} sequences are, {', '.join(shaped[:6])}" if shaped else ""))


def check_clips(root):
    """The committed capture clips (issue 31): data/motions (the rows by
    family) and data/motions-final (the final set), at least 3 in all and
    at most 2 MB together; each `drape infer`'s pose file ([T,75] float32,
    finite, at least 2 s at 30 fps, the root starting at the origin on the
    ground plane's x and z) and named with its source in its folder's
    README, which has a licence section; data/motions' index.json titles
    each; no recipe names either folder (evaluation only)."""
    import glob
    import json
    total, n = 0, 0
    for d in ("data/motions", "data/motions-final"):
        with open(os.path.join(root, d, "README.md"), encoding="utf-8") as f:
            readme = f.read()
        ok("## Licence" in readme, f"{d}/README.md has a licence section")
        files = sorted(glob.glob(os.path.join(root, d, "*.npy")))
        for path in files:
            name = os.path.basename(path)
            a = np.load(path)
            ok(a.dtype == np.float32 and a.ndim == 2 and a.shape[1] == 75 and a.shape[0] >= 60 and np.isfinite(a).all()
               and abs(a[0, 72]) < 1e-6 and abs(a[0, 74]) < 1e-6,
               f"{d}/{name}: {a.shape} {a.dtype}, finite, starting at the origin")
            ok(f"`{name}`" in readme, f"{d}/README.md names {name}")
            total += os.path.getsize(path)
            n += 1
        if d == "data/motions":
            with open(os.path.join(root, d, "index.json"), encoding="utf-8") as f:
                index = json.load(f)
            stems = {os.path.basename(p)[:-4] for p in files}
            ok(stems == set(index) and all(v.get("title") for v in index.values()),
               f"{d}/index.json titles exactly its {len(stems)} clips")
    ok(n >= 3 and total <= 2 << 20, f"{n} clips, {total / 1e6:.2f} MB together (at most 2 MB)")
    for r in sorted(glob.glob(os.path.join(root, "train", "recipes", "*.toml"))):
        with open(r, encoding="utf-8") as f:
            text = f.read()
        ok("data/motions" not in text, f"{os.path.relpath(r, root)} reads no capture clip")


def check_recorded(recipe_path, bundle_path):
    """The bundle carries the recipe it was made by (issue 31, part 5): its
    record's text is the recipe file's as it is now, so that an edit of the
    recipe after the bundle was made (or recorded) does not go unnoticed."""
    from bundle import read_bundle
    with open(recipe_path, encoding="utf-8") as f:
        text = f.read()
    sha = hashlib.sha256(text.encode()).hexdigest()
    rec = read_bundle(bundle_path)[0].get("recipe") or {}
    ok(rec.get("text") == text and rec.get("sha256") == sha,
       f"{bundle_path} records {recipe_path} as it is now (sha256 {sha[:16]}; the bundle's {str(rec.get('sha256'))[:16]})")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["body", "garment", "motions", "families", "heldout", "clips", "recorded"])
    ap.add_argument("name", nargs="?")
    ap.add_argument("--resolution", default="default")
    ap.add_argument("--recipe", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "recipes", "default.toml"),
                    help="heldout: the recipe whose dataset steps are the training data; recorded: the recipe")
    ap.add_argument("--eval-args", default="", help="heldout: make eval's train/dataset.py arguments")
    ap.add_argument("--base", default="models/default.safetensors", help="heldout: the bundle the plans draw shapes for; recorded: the bundle")
    a = ap.parse_args(argv)
    try:
        if a.what == "heldout":
            check_heldout(a.recipe, a.eval_args, a.base)
        elif a.what == "recorded":
            check_recorded(a.recipe, a.base)
        elif a.what == "clips":
            check_clips(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        elif a.what == "body":
            check_body()
        elif a.what == "motions":
            check_motions()
        elif a.what == "families":
            check_families()
        else:
            if a.name not in assets.GARMENTS:
                ap.error(f"garment must be one of {', '.join(assets.GARMENTS)}")
            check_garment(a.name, a.resolution)
    except Failed as e:
        print(f"FAIL {e}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
