"""Training modules A and B end to end against the `sim` teacher.

    # 1. a base bundle: procedural body + garments, an untrained network
    /usr/bin/python3 train/train.py init --preset default --garments skirt,dress,tshirt --out BASE.safetensors \
        [--set bones=64 --set hidden=256 ...]
    # 2. the teacher dataset (train/dataset.py) on that base
    # 3. training; writes OUT (the bundle of docs/design.md §3) at every checkpoint
    /usr/bin/python3 train/train.py fit --base BASE --data DIR --out MODEL.safetensors \
        [--steps 2000] [--frames 8] [--lr 1e-3] [--weight-decay 0] [--ckpt DIR/ckpt.pt] [--resume] [--stop-at STEP] \
        [--w-lap 1] [--w-pen 1] [--pen-nn teacher|pred] [--w-edge 0] [--w-area 0] [--w-phys 0] [--device cpu|cuda] [--threads N] \
        [--garment-weights dress=2]   (sample a garment's sequences more often)
        [--term-scale tshirt:pen=4,tshirt:edge=2]   (one garment's loss term weighted more, or less)
    # editing a bundle (attach sets, arms, graft, refine): train/edit_bundle.py
    # the whole pipeline of the shipped model: train/recipe.py, train/recipes/default.toml

`init --set history=16,8,4,2,1,0` gives module A a longer pose history than
docs/design.md §2.4's three frames (reference.history; the bundle config's "history",
docs/conventions.md "Pose history"): PyTorch trains and runs it, and so does
the C runtime, up to 8 frames reaching 63 back.

Loss per step (one identity, a batch of frames of one training sequence):
    L = |x − x*|² (mean over vertices, m²; --pos-loss robust: 2s·(√(|x − x*|² + ε²) − ε), s 25 mm, ε 1 mm;
                   robust:tshirt on that garment's sequences alone)
      + w_lap · |L x − L x*|²          (uniform Laplacian, prediction vs teacher)
      + w_pen · collision(x) / V       (cubic penalty against the posed body, physics.py; each vertex
                                        against the body vertex nearest the teacher's vertex, or with
                                        --pen-nn pred nearest its own, which the collision metric counts;
                                        it acts within --pen-margin of the body, 5 mm)
      + w_edge · mean_e ((|e(x)| − |e(x*)|) / l0_e)²   (edge lengths, prediction vs teacher)
      + w_area · mean_f ((A_f(x) − A_f(x*)) / A0_f)²   (face areas, prediction vs teacher; off by default)
      + w_phys · (stretch + bending) / V   (physics.py, HOOD's StVK and dihedral terms; off by default)
With --through-refine, x is what the runtime serves where the bundle refines
the garment (edit_bundle.py refine): the network's positions after the refine
step, differentiated through it (its nearest body vertices held fixed).
The network starts at plain skinning: the last layers of Bone-Net, the conv
stack, the Δw head and the FiLM modulator are zero, so the first prediction
is LBS and training learns corrections. in_mean/in_std are the Bone-Net input
statistics over the training set. Prints a progress line with the losses,
the mean vertex error (mm) and the ETA; checkpoints are atomic and --resume
continues from one with the batch sampler's state, drawing the batches the
run would have drawn had it gone on, so a fit cut off and resumed makes the
network an uninterrupted one makes; --stop-at STEP cuts a run off at STEP on
purpose.
"""
import argparse
import json
import os
import sys
import time

import numpy as np
import torch
from scipy.spatial import cKDTree

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import assets  # noqa: E402
import physics  # noqa: E402
from bundle import read_bundle, write_bundle  # noqa: E402
from make_bundle import PRESETS, asset_tensors, init_network  # noqa: E402
import reference  # noqa: E402
from reference import Drape, frame_windows, posed_body  # noqa: E402

# Module B's garment→body neighbours depend only on the identity's shape (no
# gradient flows through indices): computed once per identity, not per step.
_knn_cache = {}
_knn_exact = reference.knn_body


def _knn_cached(x, v, k, chunk=1024):
    key = (x.detach().cpu().numpy().tobytes(), v.detach().cpu().numpy().tobytes(), k)
    h = hash(key)
    if h not in _knn_cache:
        _knn_cache[h] = _knn_exact(x.detach(), v.detach(), k, chunk)
    return _knn_cache[h]


reference.knn_body = _knn_cached

