"""Held-out evaluation: `drape eval` over a dataset's test sequences, one
table per garment (what `make eval` prints).

    /usr/bin/python3 train/eval.py --model MODEL --data DIR [--drape build/drape] [--json OUT.json]
        [--split test|train]   (train: the training sequences, to tell under- from overfitting)
        [--garments tshirt]    (only these garments' sequences, e.g. for a model of fewer garments)
    /usr/bin/python3 train/eval.py --model MODEL --list-garments   (the garments with a network, comma-separated)

A garment the bundle lists as "untrained" (added by `drape garment add`,
no network trained for it yet: it has no neural mode) is skipped, with a
note, in every table; the others are judged as usual, an added garment
once trained (train/recipes/garment.toml) like the rest.

Exits 0 when every garment meets every goal, 3 when one misses one.

Goals (issue 5): the model's mean vertex error ≤ 50% of plain skinning's;
edge error ≤ 3%, area error ≤ 4%, collision ≤ 0.5% of vertices.

By family (issue 31): one row per garment and motion family, and per real
clip, against the bundle's own teacher:

    /usr/bin/python3 train/eval.py --model MODEL --families held-out [--clips data/motions] --work DIR
        [--plan 'DATASET FLAGS'] [--seconds 3.5] [--clip-seconds 4] [--jobs 2] [--sim-args FLAGS]

--families is `held-out` (motions.HELD_OUT_FAMILIES), `all`, or a list. Each
garment plays one draw of each family (seed 9000 + the family's index, none
of the plans' seeds), and the middle --clip-seconds of each [T,75] clip in
--clips ([T,75], `drape infer`'s format, at 30 fps or the rate its
index.json gives; a missing folder is no clips), on
one body shape: the first training shape of --plan (dataset.py's flags;
without it β = 0), so that only the motion is new; `--shape test` takes its
first unseen shape instead. --family-seed and --draws choose other draws:
`make eval-final` (the final set, looked at only to report) uses seeds 9500
and up, two draws, an unseen shape and the clips of data/motions-final. The teacher is `drape sim
garment` with the bundle's teacher settings (docs/design.md §3.3; --sim-args
only for a bundle without them) and its worn-in prelude where it has one,
at most --jobs at a time; its output is kept in --work and reused while the
model's body, garment, teacher and motion are the same. Prints the table
(model / skinning mean error, the model's mean error, edge and area error,
collision) and exits 0.

The teacher's spread (--spread K, 20 frames unless 0): the teacher runs each
row a second time with the motion's first pose held K frames longer before
it starts (the cloth settled a little longer; nothing else differs), and the
column gives the two runs' mean distance over skinning's error. Where the
cloth's path depends on such details (a fast spin, kicks), one teacher run
is one of many equally good references: a model that sees only the motion
averages at least half that distance against the two runs
(docs/training-log.md, "How much of the error is the teacher's own").

The served physics mode as a peer (--physics 1, the default): `drape sim
garment --realtime` on each row's poses (the prelude too), kept in --work
beside the teacher, its mean distance to the teacher over skinning's error
in a column of its own: what a simulation of the same cloth that keeps its
state, at real-time settings, scores on the same rows.
"""
import argparse
import glob
import hashlib
import json
import os
import shlex
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dataset  # noqa: E402
import motions  # noqa: E402
import recipe  # noqa: E402
from bundle import read_bundle  # noqa: E402

GOALS = {"model_over_lbs": 0.5, "edge_error": 0.03, "area_error": 0.04, "collision_pct": 0.5}


def trained(cfg, garments, log=True):
    """The garments of the list that have a network; a note for each that
    has none (config "untrained")."""
    none = [g for g in garments if g in cfg.get("untrained", [])]
    if none and log:
        print(f"eval: skipped {', '.join(none)}: no network trained for "
              f"{'them' if len(none) > 1 else 'it'} yet (config 'untrained'; train/recipes/garment.toml trains one)",
              file=sys.stderr)
    return [g for g in garments if g not in none]


