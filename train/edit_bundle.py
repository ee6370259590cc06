"""Edit a bundle: copies of a bundle with one thing changed, no training.

    # a copy of a bundle whose garment the simulator holds at more than its
    # top: the hem and, for a garment with sleeves, the cuffs (bands in m)
    /usr/bin/python3 train/edit_bundle.py attach --base IN --out OUT --garment tshirt --hem 0.01 [--cuffs 0.01]
    # a copy of a bundle whose shape space moves the arms further out with
    # girth (β1) and shoulder width (β2), m per unit (assets.arms_out)
    /usr/bin/python3 train/edit_bundle.py arms --base IN --out OUT --girth 0.005 --shoulders -0.006
    # a copy of BASE whose garment runs the network of another bundle of the
    # same body and garments, one trained on that garment alone
    # (fit --garments tshirt): a network of its own beside the shared one;
    # the garment is then trained on this body (no longer in the config's
    # "untrained" nor "stale_networks")
    /usr/bin/python3 train/edit_bundle.py graft --base BASE --garment tshirt --net-from TSHIRT.safetensors --out OUT
    # ... with --asset: the garment itself (its mesh, UVs and rig) taken from that bundle too, for a
    # garment remade (a changed cut) and trained on its own; the body must still be the same
    # a copy of BASE whose garment is refined after module A (runtime/refine.h), or no longer is (--iters 0)
    /usr/bin/python3 train/edit_bundle.py refine --base BASE --garment tshirt [--iters 10 --stiffness 1 --margin 0.003 --rho 0] --out OUT
    # a copy of BASE that carries the teacher it was trained against (docs/design.md §3.3): the
    # `drape sim garment` flags, common and per garment, and a garment's worn-in prelude (train/'s)
    /usr/bin/python3 train/edit_bundle.py teacher --base BASE --out OUT \
        --from-plan '--sim-args "--iters 8" --garment-sim-args "tshirt=--max-disp 0.01" --garment-prelude tshirt=walk:1'
    # ... or one garment's own flags added to what it has, the rest kept (a garment's own stage,
    # train/recipes/garment.toml)
    /usr/bin/python3 train/edit_bundle.py teacher --base BASE --out OUT --garment cape [--args="--max-disp 0.01"]
    # a copy of BASE with the range of Bone-Net's raw inputs over the training frames of one or
    # more dataset plans (train/dataset.py's flags), per network (docs/design.md §3.3)
    /usr/bin/python3 train/edit_bundle.py input-range --base BASE --out OUT --plan 'DATASET FLAGS' [--plan ...] \
        [--margin 0.0] [--garments cape]   (only those garments' own networks; the other ranges kept)
    # a copy of BASE whose garment the physics mode pulls towards its skinned place at K 1/s² instead
    # of the served settings' 10 (the config's "physics"; docs/server.md, "Physics"); --pull -1: the served one
    /usr/bin/python3 train/edit_bundle.py physics --base BASE --out OUT --garment tshirt --pull 640 [--garment G --pull K ...]
    # (teacher --none, input-range --none: without them)
    /usr/bin/python3 train/edit_bundle.py show --base BASE   (its teacher and ranges)

train/train.py trains; these steps of the pipeline (train/recipes/default.toml)
change a bundle's data or config around the training.

The teacher goes into the config as "teacher": {"args", "garments",
"prelude"}; `drape sim garment` without flags then uses that garment's
(common flags, then its own), and train/eval.py simulates with them and the
prelude.

The input range needs no teacher run: Bone-Net's inputs depend only on the
poses, the body shape and the garment's bones, so every training frame of
the plans is made again (train/motions.py, the plan's shapes) and run
through the reference's module A (plain skinning, which computes the same
inputs). A garment's frames count towards the network it runs in the
bundle: its own (garment.<g>.net.bonenet.in_min/in_max) or the shared one
(bonenet.in_min/in_max). Each dimension's [min, max] is widened by --margin
times its width on both sides. The runtimes clamp every input to it before
standardizing, so a pose far outside what the network saw (a 40 rad/s
spin) reaches it as the nearest thing it did see.
"""
import argparse
import json
import os
import shlex
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import assets  # noqa: E402
import dataset  # noqa: E402
import reference  # noqa: E402
from bundle import read_bundle, write_bundle  # noqa: E402
from reference import Drape, frame_windows, history  # noqa: E402