# Network sizes of the models this pipeline trains, with the asset resolution
# they use. "default": models/default.safetensors (docs/design.md §2.6 scaled down so
# the CPU backend runs one avatar far above 30 fps on 2 cores).
TRAIN_PRESETS = {
    "tiny": (dict(PRESETS["tiny"]), "tiny"),
    "default": (dict(bones=32, skin_k=8, hidden=128, z_dim=32, pose_dim=8, feat_dim=8, uv_size=[64, 64],
                     conv=[16, 32, 32, 16, 3], latent=32, blocks=2, knn=4), "default"),
    "small": (dict(PRESETS["small"]), "small"),
}
# The last layer of each correction path: zero at init so the model starts as LBS.
ZERO_AT_INIT = ("bonenet.3", "heads.dw.1", "modulator.2")

_identity = Drape.identity.__wrapped__  # the reference's forward passes, with autograd
_frames = Drape.frames.__wrapped__


def cmd_init(a):
    net_cfg, resolution = TRAIN_PRESETS[a.preset]
    net_cfg = dict(net_cfg)
    for kv in a.set:  # network sizes over the preset's: --set bones=64 --set conv=16,32,3
        k, _, v = kv.partition("=")
        if k == "history":  # module A's frames, offsets back from t (reference.history)
            net_cfg[k] = [2, 1, 0]
        if k not in net_cfg or not v:
            raise SystemExit(f"train init: --set {kv}: expected KEY=VALUE with KEY one of {', '.join(sorted(net_cfg))}")
        try:
            net_cfg[k] = [int(x) for x in v.split(",")] if isinstance(net_cfg[k], list) else int(v)
        except ValueError:
            raise SystemExit(f"train init: --set {kv}: not an integer (list)")
        h = net_cfg.get("history", [2, 1, 0])
        if h[-1] != 0 or any(x <= y for x, y in zip(h, h[1:])):
            raise SystemExit(f"train init: --set {kv}: offsets back from t, decreasing, the last 0 (16,8,4,2,1,0)")
        if not 2 <= len(h) <= 8 or h[0] > 63:  # the runtime's bounds (docs/conventions.md, "history")
            raise SystemExit(f"train init: --set {kv}: 2 to 8 frames, reaching at most 63 frames back")
    rng = np.random.default_rng(a.seed)
    cfg = {"format_version": 1, "fps": 30, "betas": assets.NUM_BETAS, **net_cfg, "beta_range": [-3, 3],
           "garments": a.garments.split(","), "up": "y", "units": "m", "preset": a.preset, "seed": a.seed,
           "weights_init": "lbs"}
    t = asset_tensors(cfg, resolution, rng)
    net = init_network(cfg, rng, zero=False)
    last_conv = f"conv.{len(cfg['conv']) - 1}"
    for k in net:
        if k.rsplit(".", 1)[0] in ZERO_AT_INIT + (last_conv,):
            net[k][:] = 0
    write_bundle(a.out, cfg, {**t, **net})
    print(f"train init: {a.out}: preset {a.preset} (assets '{resolution}'), garments "
          + ", ".join(f"{g} {len(t[f'garment.{g}.rest'])} verts" for g in cfg["garments"])
          + f", body {len(t['body.v_template'])} verts", file=sys.stderr)
    return 0


class Data:
    """The teacher sequences of a dataset split, in memory."""

    def __init__(self, roots, split, garments):
        # roots: one dataset directory, or several joined by commas (their
        # sequences pooled: more shapes from another plan's --seed)
        self.seqs, self.teachers = [], []
        for root in roots.split(","):
            with open(os.path.join(root, "manifest.json")) as f:
                man = json.load(f)
            self.teachers.append(man.get("teacher", {}))
            for s in man["sequences"]:
                if s["split"] != split or s["garment"] not in garments:
                    continue
                p = os.path.join(root, "seq", s["name"])
                if not os.path.exists(p + ".sim.npy"):
                    continue
                s = dict(s, poses=np.load(p + ".poses.npy").astype(np.float32), sim=np.load(p + ".sim.npy"))
                self.seqs.append(s)
        if not self.seqs:
            raise SystemExit(f"train: no finished '{split}' sequences in {roots}")