def run(seq, a, paths=None):
    """`drape eval` of one sequence: the dataset's (a.data), or paths (poses, teacher)."""
    if paths is None:
        p = os.path.join(a.data, "seq", seq["name"])
        paths = (p + ".poses.npy", p + ".sim.npy")
    cmd = [a.drape, "eval", "--model", a.model, "--garment", seq["garment"], "--betas",
           ",".join(f"{x:g}" for x in seq["betas"]), "--poses", paths[0], "--teacher", paths[1],
           "--threads", "1"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        raise SystemExit(f"eval: {seq['name']}: {r.stderr.strip()}")
    return dict(json.loads(r.stdout), name=seq["name"], test_betas=seq["test_betas"], test_motion=seq["test_motion"])


FAMILY_SEED = 9000  # + the family's index: a draw no plan makes (their seeds stay below 1000 · draws)


def family_jobs(a, cfg):
    """The (garment, name, poses [T,75]) to judge: each family, then each clip."""
    fams = {"held-out": list(motions.HELD_OUT_FAMILIES), "all": list(motions.KINDS)}.get(
        a.families, [f for f in a.families.split(",") if f])
    bad = [f for f in fams if f not in motions.KINDS]
    if bad:
        raise SystemExit(f"eval: --families: {', '.join(bad)} not a motion family ({', '.join(motions.KINDS)})")
    seqs = [(f if a.draws == 1 else f"{f}#{d}",
             motions.generate(f, a.seconds, a.family_seed + 100 * d + list(motions.KINDS).index(f), fps=cfg["fps"])[0])
            for f in fams for d in range(a.draws)]
    clips = sorted(glob.glob(os.path.join(a.clips, "*.npy"))) if a.clips and os.path.isdir(a.clips) else []
    n = int(round(a.clip_seconds * cfg["fps"]))
    try:  # the folder's index.json may give a clip's frame rate (data/motions/README.md)
        with open(os.path.join(a.clips, "index.json")) as f:
            index = json.load(f)
    except (OSError, ValueError):
        index = {}
    for p in clips:
        name = os.path.splitext(os.path.basename(p))[0]
        fps = index.get(name, {}).get("fps") if isinstance(index.get(name), dict) else None
        try:
            m = motions.load(p, src_fps=fps, dst_fps=cfg["fps"]) if fps else motions.load(p)
        except ValueError as e:
            raise SystemExit(f"eval: clip {e}") from None
        start = max(0, (len(m) - n) // 2)
        seqs.append(("clip:" + name, m[start:start + n]))
    garments = a.garments.split(",") if a.garments else cfg["garments"]
    bad = sorted(set(garments) - set(cfg["garments"]))
    if bad:
        raise SystemExit(f"eval: --garments: {', '.join(bad)} not in {a.model}")
    return [(g, name, m) for g in trained(cfg, garments) for name, m in seqs]


def teacher_settings(cfg, garment, sim_args):
    """The flags and prelude of the garment's teacher: the bundle's (docs/design.md
    §3.3; the flags then come from the bundle itself), else --sim-args."""
    t = cfg.get("teacher")
    if t is None:
        return [], sim_args.split(), None
    pre = t.get("prelude", {}).get(garment)
    if pre:
        k, s, *sec = pre.split(":")
        pre = (k, int(s), float(sec[0]) if sec else 1.5)
    return (t.get("args", "") + " " + t.get("garments", {}).get(garment, "")).split(), [], pre


def physics_substeps(spec):
    """draped --physics-substeps' "GARMENT=N,..." as {garment: N}."""
    out = {}
    for item in filter(None, (spec or "").split(",")):
        g, _, n = item.partition("=")
        if not g or not (n.isascii() and n.isdigit()) or not 1 <= int(n) <= 64:  # ascii: int() refuses "²"
            raise SystemExit(f"eval: --physics-substeps: '{item}' is not GARMENT=N with N in [1, 64]")
        out[g] = int(n)
    return out


def family_teacher(job, a, cfg, tensors, betas, hold=0, served=False):
    """The teacher's [T,V,3] for one (garment, motion), made or reused from
    --work; with HOLD, the run whose motion starts HOLD frames later, its
    first pose held until then (the --spread run), cut to the motion's frames.
    SERVED: the served physics mode's run instead (`drape sim garment
    --realtime`) on the same poses, the teacher's prelude included."""
    g, name, m = job
    T = len(m)
    if hold:
        m = np.concatenate([np.repeat(m[:1], hold, 0), m])
    shown, flags, pre = teacher_settings(cfg, g, a.sim_args)
    if served:  # draped --physics-substeps' count for this garment, when one is given
        n = a.substeps_by_garment.get(g)
        shown = flags = ["--realtime"] + (["--substeps", str(n)] if n else [])
    h = hashlib.sha256()
    for k in sorted(tensors):  # what the teacher reads: the body and this garment, not the networks
        if k.startswith("body.") or (k.startswith(f"garment.{g}.") and ".net." not in k):
            h.update(k.encode())
            h.update(np.ascontiguousarray(tensors[k]).tobytes())
    h.update(json.dumps([shown, flags, pre, list(betas)]).encode())
    if served:  # the served settings are the C code's own and the bundle's pull: a change to either is a new run
        h.update(json.dumps(recipe.teacher_code(), sort_keys=True).encode())
        h.update(json.dumps(cfg.get("physics", {}).get(g)).encode())
    h.update(np.ascontiguousarray(m).tobytes())
    tag = f"-held{hold}" if hold else "-physics" if served else ""
    base = os.path.join(a.work, f"{g}-{name.replace(':', '_')}{tag}-{h.hexdigest()[:12]}")
    poses, sim = base + ".poses.npy", base + ".sim.npy"
    if os.path.exists(sim) and os.path.exists(poses):
        return poses, sim
    np.save(poses, m)
    sim_in, move = poses, None
    if pre:  # worn in, as the dataset's teacher for this garment (dataset.py --garment-prelude)
        full, move = motions.lead_in(motions.generate(pre[0], pre[2], pre[1], fps=cfg["fps"])[0], m)
        sim_in = base + ".lead.tmp.npy"
        np.save(sim_in, full)
    cmd = [a.drape, "sim", "garment", "--model", a.model, "--garment", g, "--betas",
           ",".join(f"{x:g}" for x in betas), "--poses", sim_in, "--out", sim + ".tmp.npy"] + flags
    r = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
    if r.returncode:
        raise SystemExit(f"eval: teacher of {g} {name}: {r.stderr.strip()}")
    x = np.load(sim + ".tmp.npy")
    if move is not None:
        os.remove(sim_in)
        x = x[-len(m):] - move[None, None, :]
    np.save(sim + ".tmp.npy", x[-T:].astype(np.float32))
    os.replace(sim + ".tmp.npy", sim)
    return poses, sim


def family_eval(a):
    cfg, tensors = read_bundle(a.model)
    a.substeps_by_garment = physics_substeps(a.physics_substeps)  # parsed once, read per row
    unknown = sorted(set(a.substeps_by_garment) - set(cfg["garments"]))
    if unknown:
        raise SystemExit(f"eval: --physics-substeps: the model has no garment {', '.join(unknown)}")
    betas = [0.0]
    if a.plan:
        p = dataset.parse_args(["--base", a.model, "--out", "-"] + shlex.split(a.plan))
        want_test = a.shape == "test"
        betas = next(s["betas"] for s in dataset.plan(cfg, p) if bool(s["test_betas"]) == want_test)
    jobs = family_jobs(a, cfg)
    if not jobs:
        print(f"eval: {a.model}: no garment with a network to judge", file=sys.stderr)
        return 0
    os.makedirs(a.work, exist_ok=True)
    with ThreadPoolExecutor(max(1, min(a.jobs, 2))) as ex:  # the teacher: two processes at most
        made = list(ex.map(lambda j: family_teacher(j, a, cfg, tensors, betas), jobs))
        held = list(ex.map(lambda j: family_teacher(j, a, cfg, tensors, betas, a.spread), jobs)) if a.spread else None
        phys = list(ex.map(lambda j: family_teacher(j, a, cfg, tensors, betas, served=True), jobs)) if a.physics else None
    with ThreadPoolExecutor(max(1, min(a.jobs, 2))) as ex:
        res = list(ex.map(lambda jm: dict(run({"name": jm[0][1], "garment": jm[0][0], "betas": betas,
                                               "test_betas": False, "test_motion": True},
                                              a, paths=jm[1]), motion=jm[0][1]), zip(jobs, made)))
    for r, (_, sim), (_, sim2) in zip(res, made, held or []):  # their mean distance, as drape eval's mean_mm
        r["teacher_spread_mm"] = float(np.linalg.norm(np.load(sim2) - np.load(sim), axis=2).mean() * 1e3)
    for r, (_, sim), (_, ph) in zip(res, made, phys or []):  # the served physics against the same teacher
        r["physics_mm"] = float(np.linalg.norm(np.load(ph) - np.load(sim), axis=2).mean() * 1e3)
    src = "the bundle's" if "teacher" in cfg else f"--sim-args '{a.sim_args}' (the bundle has none)"
    print(f"\n## By motion family: {a.model} ({len(res)} sequences; teacher: {src}; "
          f"shape {','.join(f'{x:g}' for x in betas[:4])}{',...' if len(betas) > 4 else ''})\n")
    if held:
        print(f"teacher's spread: its run with the first pose held {a.spread} frames longer against its run, "
              "over skinning's error; no model of the motion alone is below half of it against both runs\n")
    if phys:
        print("physics / skinning: the served physics mode (drape sim garment --realtime, a simulation that "
              "keeps its state) on the same poses against the same teacher, a peer of the model's column" +
              (f"; as draped --physics-substeps {a.physics_substeps} serves it" if a.substeps_by_garment else "") + "\n")
    print("| garment | motion | model / skinning | model mean err (mm) | skinning (mm) | edge err | area err | "
          "collision % | teacher edge / area / collision |" + (" teacher's spread / skinning |" if held else "") +
          (" physics / skinning |" if phys else ""))
    print(f"|---|---|---:|---:|---:|---:|---:|---:|---|{'---:|' if held else ''}{'---:|' if phys else ''}")
    for r in res:
        M, L, Tt = r["model"], r["lbs"], r["teacher"]
        tag = " (held out)" if r["motion"].split("#")[0] in motions.HELD_OUT_FAMILIES else ""
        print(f"| {r['garment']} | {r['motion']}{tag} | {M['mean_mm'] / L['mean_mm']:.2f} | {M['mean_mm']:.1f} | "
              f"{L['mean_mm']:.1f} | {100 * M['edge_error']:.2f}% | {100 * M['area_error']:.2f}% | "
              f"{M['collision_pct']:.3f} | {100 * Tt['edge_error']:.2f}% / {100 * Tt['area_error']:.2f}% / "
              f"{Tt['collision_pct']:.3f} |" + (f" {r['teacher_spread_mm'] / L['mean_mm']:.2f} |" if held else "") +
              (f" {r['physics_mm'] / L['mean_mm']:.2f} |" if phys else ""))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--data", help="a dataset (train/dataset.py): its held-out sequences, per garment")
    ap.add_argument("--families", help="held-out, all, or FAMILY,...: one row per garment and family")
    ap.add_argument("--clips", default="", help="with --families: a folder of [T,75] clips (data/motions)")
    ap.add_argument("--work", default="build/eval-families", help="with --families: the teacher's outputs, kept")
    ap.add_argument("--plan", default="", help="with --families: dataset.py flags; its first training shape")
    ap.add_argument("--seconds", type=float, default=3.5, help="with --families: each family's length")
    ap.add_argument("--family-seed", type=int, default=FAMILY_SEED,
                    help="with --families: the first draw's seed base (+ the family's index; + 100 per draw)")
    ap.add_argument("--draws", type=int, default=1, help="with --families: draws per family")
    ap.add_argument("--shape", choices=("train", "test"), default="train",
                    help="with --families: --plan's first training shape, or its first unseen one")
    ap.add_argument("--clip-seconds", type=float, default=4.0, help="with --families: the middle of each clip")
    ap.add_argument("--sim-args", default="", help="with --families: the teacher's flags for a bundle without its own")
    ap.add_argument("--spread", type=int, default=20, metavar="K",
                    help="with --families: a second teacher run, the first pose held K frames longer (0: none)")
    ap.add_argument("--physics", type=int, choices=(0, 1), default=1,
                    help="with --families: 1: a column for the served physics mode on the same rows (0: none)")
    ap.add_argument("--physics-substeps", default="", metavar="GARMENT=N,...",
                    help="with --physics 1: the physics column as draped --physics-substeps GARMENT=N,... serves it")
    ap.add_argument("--drape", default="build/drape")
    ap.add_argument("--json")
    ap.add_argument("--split", choices=("test", "train"), default="test")
    ap.add_argument("--jobs", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--garments", default="", help="comma-separated; default: every garment of the dataset")
    ap.add_argument("--list-garments", action="store_true",
                    help="print the model's garments that have a network, comma-separated, and stop")
    a = ap.parse_args(argv)
    if a.list_garments:
        cfg, _ = read_bundle(a.model)
        print(",".join(trained(cfg, cfg["garments"])))
        return 0
    if (a.data is None) == (a.families is None):
        ap.error("give --data DIR or --families LIST")
    if a.families is not None:
        if not 0 <= a.spread <= 300:
            ap.error("--spread: 0 to 300 frames")
        return family_eval(a)
    with open(os.path.join(a.data, "manifest.json")) as f:
        man = json.load(f)
    have = sorted({s["garment"] for s in man["sequences"]})
    want = a.garments.split(",") if a.garments else have
    if set(want) - set(have):
        raise SystemExit(f"eval: --garments {a.garments}: {', '.join(sorted(set(want) - set(have)))} not in "
                         f"{a.data} ({', '.join(have)})")
    cfg, _ = read_bundle(a.model)
    want = trained(cfg, want)
    if not want:
        print(f"eval: {a.model}: no garment of {a.data} has a network to judge", file=sys.stderr)
        return 0
    seqs = [s for s in man["sequences"] if s["split"] == a.split and s["garment"] in want
            and os.path.exists(os.path.join(a.data, "seq", s["name"] + ".sim.npy"))]
    if not seqs:
        raise SystemExit(f"eval: no finished '{a.split}' sequences in {a.data}")
    with ThreadPoolExecutor(a.jobs) as ex:
        res = list(ex.map(lambda s: run(s, a), seqs))
    ok = True
    title = "Held-out evaluation" if a.split == "test" else "Evaluation on the training sequences"
    print(f"\n## {title}: {a.model} ({len(res)} sequences)\n")
    for g in sorted({r["garment"] for r in res}):
        R = [r for r in res if r["garment"] == g]
        mean = lambda f: float(np.mean([f(r) for r in R]))
        rows = {
            "model": {k: mean(lambda r: r["model"][k]) for k in ("mean_mm", "max_mm", "edge_error", "area_error",
                                                                  "collision_pct")},
            "lbs": {k: mean(lambda r: r["lbs"][k]) for k in ("mean_mm", "max_mm", "edge_error", "area_error",
                                                              "collision_pct")},
            "teacher": {k: mean(lambda r: r["teacher"][k]) for k in ("edge_error", "area_error", "collision_pct")},
        }
        ratio = rows["model"]["mean_mm"] / rows["lbs"]["mean_mm"]
        print(f"### {g} ({len(R)} sequences: {sum(r['test_betas'] for r in R)} with unseen shapes, "
              f"{sum(r['test_motion'] for r in R)} with unseen motions)\n")
        print("| method | mean err (mm) | max err (mm) | edge err | area err | collision % |")
        print("|---|---:|---:|---:|---:|---:|")
        for name, v in rows.items():
            print(f"| {name} | {v.get('mean_mm', float('nan')):.2f} | {v.get('max_mm', float('nan')):.1f} | "
                  f"{100 * v['edge_error']:.2f}% | {100 * v['area_error']:.2f}% | {v['collision_pct']:.3f} |")
        checks = {"model_over_lbs": ratio, "edge_error": rows["model"]["edge_error"],
                  "area_error": rows["model"]["area_error"], "collision_pct": rows["model"]["collision_pct"]}
        verdict = ", ".join(f"{k} {v:.3g} {'ok' if v <= GOALS[k] else 'MISSED'} (goal <= {GOALS[k]})"
                            for k, v in checks.items())
        ok &= all(v <= GOALS[k] for k, v in checks.items())
        print(f"\nmodel / lbs mean error: {ratio:.3f}. Goals: {verdict}\n")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)
    return 0 if ok else 3


if __name__ == "__main__":
    sys.exit(main())