def cmd_attach(a):
    cfg, t = read_bundle(a.base)
    if a.garment not in cfg["garments"]:
        raise SystemExit(f"edit_bundle attach: no garment {a.garment!r} in {a.base} (it has {', '.join(cfg['garments'])})")
    for name, band in (("hem", a.hem), ("cuffs", a.cuffs)):
        if not 0 <= band <= 0.1:
            raise SystemExit(f"edit_bundle attach: --{name} {band}: expected a band in [0, 0.1] m")
    if a.cuffs and a.garment not in assets.SLEEVED:
        raise SystemExit(f"edit_bundle attach: --cuffs: {a.garment} has no sleeves "
                         f"(garments with sleeves: {', '.join(assets.SLEEVED)})")
    key = f"garment.{a.garment}.attach"
    rest = np.asarray(t[f"garment.{a.garment}.rest"], np.float64)
    old = t[key] if key in t else assets.attach_vertices(rest)
    more = assets.attach_more(rest, a.hem, a.cuffs)
    t[key] = np.union1d(old, more).astype(np.int32)
    write_bundle(a.out, cfg, t)
    print(f"edit_bundle attach: {a.out}: {a.garment} attached at {len(t[key])} vertices ({len(old)} before; "
          f"hem band {a.hem} m, cuff band {a.cuffs} m)", file=sys.stderr)
    return 0


def cmd_arms(a):
    cfg, t = read_bundle(a.base)
    for name, v in (("girth", a.girth), ("shoulders", a.shoulders)):
        if not -0.05 <= v <= 0.05:
            raise SystemExit(f"edit_bundle arms: --{name} {v}: expected a shift in [-0.05, 0.05] m per unit of beta")
    D = t["body.shapedirs"]
    if D.shape[2] != assets.NUM_BETAS:
        raise SystemExit(f"edit_bundle arms: {a.base}: the body has {D.shape[2]} betas, not the procedural body's "
                         f"{assets.NUM_BETAS} (girth beta 1, shoulders beta 2)")
    extra = assets.arms_out(t["body.v_template"], t["body.weights"], a.girth, a.shoulders)
    t["body.shapedirs"] = (D + extra).astype(D.dtype)
    write_bundle(a.out, cfg, t)
    print(f"edit_bundle arms: {a.out}: arms out {a.girth} m per unit of girth, {a.shoulders} m per unit of shoulder "
          f"width (at most {np.abs(extra).max():.3f} m per unit)", file=sys.stderr)
    return 0


def same_skinning(idx, other, w0):
    """Whether two skin_idx tables name the same bones for every vertex, in an
    order that differs only between bones of equal weight (w0 the same in
    both bundles: checked with the other tensors). A remake of the same
    garment may list tied bones in another order (4 of the T-shirt's 2,087
    vertices did); every use of the table is per (vertex, bone) pair, so the
    skinning is the same."""
    if w0 is None or idx.shape != other.shape or w0.shape != idx.shape:
        return False
    if np.array_equal(idx, other):
        return True
    rows = np.nonzero((idx != other).any(1))[0]
    for v in rows:
        a = sorted(zip(w0[v].tolist(), idx[v].tolist()))
        b = sorted(zip(w0[v].tolist(), other[v].tolist()))
        if a != b:
            return False
    return True


