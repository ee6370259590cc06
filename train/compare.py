#!/usr/bin/env python3
"""Two arms of `train/eval.py --json` runs, compared by a rule given up front.

    /usr/bin/python3 train/compare.py --base A1.json [A2.json ...] --new B1.json [B2.json ...]
        [--gain GARMENT=MARGIN,...] [--mean-worse 0.01] [--row-worse 0.05] [--seed-worse 0.02]

Each file is one run's `eval.py --json`: the rows by family (`--families`: a
row per garment and motion) or the per-seed table (`--data`: a row per
sequence, judged as eval.py does, mean model error over mean skinning error
per garment). An arm is one or more runs of the same recipe (other fit
seeds, or the same recipe made again); its figure for a row is the mean of
its runs'. Two makes of the same recipe land apart by as much as a rule's
margin (docs/training-log.md, "The branch's whole bundle, judged by its
rule"), so a rule should judge the mean of two or more runs an arm, and
the table prints each arm's spread between its runs beside the margins.
Each row also shows skinning's error there and the arms' difference in
millimetres: a row where skinning is 12 mm off its teacher moves 0.08 for
1 mm, one where it is 90 mm off moves 0.01.

The rule (every part must hold; exit 0 if it does, 1 if not, 2 on bad input):
- a garment named in --gain: the new arm's mean over its rows at least
  MARGIN under the base arm's;
- every other garment: the new mean not over the base's by more than
  --mean-worse;
- every row of every garment: not worse by more than --row-worse;
- every per-seed table: not worse by more than --seed-worse.
"""
import argparse
import json
import sys


class Bad(Exception):
    pass


def ratio(rows):
    """model / skinning over rows: each garment's per-seed figure (eval.py's)."""
    return sum(r["model"]["mean_mm"] for r in rows) / sum(r["lbs"]["mean_mm"] for r in rows)


def load_run(path):
    """{(garment, motion): model/skinning} for rows by family, {garment: ratio} for a per-seed table;
    and for rows, {(garment, motion): (model mm, skinning mm)}."""
    try:
        with open(path) as f:
            res = json.load(f)
    except (OSError, ValueError) as e:
        raise Bad(f"{path}: not an eval.py --json file ({e})")
    if not isinstance(res, list) or not res:
        raise Bad(f"{path}: not an eval.py --json file (expected a non-empty list of rows)")
    try:
        for r in res:
            if not (r["model"]["mean_mm"] >= 0 and r["lbs"]["mean_mm"] > 0):
                raise Bad(f"{path}: a row without a positive skinning error ({r.get('garment')}, "
                          f"{r.get('motion', r.get('name'))})")
        if all("motion" in r for r in res):
            out, mm = {}, {}
            for r in res:
                key = (r["garment"], r["motion"])
                if key in out:
                    raise Bad(f"{path}: the row {key[0]} / {key[1]} twice")
                out[key] = r["model"]["mean_mm"] / r["lbs"]["mean_mm"]
                mm[key] = (r["model"]["mean_mm"], r["lbs"]["mean_mm"])
            return "rows", out, mm
        if any("motion" in r for r in res):
            raise Bad(f"{path}: rows by family mixed with per-seed rows")
        garments = sorted({r["garment"] for r in res})
        return "seeds", {g: ratio([r for r in res if r["garment"] == g]) for g in garments}, None
    except (KeyError, TypeError) as e:
        raise Bad(f"{path}: not an eval.py --json file (no {e} in a row)")


def load_arm(paths, name):
    """Mean over an arm's runs, and each run's, for both kinds of file."""
    runs = {"rows": [], "seeds": [], "mm": []}
    for p in paths:
        kind, v, mm = load_run(p)
        runs[kind].append((p, v))
        if mm:
            runs["mm"].append(mm)
    if not runs["rows"]:
        raise Bad(f"--{name}: no rows by family (eval.py --families --json) among its files")
    for kind in ("rows", "seeds"):
        rs = runs[kind]
        for p, v in rs[1:]:
            if set(v) != set(rs[0][1]):
                raise Bad(f"--{name}: {p} has other rows than {rs[0][0]}")
    return runs


def mean(xs):
    return sum(xs) / len(xs)


def garment_means(run):
    by = {}
    for (g, _), v in run.items():
        by.setdefault(g, []).append(v)
    return {g: mean(v) for g, v in by.items()}


def parse_gain(s):
    out = {}
    for part in filter(None, s.split(",")):
        g, _, m = part.partition("=")
        try:
            out[g] = float(m)
        except ValueError:
            raise Bad(f"--gain: '{part}' is not GARMENT=MARGIN")
    return out


