"""Edit a bundle: copies of a bundle with one thing changed, no training.

    # a copy of a bundle whose garment the simulator holds at more than its
    # top: the hem and, for a garment with sleeves, the cuffs (bands in m)
    /usr/bin/python3 train/edit_bundle.py attach --base IN --out OUT --garment tshirt --hem 0.01 [--cuffs 0.01]
    # a copy of a bundle whose shape space moves the arms further out with
    # girth (β1) and shoulder width (β2), m per unit (assets.arms_out)
    /usr/bin/python3 train/edit_bundle.py arms --base IN --out OUT --girth 0.005 --shoulders -0.006
    # a copy of BASE whose garment runs the network of another bundle of the
    # same body and garments, one trained on that garment alone
    # (fit --garments tshirt): a network of its own beside the shared one
    /usr/bin/python3 train/edit_bundle.py graft --base BASE --garment tshirt --net-from TSHIRT.safetensors --out OUT
    # a copy of BASE whose garment is refined after module A (runtime/refine.h), or no longer is (--iters 0)
    /usr/bin/python3 train/edit_bundle.py refine --base BASE --garment tshirt [--iters 10 --stiffness 1 --margin 0.003] --out OUT

train/train.py trains; these steps of the pipeline (train/recipes/default.toml)
change a bundle's data or config around the training.
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import assets  # noqa: E402
import reference  # noqa: E402
from bundle import read_bundle, write_bundle  # noqa: E402


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
    # the network must have been trained on this body and garment
    for k in [k for k in t if k.startswith("body.") or (k.startswith(f"garment.{g}.") and ".net." not in k)]:
        if k not in nt or not np.array_equal(nt[k], t[k]):
            raise SystemExit(f"edit_bundle graft: {a.net_from}: tensor {k!r} differs from {a.base}'s: its network was "
                             f"trained on another body or garment")
    for k in names:
        t[f"garment.{g}.net.{k}"] = np.asarray(nt[src + k], np.float32)
    cfg = dict(cfg)
    cfg["own_networks"] = dict(cfg.get("own_networks", {}), **{g: ncfg.get("training", {})})
    write_bundle(a.out, cfg, t)
    print(f"edit_bundle graft: {a.out}: {g} runs the network of {a.net_from} ({len(names)} tensors); "
          f"garments with their own: {', '.join(sorted(cfg['own_networks']))}", file=sys.stderr)
    return 0


def cmd_refine(a):
    """A copy of BASE whose garment G is refined after module A (runtime/refine.h;
    docs/conventions.md "The refine step"), or no longer is (--iters 0)."""
    cfg, t = read_bundle(a.base)
    if a.garment not in cfg["garments"]:
        raise SystemExit(f"edit_bundle refine: {a.garment!r} is not a garment of {a.base} ({', '.join(cfg['garments'])})")
    # the runtime's bounds (runtime/model.c config_refine)
    if not (0 <= a.iters <= 100 and 0 < a.stiffness <= 100 and 0 <= a.margin <= 0.05):
        raise SystemExit("edit_bundle refine: --iters in [0, 100], --stiffness in (0, 100], --margin in [0, 0.05] m")
    cfg = dict(cfg)
    r = {g: v for g, v in cfg.get("refine", {}).items() if g != a.garment}
    if a.iters:
        r[a.garment] = {"iters": a.iters, "stiffness": a.stiffness, "margin": a.margin}
    cfg.pop("refine", None)
    if r:
        cfg["refine"] = r
    write_bundle(a.out, cfg, t)
    print(f"edit_bundle refine: {a.out}: refined garments: {', '.join(sorted(r)) or 'none'}", file=sys.stderr)
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
    p.add_argument("--out", required=True)
    p = sub.add_parser("refine", help="turn the refine step on (or off, --iters 0) for a garment")
    p.add_argument("--base", required=True)
    p.add_argument("--garment", required=True)
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--stiffness", type=float, default=1.0)
    p.add_argument("--margin", type=float, default=0.003, help="m off the body's tangent planes")
    p.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    return {"attach": cmd_attach, "arms": cmd_arms, "graft": cmd_graft, "refine": cmd_refine}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