def cmd_graft(a):
    """A copy of BASE whose garment G runs NET's network (its own for G, if
    NET has one, else its shared one) instead of BASE's shared one: a network
    trained on G alone (fit --garments G) served beside the others."""
    cfg, t = read_bundle(a.base)
    ncfg, nt = read_bundle(a.net_from)
    g = a.garment
    if g not in cfg["garments"] or g not in ncfg["garments"]:
        raise SystemExit(f"edit_bundle graft: {g!r} must be a garment of both {a.base} and {a.net_from}")
    names = reference.network_names(cfg, t["heads.dw.0.weight"].shape[0])
    src = f"garment.{g}.net." if f"garment.{g}.net.bonenet.0.weight" in nt else ""
    for k, shape in names.items():
        if src + k not in nt or tuple(nt[src + k].shape) != shape:
            raise SystemExit(f"edit_bundle graft: {a.net_from}: tensor {src + k!r} missing or not of shape {list(shape)} "
                             f"(the networks must have the same sizes)")
    if reference.history(cfg) != reference.history(ncfg):
        raise SystemExit(f"edit_bundle graft: {a.net_from}: its pose history differs from {a.base}'s")
    # the network must have been trained on this body and garment; with
    # --asset the garment comes along, and only the body is checked
    own = [k for k in nt if k.startswith(f"garment.{g}.") and ".net." not in k]
    if a.asset:
        for k in [k for k in t if k.startswith(f"garment.{g}.") and ".net." not in k]:
            del t[k]
        for k in own:
            t[k] = nt[k]
    for k in [k for k in t if k.startswith("body.") or (not a.asset and k.startswith(f"garment.{g}.") and ".net." not in k)]:
        if k == f"garment.{g}.skin_idx" and k in nt and same_skinning(t[k], nt[k], t.get(f"garment.{g}.skin_w0")):
            continue
        if k not in nt or not np.array_equal(nt[k], t[k]):
            raise SystemExit(f"edit_bundle graft: {a.net_from}: tensor {k!r} differs from {a.base}'s: its network was "
                             f"trained on another body or garment"
                             + ("" if k.startswith("body.") else " (--asset takes the garment from it too)"))
    for k in names:
        t[f"garment.{g}.net.{k}"] = np.asarray(nt[src + k], np.float32)
    # the network's input range, when its bundle has one (docs/design.md §3.3);
    # a range of the network it replaces goes
    for k in ("bonenet.in_min", "bonenet.in_max"):
        t.pop(f"garment.{g}.net.{k}", None)
        if src + k in nt:
            t[f"garment.{g}.net.{k}"] = np.asarray(nt[src + k], np.float32)
    cfg = dict(cfg)
    cfg["own_networks"] = dict(cfg.get("own_networks", {}), **{g: ncfg.get("training", {})})
    # its network is now trained for it, on this body (the bundle contract:
    # "untrained" garments refuse neural, "stale_networks" were trained on another body)
    for key in ("untrained", "stale_networks"):
        rest = [x for x in cfg.get(key, []) if x != g]
        cfg.pop(key, None)
        if rest:
            cfg[key] = rest
    write_bundle(a.out, cfg, t)
    print(f"edit_bundle graft: {a.out}: {g} runs the network of {a.net_from} ({len(names)} tensors"
          + (f", and is its garment: {len(own)} tensors" if a.asset else "") + "); "
          f"garments with their own: {', '.join(sorted(cfg['own_networks']))}", file=sys.stderr)
    return 0


def cmd_refine(a):
    """A copy of BASE whose garment G is refined after module A (runtime/refine.h;
    docs/conventions.md "The refine step"), or no longer is (--iters 0)."""
    cfg, t = read_bundle(a.base)
    if a.garment not in cfg["garments"]:
        raise SystemExit(f"edit_bundle refine: {a.garment!r} is not a garment of {a.base} ({', '.join(cfg['garments'])})")
    # the runtime's bounds (runtime/model.c config_refine)
    if not (0 <= a.iters <= 100 and 0 < a.stiffness <= 100 and 0 <= a.margin <= 0.05 and 0 <= a.rho < 1):
        raise SystemExit("edit_bundle refine: --iters in [0, 100], --stiffness in (0, 100], --margin in [0, 0.05] m, "
                         "--rho in [0, 1)")
    cfg = dict(cfg)
    r = {g: v for g, v in cfg.get("refine", {}).items() if g != a.garment}
    if a.iters:
        r[a.garment] = {"iters": a.iters, "stiffness": a.stiffness, "margin": a.margin}
        if a.rho:
            r[a.garment]["rho"] = a.rho
    cfg.pop("refine", None)
    if r:
        cfg["refine"] = r
    write_bundle(a.out, cfg, t)
    print(f"edit_bundle refine: {a.out}: refined garments: {', '.join(sorted(r)) or 'none'}", file=sys.stderr)
    return 0


