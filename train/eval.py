"""Held-out evaluation: `drape eval` over a dataset's test sequences, one
table per garment (what `make eval` prints).

    /usr/bin/python3 train/eval.py --model MODEL --data DIR [--drape build/drape] [--json OUT.json]
        [--split test|train]   (train: the training sequences, to tell under- from overfitting)
        [--garments tshirt]    (only these garments' sequences, e.g. for a model of fewer garments)

Exits 0 when every garment meets every goal, 3 when one misses one.

Goals (issue 5): the model's mean vertex error ≤ 50% of plain skinning's;
edge error ≤ 3%, area error ≤ 4%, collision ≤ 0.5% of vertices.
"""
import argparse
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np

GOALS = {"model_over_lbs": 0.5, "edge_error": 0.03, "area_error": 0.04, "collision_pct": 0.5}


def run(seq, a):
    p = os.path.join(a.data, "seq", seq["name"])
    cmd = [a.drape, "eval", "--model", a.model, "--garment", seq["garment"], "--betas",
           ",".join(f"{x:g}" for x in seq["betas"]), "--poses", p + ".poses.npy", "--teacher", p + ".sim.npy",
           "--threads", "1"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        raise SystemExit(f"eval: {seq['name']}: {r.stderr.strip()}")
    return dict(json.loads(r.stdout), name=seq["name"], test_betas=seq["test_betas"], test_motion=seq["test_motion"])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--drape", default="build/drape")
    ap.add_argument("--json")
    ap.add_argument("--split", choices=("test", "train"), default="test")
    ap.add_argument("--jobs", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--garments", default="", help="comma-separated; default: every garment of the dataset")
    a = ap.parse_args(argv)
    with open(os.path.join(a.data, "manifest.json")) as f:
        man = json.load(f)
    have = sorted({s["garment"] for s in man["sequences"]})
    want = a.garments.split(",") if a.garments else have
    if set(want) - set(have):
        raise SystemExit(f"eval: --garments {a.garments}: {', '.join(sorted(set(want) - set(have)))} not in "
                         f"{a.data} ({', '.join(have)})")
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