def same_teacher(bundle_teacher, data_teachers, garments):
    """Whether the bundle's teacher settings (docs/design.md §3.3) are those
    every dataset was made with, for these garments: each one's flags (the
    common then its own, the last of a flag winning, as `drape sim garment`
    reads them) and its prelude."""
    if bundle_teacher is None:
        return False
    def flags(args, own, g):
        return (args or "").split() + (own or {}).get(g, "").split()

    def settings(tokens):  # {flag: value}, the last one given
        out, it = {}, iter(tokens)
        for tok in it:
            k, eq, v = tok.partition("=")
            out[k] = v if eq else next(it, "")
        return out
    for t in data_teachers:
        for g in garments:
            pre = (t.get("garment_prelude") or {}).get(g)
            # the data's base may have carried teacher settings: its flags came first
            base = t.get("bundle_teacher") or {}
            made = flags(base.get("args"), base.get("garments"), g) + flags(t.get("sim_args"),
                                                                               t.get("garment_sim_args"), g)
            if (settings(made) != settings(flags(bundle_teacher.get("args"), bundle_teacher.get("garments"), g))
                    or pre != (bundle_teacher.get("prelude") or {}).get(g)):
                return False
    return True


def laplacian(x, edges, deg):
    """Uniform Laplacian: mean of the neighbours minus the vertex, x [N,V,3]."""
    s = torch.zeros_like(x)
    s.index_add_(1, edges[:, 0], x[:, edges[:, 1]])
    s.index_add_(1, edges[:, 1], x[:, edges[:, 0]])
    return s / deg[None, :, None] - x


def batch(seq, rng, n, device, offsets):
    """n random frames of a sequence: windows (poses [n,F,72], trans [n,F,3]) of
    the frames t - offsets, and targets [n,V,3]."""
    P, Tr = frame_windows(seq["poses"], offsets)
    idx = rng.choice(len(P), size=min(n, len(P)), replace=False)
    as_t = lambda x: torch.from_numpy(np.ascontiguousarray(x)).to(device)
    return as_t(P[idx]), as_t(Tr[idx]), as_t(seq["sim"][idx]), idx


def _nearest(body, x):
    """Nearest body vertex of each x vertex [V] (one frame, no gradient)."""
    return torch.from_numpy(cKDTree(body.detach().cpu().numpy()).query(x.detach().cpu().numpy())[1].astype(np.int64))


def body_nn(seq, idx, body, tgt):
    """Nearest posed-body vertex of each teacher vertex, per frame [n,V];
    cached per (sequence, frame): the teacher and the body do not change."""
    cache = seq.setdefault("_nn", {})
    out = []
    for j, t in enumerate(idx):
        if t not in cache:
            cache[t] = _nearest(body[j], tgt[j])
        out.append(cache[t])
    return torch.stack(out).to(tgt.device)