def cmd_physics(a):
    """A copy of BASE whose garment G's physics mode takes its own pull towards
    the skinned garment (runtime/model.c config_physics), or the served one
    again (--pull < 0)."""
    cfg, t = read_bundle(a.base)
    if len(a.garment) != len(a.pull):
        raise SystemExit("edit_bundle physics: one --pull for each --garment, in the same order")
    for g, k in zip(a.garment, a.pull):
        if g not in cfg["garments"]:
            raise SystemExit(f"edit_bundle physics: {g!r} is not a garment of {a.base} ({', '.join(cfg['garments'])})")
        if not k <= 1e6:
            raise SystemExit("edit_bundle physics: --pull in [0, 1e6] 1/s^2 (negative: the served settings' own)")
    cfg = dict(cfg)
    ph = {g: v for g, v in cfg.get("physics", {}).items() if g not in a.garment}
    for g, k in zip(a.garment, a.pull):
        if k >= 0:
            ph[g] = {"pull": k}
    cfg.pop("physics", None)
    if ph:
        cfg["physics"] = ph
    write_bundle(a.out, cfg, t)
    own = ", ".join(f"{g} {v['pull']:g}" for g, v in sorted(ph.items()))
    print(f"edit_bundle physics: {a.out}: garments with their own pull: {own or 'none'}", file=sys.stderr)
    return 0


def plan_args(spec, model):
    """dataset.py's parsed flags for a plan given as one string."""
    try:
        return dataset.parse_args(["--base", model, "--out", "-"] + shlex.split(spec))
    except SystemExit as e:
        raise SystemExit(f"edit_bundle: plan {spec!r}: not dataset.py's flags ({e})") from None


def teacher_of_plan(a):
    """The "teacher" config entry for a dataset plan's teacher flags."""
    t = {}
    if a.sim_args.strip():
        t["args"] = " ".join(a.sim_args.split())
    if a.garment_sim:
        t["garments"] = {g: " ".join(v.split()) for g, v in a.garment_sim.items()}
    if a.prelude:
        t["prelude"] = {g: f"{k}:{s}:{sec:g}" for g, (k, s, sec) in a.prelude.items()}
    return t


def teacher_of_garment(cfg, g, args):
    """The config's "teacher" with garment G's own flags followed by ARGS,
    what `drape sim garment` then simulates G with (the common flags, then
    G's, the last of a flag winning; a dataset made on it without flags is
    G's teacher data); the common flags and the other garments' stay. None
    when the bundle has no teacher and ARGS is empty."""
    t = {k: (dict(v) if isinstance(v, dict) else v) for k, v in (cfg.get("teacher") or {}).items()}
    own = " ".join((t.get("garments", {}).get(g, "") + " " + args).split())
    if own:
        t.setdefault("garments", {})[g] = own
    return t or None


def cmd_teacher(a):
    cfg, t = read_bundle(a.base)
    cfg = dict(cfg)
    if a.garment:
        g = a.garment
        if g not in cfg["garments"] or a.none or a.from_plan:
            raise SystemExit(f"edit_bundle teacher: --garment {g!r}: a garment of {a.base} "
                             f"({', '.join(cfg['garments'])}), without --none or --from-plan")
        pre = ((cfg.get("teacher") or {}).get("prelude") or {}).get(g)
        if pre:  # dataset.py plays a prelude only when told: this edit cannot say it was
            raise SystemExit(f"edit_bundle teacher: {g}'s teacher starts worn in ({pre}, train/'s prelude): "
                             f"its data needs --garment-prelude; give its whole teacher with --from-plan")
        new = teacher_of_garment(cfg, g, a.args)
        cfg.pop("teacher", None)
        if new:
            cfg["teacher"] = new
        write_bundle(a.out, cfg, t)
        print(f"edit_bundle teacher: {a.out}: {g}: "
              + (f"the common flags '{new.get('args', '')}' then its own '{new.get('garments', {}).get(g, '')}'"
                 if new else "no teacher settings (drape sim garment's defaults)"), file=sys.stderr)
        return 0
    if a.none:
        cfg.pop("teacher", None)
        write_bundle(a.out, cfg, t)
        print(f"edit_bundle teacher: {a.out}: no teacher settings", file=sys.stderr)
        return 0
    if not a.from_plan:
        raise SystemExit("edit_bundle teacher: give --from-plan FLAGS or --none")
    p = plan_args(f"--garments {','.join(cfg['garments'])} {a.from_plan}", a.base)
    bad = sorted(set(p.garment_sim) - set(cfg["garments"]))
    if bad:
        raise SystemExit(f"edit_bundle teacher: {', '.join(bad)} not a garment of {a.base}")
    cfg["teacher"] = teacher_of_plan(p)
    write_bundle(a.out, cfg, t)
    print(f"edit_bundle teacher: {a.out}: {json.dumps(cfg['teacher'])}", file=sys.stderr)
    return 0