def compare(a, out=sys.stdout):
    base, new = load_arm(a.base, "base"), load_arm(a.new, "new")
    if set(base["rows"][0][1]) != set(new["rows"][0][1]):
        raise Bad("the arms' rows differ (other garments or motions): compare runs of the same make eval plan")
    gain = parse_gain(a.gain)
    rows = list(base["rows"][0][1])  # make eval's order
    garments = list(dict.fromkeys(g for g, _ in rows))
    for g in gain:
        if g not in garments:
            raise Bad(f"--gain: no garment '{g}' in the rows ({', '.join(garments)})")
    B = {k: mean([v[k] for _, v in base["rows"]]) for k in rows}
    N = {k: mean([v[k] for _, v in new["rows"]]) for k in rows}
    nb, nn = len(base["rows"]), len(new["rows"])
    # beside each ratio, what it is of: skinning's error there and the change in
    # millimetres (a row whose skinning is 12 mm off moves 0.08 for 1 mm)
    Bm = {k: mean([m[k][0] for m in base["mm"]]) for k in rows}
    Nm = {k: mean([m[k][0] for m in new["mm"]]) for k in rows}
    L = {k: mean([m[k][1] for m in base["mm"] + new["mm"]]) for k in rows}
    print(f"base: {nb} run(s), new: {nn} run(s); model / skinning, mean over each arm's runs\n", file=out)
    print("| garment | motion | base | new | new - base | skinning mm | new - base mm |", file=out)
    print("|---|---|---:|---:|---:|---:|---:|", file=out)
    fails = []
    for k in rows:
        d = N[k] - B[k]
        print(f"| {k[0]} | {k[1]} | {B[k]:.4f} | {N[k]:.4f} | {d:+.4f} | {L[k]:.1f} | {Nm[k] - Bm[k]:+.1f} |", file=out)
        if d > a.row_worse:
            fails.append(f"{k[0]} / {k[1]}: worse by {d:.4f} (allowed {a.row_worse})")
    print("\n| garment | base mean | new mean | new - base | base spread | new spread | rule |", file=out)
    print("|---|---:|---:|---:|---:|---:|---|", file=out)
    spreads = {}
    for g in garments:
        bm = mean([B[k] for k in rows if k[0] == g])
        nm = mean([N[k] for k in rows if k[0] == g])
        # the spread of an arm: how far its runs' means land apart (unknown from one run)
        sp = []
        for arm in (base, new):
            ms = [garment_means(v)[g] for _, v in arm["rows"]]
            sp.append(max(ms) - min(ms) if len(ms) > 1 else None)
        spreads[g] = max([s for s in sp if s is not None], default=None)
        if g in gain:
            rule, ok = f"at least {gain[g]} under", nm <= bm - gain[g]
        else:
            rule, ok = f"at most {a.mean_worse} over", nm <= bm + a.mean_worse
        fmt = lambda s: "-" if s is None else f"{s:.4f}"
        print(f"| {g} | {bm:.4f} | {nm:.4f} | {nm - bm:+.4f} | {fmt(sp[0])} | {fmt(sp[1])} | "
              f"{rule}: {'ok' if ok else 'FAILS'} |", file=out)
        if not ok:
            fails.append(f"{g}: mean {nm:.4f} against {bm:.4f} ({rule})")
    if base["seeds"] or new["seeds"]:
        if not (base["seeds"] and new["seeds"]):
            raise Bad("a per-seed table in one arm only: give both arms theirs, or neither")
        sb = {g: mean([v[g] for _, v in base["seeds"]]) for g in base["seeds"][0][1]}
        sn = {g: mean([v[g] for _, v in new["seeds"]]) for g in new["seeds"][0][1]}
        if set(sb) != set(sn):
            raise Bad("the arms' per-seed tables have other garments")
        print("\n| per-seed table | base | new | new - base |", file=out)
        print("|---|---:|---:|---:|", file=out)
        for g in sorted(sb):
            print(f"| {g} | {sb[g]:.4f} | {sn[g]:.4f} | {sn[g] - sb[g]:+.4f} |", file=out)
            if sn[g] > sb[g] + a.seed_worse:
                fails.append(f"{g}: per-seed {sn[g]:.4f} against {sb[g]:.4f} (allowed {a.seed_worse} over)")
    inside = [g for g in gain if spreads.get(g) is not None and gain[g] <= spreads[g]]
    if inside:
        print(f"\nnote: the margin for {', '.join(inside)} is not wider than the runs' spread", file=out)
    if nb == 1 or nn == 1:
        print("\nnote: an arm of one run: its spread between runs is unknown", file=out)
    print("", file=out)
    for f in fails:
        print(f"FAILS: {f}", file=out)
    print("PASS" if not fails else "DOES NOT PASS", file=out)
    return 0 if not fails else 1


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--base", nargs="+", required=True, help="the base arm's eval.py --json files")
    ap.add_argument("--new", nargs="+", required=True, help="the new arm's eval.py --json files")
    ap.add_argument("--gain", default="", metavar="GARMENT=MARGIN,...",
                    help="garments whose mean must fall by at least MARGIN")
    ap.add_argument("--mean-worse", type=float, default=0.01, help="any other garment's mean: at most this worse")
    ap.add_argument("--row-worse", type=float, default=0.05, help="every row: at most this worse")
    ap.add_argument("--seed-worse", type=float, default=0.02, help="every per-seed table: at most this worse")
    a = ap.parse_args(argv)
    try:
        return compare(a)
    except Bad as e:
        print(f"compare: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
