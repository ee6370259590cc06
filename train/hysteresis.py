"""Does the teacher forget? One clip played after different preludes.

    /usr/bin/python3 train/hysteresis.py --model BUNDLE --garment NAME [--betas b0,...]
        [--clip idle:100] [--preludes walk:1,run:2,arm_swings:3,jump:4,turn:5,stop:6]
        [--prelude-seconds 1.5] [--clip-seconds 2] [--last 30]
        [--sim-args "--max-substeps 8 --iters 8"] [--drape build/drape] [--out DIR] [--json F]

The model (docs/design.md §2.4) sees the last few poses, so it can only learn a
teacher whose garment, some time after a motion, depends on the recent poses
and not on what came before. This plays the same clip (KIND:SEED of
train/motions.py) once on its own and once after each prelude (a blend of
half a second into the clip's first pose, the clip moved to start where the
prelude stands), runs `drape sim garment` on each, and measures over the
clip's last LAST frames:

- spread_mm: the mean vertex distance between every two runs (the clip's
  translation offset taken out), and spread_preludes_mm the same without the
  plain clip, whose garment starts settled rather than moving;
- per run, to_plain_mm (its distance to the plain clip) and pinched_edges
  (edges of the last frame beyond 1.5x or under 0.5x their length in the
  run's first frame: cloth caught in a crease of the body).

A teacher that forgets gives a spread near zero; docs/training-log.md ("The
teacher's T-shirt remembered its motion") has the measurements that changed
the dataset's substeps, and "The teacher's T-shirt rests in more than one
shape" those that found what the finer teacher still keeps.
"""
import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import motions  # noqa: E402
from bundle import read_bundle  # noqa: E402
from reference import unique_edges  # noqa: E402


def kind_seed(s):
    k, _, seed = s.partition(":")
    if k not in motions.KINDS or not seed.lstrip("-").isdigit():
        raise SystemExit(f"hysteresis: {s!r} is not KIND:SEED (kinds: {', '.join(motions.KINDS)})")
    return k, int(seed)


def pinched(x, edges):
    """Edges of x[-1] beyond 1.5x or under 0.5x their length in x[0]."""
    l0 = np.linalg.norm(x[0, edges[:, 0]] - x[0, edges[:, 1]], axis=1)
    r = np.linalg.norm(x[-1, edges[:, 0]] - x[-1, edges[:, 1]], axis=1) / np.maximum(l0, 1e-9)
    return int(((r > 1.5) | (r < 0.5)).sum())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--garment", required=True)
    ap.add_argument("--betas", default="")
    ap.add_argument("--clip", default="idle:100")
    ap.add_argument("--preludes", default="walk:1,run:2,arm_swings:3,jump:4,turn:5,stop:6")
    ap.add_argument("--prelude-seconds", type=float, default=1.5)
    ap.add_argument("--clip-seconds", type=float, default=2.0)
    ap.add_argument("--last", type=int, default=30)
    ap.add_argument("--sim-args", default="--max-substeps 8 --iters 8")
    ap.add_argument("--drape", default="build/drape")
    ap.add_argument("--out", default=None, help="keep the sequences here (default: a temporary folder)")
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)
    cfg, t = read_bundle(a.model)
    if a.garment not in cfg["garments"]:
        raise SystemExit(f"hysteresis: garment {a.garment!r} is not in {a.model} ({', '.join(cfg['garments'])})")
    fps = cfg.get("fps", motions.FPS)
    clip_n = int(round(a.clip_seconds * fps))
    if not 1 <= a.last <= clip_n:
        raise SystemExit(f"hysteresis: --last must be in [1, {clip_n}] (the clip's frames)")
    ck, cs = kind_seed(a.clip)
    clip = motions.generate(ck, a.clip_seconds, cs, fps=fps)[0]
    runs = [("plain", clip.astype(np.float32), np.zeros(3, np.float32))]
    preludes = a.preludes.split(",")
    for i, p in enumerate(preludes):
        pk, ps = kind_seed(p)
        seq, move = motions.lead_in(motions.generate(pk, a.prelude_seconds, ps, fps=fps)[0], clip)
        # a prelude named twice runs twice: the teacher is deterministic, so the two agree
        runs.append((p if p not in preludes[:i] else f"{p}#{i + 1}", seq, move))
    faces = t[f"garment.{a.garment}.faces"]
    edges = unique_edges(torch.from_numpy(faces.astype(np.int64))).numpy()
    tmp = None
    if a.out is None:
        tmp = tempfile.TemporaryDirectory()
    out = a.out or tmp.name
    os.makedirs(out, exist_ok=True)
    last, report = {}, {}
    for name, seq, move in runs:
        stem = os.path.join(out, f"{a.garment}-{name.replace(':', '_').replace('#', '_')}")
        np.save(stem + ".poses.npy", seq)
        cmd = [a.drape, "sim", "garment", "--model", a.model, "--garment", a.garment, "--poses", stem + ".poses.npy",
               "--out", stem + ".sim.npy"] + (["--betas", a.betas] if a.betas else []) + a.sim_args.split()
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode:
            raise SystemExit(f"hysteresis: {' '.join(cmd)} failed:\n{r.stderr}")
        x = np.load(stem + ".sim.npy")
        last[name] = x[-a.last:] - move[None, None, :]
        report[name] = {"pinched_edges": pinched(x, edges)}
    dist = lambda p, q: float(np.linalg.norm(last[p] - last[q], axis=-1).mean() * 1000)
    pairs = {(p, q): dist(p, q) for p, q in itertools.combinations(last, 2)}
    for name in last:
        if name != "plain":
            report[name]["to_plain_mm"] = round(pairs[("plain", name)], 2)
    res = {"garment": a.garment, "clip": a.clip, "sim_args": a.sim_args, "last_frames": a.last,
           "spread_mm": round(float(np.mean(list(pairs.values()))), 2),
           "spread_preludes_mm": round(float(np.mean([v for k, v in pairs.items() if "plain" not in k])), 2)
           if len(runs) > 2 else None,
           "runs": report}
    text = json.dumps(res, indent=1)
    print(text)
    if a.json:
        with open(a.json, "w") as f:
            f.write(text + "\n")
    if tmp:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