def input_range(model, cfg, plans, margin, log=print, garments=None):
    """{network prefix: (min [X], max [X], frames)} over the training frames
    of the plans (of those garments only, when given)."""
    lo, hi, count = {}, {}, {}
    offsets = history(cfg)
    for spec in plans:
        p = plan_args(spec, "x")
        seqs = [s for s in dataset.plan(cfg, p) if s["split"] == "train" and (garments is None or s["garment"] in garments)]
        if not seqs:
            raise SystemExit(f"edit_bundle input-range: plan {spec!r} has no training sequences")
        for s in seqs:
            pre = f"garment.{s['garment']}.net." if s["garment"] in model.own else ""
            m = dataset.make_motion(s["kind"], s["seed"], p.seconds, cfg["fps"], s.get("speed", 1.0), s.get("upper"))
            P, Tr = frame_windows(m, offsets)
            with torch.no_grad():
                ident = model.identity(s["garment"], s["betas"], lbs_only=True)
                x = model.frames(ident, P, Tr, lbs_only=True)["bonenet_in"].double().cpu().numpy()
            lo[pre] = np.minimum(lo.get(pre, np.inf), x.min(0))
            hi[pre] = np.maximum(hi.get(pre, -np.inf), x.max(0))
            count[pre] = count.get(pre, 0) + len(x)
        log(f"edit_bundle input-range: plan {spec!r}: {len(seqs)} training sequences")
    out = {}
    for pre in lo:
        w = hi[pre] - lo[pre]
        out[pre] = ((lo[pre] - margin * w).astype(np.float32), (hi[pre] + margin * w).astype(np.float32), count[pre])
    return out


def cmd_input_range(a):
    cfg, t = read_bundle(a.base)
    cfg = dict(cfg)
    names = [k for k in t if k.endswith(("bonenet.in_min", "bonenet.in_max"))]
    if a.none:
        for k in names:
            del t[k]
        cfg.pop("input_range", None)
        write_bundle(a.out, cfg, t)
        print(f"edit_bundle input-range: {a.out}: no input range ({len(names)} tensors removed)", file=sys.stderr)
        return 0
    if not a.plan:
        raise SystemExit("edit_bundle input-range: give --plan FLAGS (repeatable) or --none")
    if not 0 <= a.margin <= 1:
        raise SystemExit("edit_bundle input-range: --margin in [0, 1]")
    torch.set_num_threads(max(1, a.threads))
    model = Drape(cfg, t)
    only = a.garments.split(",") if a.garments else None
    if only:  # those garments' own networks; every other range stays
        shared = [g for g in only if g not in model.own]
        if shared:
            raise SystemExit(f"edit_bundle input-range: --garments: {', '.join(shared)} has no network of its own "
                             f"(graft); the shared network's range is made from every garment it runs")
        names = [k for k in names if any(k.startswith(f"garment.{g}.net.") for g in only)]
    r = input_range(model, cfg, a.plan, a.margin, log=lambda s: print(s, file=sys.stderr), garments=only)
    nets = [f"garment.{g}.net." for g in only] if only else [""] + [f"garment.{g}.net." for g in model.own]
    missing = [p or "the shared network" for p in nets if p not in r]
    if missing:
        raise SystemExit(f"edit_bundle input-range: no training frames for {', '.join(missing)}: "
                         f"add a plan with its garments")
    for k in names:
        del t[k]
    for pre, (lo, hi, n) in r.items():
        t[pre + "bonenet.in_min"], t[pre + "bonenet.in_max"] = lo, hi
        mean = np.asarray(t[pre + "bonenet.in_mean"], np.float64)
        std = np.asarray(t[pre + "bonenet.in_std"], np.float64)
        print(f"edit_bundle input-range: {pre or 'shared '}bonenet: range over {n} frames, in standard units "
              f"[{((lo - mean) / std).min():.2f}, {((hi - mean) / std).max():.2f}]", file=sys.stderr)
    rec = {"plans": list(a.plan), "margin": a.margin, "frames": {p or "shared": int(v[2]) for p, v in r.items()}}
    if only:  # beside the record of the ranges it leaves
        old = dict(cfg.get("input_range") or {})
        old["garments"] = dict(old.get("garments", {}), **{g: rec for g in only})
        rec = old
    cfg["input_range"] = rec
    write_bundle(a.out, cfg, t)
    print(f"edit_bundle input-range: {a.out}: {2 * len(r)} range tensors", file=sys.stderr)
    return 0