def input_stats(model, data, rng, n=256):
    xs = []
    with torch.no_grad():
        for s in data.seqs:
            ident = _identity(model, s["garment"], s["betas"], lbs_only=True)
            P, Tr, _, _ = batch(s, rng, max(4, n // len(data.seqs)), model.device, reference.history(model.cfg))
            xs.append(_frames(model, ident, P, Tr, lbs_only=True)["bonenet_in"].double().cpu())
    x = torch.cat(xs)
    return x.mean(0).float(), torch.clamp(x.std(0), min=1e-3).float()


TERMS = ("pos", "lap", "edge", "area", "pen", "phys")


def term_scales(spec, garments):
    """--term-scale tshirt:pen=4,tshirt:edge=2 as {garment: {term: scale}}: the
    shirt's collisions and strain raised without the skirt's and dress's,
    which share the network."""
    out = {}
    for kv in (x for x in spec.split(",") if x):
        g, _, rest = kv.partition(":")
        term, _, v = rest.partition("=")
        try:
            w = float(v)
        except ValueError:
            w = -1.0
        if g not in garments or term not in TERMS or not (w >= 0 and np.isfinite(w)):
            raise SystemExit(f"train: --term-scale {kv}: expected GARMENT:TERM=SCALE with GARMENT one of "
                             f"{', '.join(garments)}, TERM one of {', '.join(TERMS)} and SCALE finite, >= 0")
        out.setdefault(g, {})[term] = w
    return out


def _areas(x, faces):
    """Face areas [..., F] of positions x [..., V, 3]."""
    a, b, c = x[..., faces[:, 0], :], x[..., faces[:, 1], :], x[..., faces[:, 2], :]
    return 0.5 * torch.linalg.cross(b - a, c - a, dim=-1).norm(dim=-1)


def losses(model, seq, P, Tr, tgt, idx, a, tables):
    ident = _identity(model, seq["garment"], seq["betas"])
    out = _frames(model, ident, P, Tr)
    x = out["world"]
    edges, deg, _ = tables[seq["garment"]]
    # the posed body, once per step, for the refine step and the penetration term
    posed = posed_body(model, ident, P[:, -1], Tr[:, -1]) if a.through_refine or a.w_pen or a.w_phys else None
    if a.through_refine:
        # the losses on what is served: the bundle's refine step after module
        # A, differentiated through (docs/training-log.md, "The refine step, and
        # training through it"); the nearest body vertices by k-d tree, held fixed
        x = reference.refine_frames(model, ident, x, None, None, posed=posed,
                                    nearest=lambda y, b: _nearest(b, y).to(y.device))
    d2 = ((x - tgt) ** 2).sum(-1)
    if seq["garment"] not in a.robust_garments:
        L = {"pos": d2.mean()}
    else:
        # the distance itself (pseudo-Huber, 1 mm core), scaled so its
        # gradient equals the squared loss's at 25 mm: large errors (a running
        # dress) no longer outweigh small ones (an idle skirt), and this is
        # the quantity the evaluation's mean error measures
        eps, s = 1e-3, 0.025
        L = {"pos": 2 * s * (torch.sqrt(d2 + eps * eps) - eps).mean()}
    if a.w_lap:
        L["lap"] = ((laplacian(x, edges, deg) - laplacian(tgt, edges, deg)) ** 2).sum(-1).mean()
    if a.w_edge:
        # each edge's length against the teacher's, relative to its rest
        # length (docs/design.md §4's edge error; the teacher's own length can be ~0
        # where it pinches cloth in a crease): the position loss lets a
        # vertex err independently of its neighbours, and this is what that costs
        l0 = (ident["g"][edges[:, 1]] - ident["g"][edges[:, 0]]).norm(dim=-1).detach()
        lx = (x[:, edges[:, 1]] - x[:, edges[:, 0]]).norm(dim=-1)
        lt = (tgt[:, edges[:, 1]] - tgt[:, edges[:, 0]]).norm(dim=-1)
        L["edge"] = (((lx - lt) / l0) ** 2).mean()
    if a.w_area:
        # each face's area against the teacher's, relative to its rest area
        # (docs/design.md §4's area error): the edge term leaves a face free to shear
        faces = model.garments[seq["garment"]]["faces"]
        A0 = _areas(ident["g"], faces).detach().clamp(min=1e-10)
        L["area"] = (((_areas(x, faces) - _areas(tgt, faces)) / A0) ** 2).mean()
    if a.w_pen or a.w_phys:
        body, normals = posed
        # the body vertex nearest the teacher's vertex (cached), or nearest
        # the prediction's (what the collision metric counts; found per step
        # with a k-d tree, not physics.collision's cdist: 0.47 s a step
        # against 1.2 on the default model)
        nn = (body_nn(seq, idx, body, tgt) if a.pen_nn == "teacher"
              else torch.stack([_nearest(body[j], x[j]) for j in range(len(x))]).to(x.device))
        L["pen"] = physics.collision(x, body, normals, eps=a.pen_margin, nn=nn) / x.shape[1]  # per vertex
    if a.w_phys:
        # the cloth's own energies, per vertex: stretching and bending pull
        # a prediction toward an unstretched, smooth garment without the
        # teacher (gravity and inertia, the other HOOD terms, are in
        # physics.Cloth for self-supervised runs; with a teacher they only
        # bias toward lower, stiller garments)
        if "_cloth" not in seq:  # rest state: this identity's garment g(β)
            seq["_cloth"] = physics.Cloth(ident["g"].detach(), model.garments[seq["garment"]]["faces"])
        cloth = seq["_cloth"]
        L["phys"] = (cloth.stretch(x) + cloth.bending(x)) / x.shape[1]
    ts = a.term_scales.get(seq["garment"], {})
    total = (ts.get("pos", 1.0) * L["pos"] + sum(ts.get(k, 1.0) * w * L[k] for k, w in
                                                (("lap", a.w_lap), ("edge", a.w_edge), ("area", a.w_area), ("pen", a.w_pen),
                                                 ("phys", a.w_phys)) if k in L))
    err_mm = (x - tgt).norm(dim=-1).mean() * 1000
    return total, L, err_mm


def export(model, base_t, cfg, path, info):
    # no input range: the base's would be stale after training (cmd_fit)
    t = {k: v for k, v in base_t.items() if not k.endswith(("bonenet.in_min", "bonenet.in_max"))}
    for k, v in model.network_tensors().items():
        t[k] = v.detach().cpu().numpy().astype(np.float32)
    cfg = dict(cfg, weights_init="trained", training=info)
    write_bundle(path + ".tmp", cfg, t)
    os.replace(path + ".tmp", path)


def robust_garments(spec, garments):
    """--pos-loss: mse, robust (every garment) or robust:G,... (those
    garments; the others keep the squared loss) -> the set of garments whose
    position loss is the robust one."""
    kind, _, names = spec.partition(":")
    chosen = set(names.split(",")) if names else set(garments)
    if kind not in ("mse", "robust") or (kind == "mse" and names) or chosen - set(garments) or "" in chosen:
        raise SystemExit(f"train: --pos-loss {spec}: expected mse, robust or robust:GARMENT,... with GARMENT one of "
                         f"{', '.join(garments)}")
    return chosen if kind == "robust" else set()


def cmd_fit(a):
    if not 0 <= a.pen_margin <= 0.05:
        raise SystemExit(f"train: --pen-margin {a.pen_margin}: expected a margin in [0, 0.05] m")
    if not 0 <= a.weight_decay <= 100:  # NaN fails too
        raise SystemExit(f"train: --weight-decay {a.weight_decay}: expected a decay in [0, 100]")
    if a.stop_at and not (a.ckpt and 0 < a.stop_at < a.steps):
        raise SystemExit(f"train: --stop-at {a.stop_at}: expected a step in [1, --steps {a.steps}) and --ckpt")
    torch.manual_seed(a.seed)
    if a.threads:
        torch.set_num_threads(a.threads)
    device = a.device if a.device != "auto" else ("cuda" if torch.cuda.is_available() else "cpu")
    cfg, base_t = read_bundle(a.base)
    model = Drape(cfg, base_t, device)
    # a range of Bone-Net's inputs (docs/design.md §3.3) is what the base saw:
    # training on more would clamp the new motions to it; it goes, and
    # train/edit_bundle.py input-range makes the trained bundle's own
    ranged = [n for n in [model.net, *model.own.values()] if n.bonenet.in_min is not None]
    for n in ranged:
        n.bonenet.in_min = n.bonenet.in_max = None
    if ranged:
        print("train: the base's Bone-Net input range is dropped (train/edit_bundle.py input-range makes the "
              "trained bundle's)", file=sys.stderr)
    cfg = {k: v for k, v in cfg.items() if k != "input_range"}
    print(f"train: fitting on {device}" + (f" ({torch.cuda.get_device_name()})" if device.startswith("cuda") else
                                          f" ({torch.get_num_threads()} threads)"), file=sys.stderr)
    garments = a.garments.split(",") if a.garments else cfg["garments"]
    train = Data(a.data, "train", garments)
    print(f"train: {len(train.seqs)} training sequences from {a.data}", file=sys.stderr)
    if "teacher" in cfg and not same_teacher(cfg["teacher"], train.teachers, garments):
        # trained against another teacher now: the base's settings would be wrong
        cfg = {k: v for k, v in cfg.items() if k != "teacher"}
        print("train: the base's teacher settings are not the data's: dropped (train/edit_bundle.py teacher "
              "writes them)", file=sys.stderr)
    a.term_scales = term_scales(a.term_scale, garments)
    a.robust_garments = robust_garments(a.pos_loss, garments)
    refined = sorted(g for g in garments if cfg.get("refine", {}).get(g, {}).get("iters", 0) > 0)
    if a.through_refine and not refined:
        raise SystemExit(f"train: --through-refine: {a.base} refines none of {', '.join(garments)} (edit_bundle.py refine)")
    if a.through_refine:
        print(f"train: the losses on the refined positions of {', '.join(refined)}", file=sys.stderr)
    rng = np.random.default_rng(a.seed)
    tables = {}
    for g in garments:
        G = model.garments[g]
        e = model.static(g)["g_edges"].to(device)
        deg = torch.zeros(len(G["rest"]), device=device)
        deg.index_add_(0, e.reshape(-1), torch.ones(e.numel(), device=device))
        tables[g] = (e, deg.clamp(min=1), None)
    # the shared network and the garments' own (graft): a garment's loss
    # reaches only the network it runs
    params = list(model.net.parameters()) + list(model.own.parameters())
    if a.weight_decay > 0:
        # decoupled decay on the weight matrices only (biases and other
        # vectors kept): a weight the data does not keep pulling at drifts
        # back to zero, and the zero-initialised last layers towards plain
        # skinning
        decay = [p for p in params if p.dim() >= 2]
        keep = [p for p in params if p.dim() < 2]
        opt = torch.optim.AdamW([{"params": decay, "weight_decay": a.weight_decay},
                                 {"params": keep, "weight_decay": 0.0}], lr=a.lr)
    else:
        opt = torch.optim.Adam(params, lr=a.lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=a.steps, eta_min=a.lr * 0.05)
    step = 0
    if a.resume and a.ckpt and os.path.exists(a.ckpt):
        ck = torch.load(a.ckpt, map_location=device)
        model.net.load_state_dict(ck["net"])
        model.own.load_state_dict(ck.get("own", {}))
        opt.load_state_dict(ck["opt"])
        sched.load_state_dict(ck["sched"])
        step = ck["step"]
        if "rng" in ck:
            rng.bit_generator.state = ck["rng"]
        else:  # a checkpoint of an earlier train.py: a sampler seeded from it, as that one resumed
            rng = np.random.default_rng(ck["seed_state"])
        print(f"train: resumed at step {step} from {a.ckpt}", file=sys.stderr)
    elif cfg.get("weights_init") == "trained":
        print("train: fine-tuning a trained bundle: its input normalisation is kept", file=sys.stderr)
    else:
        mean, std = input_stats(model, train, rng)
        for net in [model.net, *model.own.values()]:
            net.bonenet.in_mean.copy_(mean.to(device))
            net.bonenet.in_std.copy_(std.to(device))
    # a fixed batch (the same frames every time): its loss before and after
    # this run says whether training helped, independent of batch sampling
    fixed_rng = np.random.default_rng(12345)
    offsets = reference.history(cfg)
    fixed = [(sq, *batch(sq, fixed_rng, a.frames, device, offsets)) for sq in train.seqs[:4]]

    def fixed_loss():
        with torch.no_grad():
            return float(np.mean([float(losses(model, sq, P, Tr, tgt, idx, a, tables)[0])
                                  for sq, P, Tr, tgt, idx in fixed]))

    before = fixed_loss()
    nets = (model.net, model.own)
    for n in nets:
        n.train()
    t0, first, hist = time.time(), step, []
    info = {"steps": a.steps, "frames_per_step": a.frames, "lr": a.lr, "w_lap": a.w_lap, "w_pen": a.w_pen,
            "w_edge": a.w_edge, "w_area": a.w_area, "pos_loss": a.pos_loss, "pen_nn": a.pen_nn, "pen_margin": a.pen_margin,
            "through_refine": a.through_refine, "w_phys": a.w_phys, "term_scale": a.term_scale,
            "train_sequences": len(train.seqs),
            "data": ",".join(os.path.abspath(r) for r in a.data.split(","))}
    if a.weight_decay > 0:  # recorded only where used: the bundles made without it keep their bytes
        info["weight_decay"] = a.weight_decay
    # sequence sampling: uniform, or each garment's sequences weighted (--garment-weights dress=2)
    # (the uniform draw stays rng.integers, so runs without weights repeat earlier ones)
    try:
        gw = {k: float(v) for k, v in (kv.split("=") for kv in a.garment_weights.split(",") if kv)}
    except ValueError:
        gw = {"": 0}
    if set(gw) - set(garments) or any(not w > 0 for w in gw.values()):
        raise SystemExit(f"train: --garment-weights {a.garment_weights}: expected GARMENT=WEIGHT,... with WEIGHT > 0 "
                         f"and GARMENT one of {', '.join(garments)}")
    sp = np.array([gw.get(s["garment"], 1.0) for s in train.seqs])
    sp /= sp.sum()
    while step < a.steps:
        seq = train.seqs[rng.choice(len(train.seqs), p=sp) if gw else rng.integers(len(train.seqs))]
        P, Tr, tgt, idx = batch(seq, rng, a.frames, device, offsets)
        total, L, err = losses(model, seq, P, Tr, tgt, idx, a, tables)
        opt.zero_grad()
        total.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        sched.step()
        step += 1
        hist.append((float(total), float(err)))
        if step % a.log_every == 0 or step == a.steps:
            rate = (time.time() - t0) / (step - first)
            tl, te = np.mean(hist, 0)
            hist = []
            terms = " ".join(f"{k} {float(v):.3g}" for k, v in L.items())
            print(f"train: step {step}/{a.steps} loss {tl:.4g} ({terms}) err {te:.2f} mm  "
                  f"{rate:.3g} s/step  eta {(a.steps - step) * rate / 60:.1f} min", file=sys.stderr, flush=True)
        if a.ckpt and (step % a.ckpt_every == 0 or step == a.steps or step == a.stop_at):
            # the batch sampler's whole state: a fit cut off and resumed draws the batches an
            # uninterrupted one does
            torch.save({"net": model.net.state_dict(), "own": model.own.state_dict(), "opt": opt.state_dict(),
                        "sched": sched.state_dict(), "step": step, "rng": rng.bit_generator.state},
                       a.ckpt + ".tmp")
            os.replace(a.ckpt + ".tmp", a.ckpt)
            for n in nets:
                n.eval()
            export(model, base_t, cfg, a.out, dict(info, step=step))
            for n in nets:
                n.train()
        if step == a.stop_at:
            print(f"train: stopped at step {step} of {a.steps} (--stop-at; --resume goes on)", file=sys.stderr)
            return 0
    for n in nets:
        n.eval()
    after = fixed_loss()
    export(model, base_t, cfg, a.out, dict(info, step=step, fixed_loss_before=before, fixed_loss_after=after))
    print(f"train: fixed-batch loss before {before:.6g} after {after:.6g}", file=sys.stderr)
    print(f"train: wrote {a.out} after {step} steps ({(time.time() - t0) / 60:.1f} min)", file=sys.stderr)
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("init")
    p.add_argument("--preset", choices=sorted(TRAIN_PRESETS), default="default")
    p.add_argument("--garments", default="skirt,miniskirt")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a network size of the preset (bones, hidden, conv=16,32,3, ...)")
    p.add_argument("--out", required=True)
    p = sub.add_parser("fit")
    p.add_argument("--base", required=True)
    p.add_argument("--data", required=True, help="a dataset directory (train/dataset.py), or several joined by commas")
    p.add_argument("--out", required=True)
    p.add_argument("--garments", default="")
    p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--frames", type=int, default=8)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--weight-decay", type=float, default=0.0, metavar="WD",
                   help="AdamW's decoupled decay on the weight matrices (0: plain Adam)")
    p.add_argument("--w-lap", type=float, default=1.0)
    p.add_argument("--w-pen", type=float, default=0.1)
    p.add_argument("--w-edge", type=float, default=0.0)
    p.add_argument("--w-area", type=float, default=0.0)
    p.add_argument("--pos-loss", default="mse", metavar="mse|robust|robust:G,...",
                   help="the position loss: squared distance, or the robust one on every garment or on those named")
    p.add_argument("--pen-nn", choices=("teacher", "pred"), default="teacher")
    p.add_argument("--pen-margin", type=float, default=0.005,
                   help="m: the penetration term acts on vertices closer than this to the body (its ε)")
    p.add_argument("--w-phys", type=float, default=0.0)
    p.add_argument("--through-refine", action="store_true",
                   help="the losses on the refined positions, where the bundle refines the garment (edit_bundle.py refine)")
    p.add_argument("--garment-weights", default="", metavar="G=W,...",
                   help="sample garment G's sequences W times as often (default: every sequence alike)")
    p.add_argument("--term-scale", default="", metavar="G:TERM=S,...",
                   help="multiply loss term TERM (pos, lap, edge, area, pen, phys) by S on garment G's sequences")
    p.add_argument("--ckpt", default="")
    p.add_argument("--ckpt-every", type=int, default=100)
    p.add_argument("--resume", action="store_true")
    p.add_argument("--stop-at", type=int, default=0, metavar="STEP",
                   help="stop after STEP steps with a checkpoint, as a run cut off there (needs --ckpt)")
    p.add_argument("--log-every", type=int, default=10)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--device", default="auto")
    p.add_argument("--threads", type=int, default=0)
    a = ap.parse_args(argv)
    return {"init": cmd_init, "fit": cmd_fit}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