def cmd_show(a):
    cfg, t = read_bundle(a.base)
    print(f"teacher: {json.dumps(cfg.get('teacher'))}")
    for k in sorted(k for k in t if k.endswith("bonenet.in_min")):
        hi = t[k[:-3] + "max"]
        print(f"{k[:-len('.in_min')]}: input range, width {float(np.mean(hi - t[k])):.4f} on average")
    if "input_range" in cfg:
        print(f"input_range: {json.dumps(cfg['input_range'])}")
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("attach")
    p.add_argument("--base", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--garment", required=True)
    p.add_argument("--hem", type=float, default=0.0)
    p.add_argument("--cuffs", type=float, default=0.0)
    p = sub.add_parser("arms")
    p.add_argument("--base", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--girth", type=float, default=0.0)
    p.add_argument("--shoulders", type=float, default=0.0)
    p = sub.add_parser("graft")
    p.add_argument("--base", required=True)
    p.add_argument("--garment", required=True)
    p.add_argument("--net-from", required=True)
    p.add_argument("--asset", action="store_true", help="the garment's mesh, UVs and rig from --net-from too")
    p.add_argument("--out", required=True)
    p = sub.add_parser("refine", help="turn the refine step on (or off, --iters 0) for a garment")
    p.add_argument("--base", required=True)
    p.add_argument("--garment", required=True)
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--stiffness", type=float, default=1.0)
    p.add_argument("--margin", type=float, default=0.003, help="m off the body's tangent planes")
    p.add_argument("--rho", type=float, default=0.0,
                   help="Chebyshev acceleration of the sweeps: the plain sweep's spectral radius (0: plain)")
    p.add_argument("--out", required=True)
    p = sub.add_parser("teacher", help="the teacher flags the bundle was trained against")
    p.add_argument("--base", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--from-plan", metavar="FLAGS",
                   help="dataset.py's --sim-args, --garment-sim-args and --garment-prelude, as given to it")
    p.add_argument("--none", action="store_true", help="remove them")
    p.add_argument("--garment", default="", help="only this garment's own flags: --args added to them, the rest kept")
    p.add_argument("--args", default="", metavar="FLAGS", help="with --garment: its flags (write --args=\"...\")")
    p = sub.add_parser("input-range", help="the range of Bone-Net's inputs over training plans")
    p.add_argument("--base", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--plan", action="append", default=[], metavar="FLAGS", help="a dataset.py plan (repeatable)")
    p.add_argument("--margin", type=float, default=0.0, help="widen each dimension by this times its width")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--none", action="store_true", help="remove the range (nothing is clamped)")
    p.add_argument("--garments", default="", metavar="G,...",
                   help="only these garments' own networks (their plans' frames); the other ranges are kept")
    p = sub.add_parser("physics", help="a garment's own pull towards its skinned place in the physics mode")
    p.add_argument("--base", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--garment", action="append", required=True, help="repeatable, each with its --pull")
    p.add_argument("--pull", type=float, action="append", required=True,
                   help="1/s^2 per unit mass; negative: the served settings' own")
    p = sub.add_parser("show", help="print the teacher and the ranges")
    p.add_argument("--base", required=True)
    a = ap.parse_args(argv)
    return {"attach": cmd_attach, "arms": cmd_arms, "graft": cmd_graft, "refine": cmd_refine, "teacher": cmd_teacher,
            "input-range": cmd_input_range, "physics": cmd_physics, "show": cmd_show}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
