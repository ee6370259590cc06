"""The teacher dataset: `drape sim garment` over (garment, betas, motion).

    /usr/bin/python3 train/dataset.py --base BASE.safetensors --out DIR \
        [--garments skirt,dress] [--train-betas 6] [--test-betas 2] \
        [--motions walk,run,...] [--train-seeds 3] [--test-seeds 1] \
        [--seconds 4] [--jobs 2] [--drape build/drape] [--sim-args "--iters 10"] \
        [--garment-sim-args "tshirt=--max-substeps 16 --max-disp 0.01"] \
        [--garment-prelude tshirt=walk:1] [--kind-seeds arm_swings=6]

Every sequence is one teacher run: DIR/seq/NAME.poses.npy ([T,75], the
motion) and DIR/seq/NAME.sim.npy ([T,V,3], the simulated garment). The plan
is deterministic from --seed. Held out, never trained on: the test betas
(drawn apart from the training ones) and the test motion seeds; a sequence is
in `test` when its betas or its motion is held out, so the test split mixes
unseen shapes, unseen motions and both. Generation runs --jobs teacher
processes at a time and is resumable: finished sequences are skipped, each
output is written to a temporary name and renamed when complete. DIR/
manifest.json lists the sequences with their split and what made them (the
teacher's version, its arguments, the clip length, the SHA-256 of the base
bundle's body and garment tensors): a DIR made by another teacher is
refused, not silently mixed in, unless --replace-stale, which deletes its
sequences first: only those of the garments whose --garment-sim-args or
--garment-prelude changed when nothing else did, every sequence otherwise.

--garment-prelude GARMENT=KIND:SEED[:SECONDS] gives that garment's teacher a
worn-in start: every sequence is simulated after the same prelude (that
motion, 1.5 s unless SECONDS, then half a second's blend into the clip's
first pose, train/motions.py `lead_in`), and only the clip's frames are
stored, in the clip's own world frame. Without it the garment starts at rest,
skinned to the clip's first pose (docs/training-log.md, "A worn-in start").

--kind-seeds KIND=N plays N draws of KIND on each training shape instead of
--train-seeds; the extra draws are numbered after the held-out ones (their
names' sN), so the held-out sequences stay the same motions.

--speed LO,HI makes every sequence another draw of its family (seed +
100000) played faster, at a speed drawn per sequence in [LO, HI] (name
suffix -xS): motion of the training families faster than they draw it, so
that the network's inputs and its data reach further (docs/training-log.md,
"Faster motion": tried on the skirt and the dress, not shipped).

--splice makes every training sequence another draw of its family (seed +
200000) whose upper body (spine, neck, head, collars and arms; the root,
legs and translation stay) comes from the same seed's draw of another
training family, drawn per sequence (name suffix -uKIND): walking with the
arms overhead, a kick with arm swings, combinations no family draws
(docs/training-log.md, "Two families in one body").

A base that carries teacher settings (config "teacher", docs/design.md
§3.3: the default model does) has `drape sim garment` start from them, the
flags given here over them; they are part of the manifest's teacher.

--held-out KIND,... holds whole motion families out: their sequences are all
in `test` (the held-out draws on the first --test-motion-betas training
shapes, and one draw on each test shape), none in `train`.

--plan wide sets the defaults of the wide plan (PLANS["wide"], issue 31;
docs/training.md "Motion families"): train/motions.py's first 13 families
(motions.WIDE_FAMILIES), three held out whole (motions.HELD_OUT_FAMILIES), 8 training shapes, 3 draws of 5 s
of each training family on each: 20 minutes of training motion per garment.
Flags given override it (--train-betas, --train-seeds and --seconds scale
it). --summary prints the plan's minutes per garment, split and family.
"""
import argparse
import glob
import hashlib
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bundle import read_bundle  # noqa: E402

try:
    import motions  # noqa: E402  (train/motions.py: the motion generator)
except ImportError:  # pragma: no cover - older trees
    motions = None
import assets  # noqa: E402

DEFAULT_KINDS = ["walk", "run", "turn", "jump", "arm_swings", "idle", "stop"]
# Named plans: defaults for the flags of the same names (flags given win).
# "wide": issue 31's plan for the default model, the 13 wide families, three
# held out whole; 10 training families x 8 shapes x 3 draws x 5 s = 20 minutes of
# training motion per garment (x2 shapes or draws: 40). Its test split: the
# held-out families on 2 training and 2 unseen shapes, and the training
# families' held-out draws on the same, 5 s each.
PLANS = {
    "wide": {"motions": ",".join(motions.WIDE_FAMILIES) if motions else "", "held_out":
             ",".join(motions.HELD_OUT_FAMILIES) if motions else "", "train_betas": 8, "test_betas": 2,
             "train_seeds": 3, "test_seeds": 1, "test_motion_betas": 2, "seconds": 5.0},
}
# The teacher's behaviour, bumped when `drape sim garment` changes what it
# computes: 1 world-frame friction and damping per substep; 2 Coulomb
# friction against the body's motion, damping per frame (docs/training-log.md).
TEACHER_VERSION = 2
# --speed's draws are other motions than the plan's own (seed + this): a
# faster copy of a motion the model also sees at its own speed would add
# less than a new one
SPEED_SEED_OFFSET = 100000
# --splice's draws: others again, apart from the plan's and --speed's
SPLICE_SEED_OFFSET = 200000
# The pose columns ([T,75], SMPL order) --splice takes from the other
# family: the spine, neck, head, collars and arms (joints 3, 6, 9, 12-23);
# the root, legs and translation stay the sequence's own
UPPER_JOINTS = (3, 6, 9) + tuple(range(12, 24))
UPPER_COLS = np.array([3 * j + c for j in UPPER_JOINTS for c in range(3)])


def teacher_of(a):
    """What made the sequences: the teacher and its settings, and the body and
    garments it draped (their tensors only: the network's sizes and pose
    history do not change what the teacher computes, nor does a garment's
    own network, garment.<g>.net.*)."""
    cfg, t = read_bundle(a.base)
    h = hashlib.sha256()
    for k in sorted(t):
        if k.startswith(("body.", "garment.")) and k.split(".")[2:3] != ["net"]:
            v = np.ascontiguousarray(t[k])
            h.update(f"{k}|{v.dtype.str}|{v.shape}|".encode())
            h.update(v.tobytes())
    t = {"version": TEACHER_VERSION, "sim_args": a.sim_args, "seconds": a.seconds, "assets_sha256": h.hexdigest()}
    if a.garment_sim:  # only when given, so datasets made before the option stay current
        t["garment_sim_args"] = a.garment_sim
    if a.prelude:  # the same
        t["garment_prelude"] = {g: f"{k}:{s}:{sec:g}" for g, (k, s, sec) in a.prelude.items()}
    if cfg.get("teacher"):  # the base's teacher settings, under the flags given (docs/design.md §3.3)
        t["bundle_teacher"] = cfg["teacher"]
    return t


def garment_sim_args(a):
    """--garment-sim-args GARMENT=ARGS (repeatable) as {garment: args}; ARGS
    follow --sim-args on that garment's command line, so they override it."""
    out = {}
    for kv in a.garment_sim_args:
        g, eq, args = kv.partition("=")
        if not eq or g not in a.garments.split(",") or g in out:
            raise SystemExit(f"dataset: --garment-sim-args {kv!r}: expected GARMENT=ARGS, once per garment, "
                             f"GARMENT one of --garments ({a.garments})")
        out[g] = args
    return out


def garment_preludes(a):
    """--garment-prelude GARMENT=KIND:SEED[:SECONDS] (repeatable) as
    {garment: (kind, seed, seconds)}."""
    out = {}
    for kv in a.garment_prelude:
        g, eq, spec = kv.partition("=")
        parts = spec.split(":")
        bad = (not eq or g not in a.garments.split(",") or g in out or len(parts) not in (2, 3)
               or (motions is not None and parts[0] not in motions.KINDS) or not parts[1].isdigit())
        sec = 1.5
        if not bad and len(parts) == 3:
            try:
                sec = float(parts[2])
            except ValueError:
                bad = True
            bad = bad or not 0.1 <= sec <= 10
        if bad or motions is None:
            raise SystemExit(f"dataset: --garment-prelude {kv!r}: expected GARMENT=KIND:SEED[:SECONDS], once per "
                             f"garment, GARMENT one of --garments ({a.garments}), KIND a motion kind, "
                             f"SECONDS in [0.1, 10]")
        out[g] = (parts[0], int(parts[1]), sec)
    return out


def kind_seeds(a):
    """--kind-seeds KIND=N[,KIND=N...] as {kind: N}: N training draws of KIND
    (at least --train-seeds) on each training shape."""
    out = {}
    for kv in filter(None, a.kind_seeds.split(",")):
        k, eq, n = kv.partition("=")
        if not eq or k not in a.motions.split(",") or k in out or not n.isdigit() \
                or not a.train_seeds <= int(n) <= 100:
            raise SystemExit(f"dataset: --kind-seeds {kv!r}: expected KIND=N, once per kind, KIND one of "
                             f"--motions ({a.motions}), N in [--train-seeds ({a.train_seeds}), 100]")
        out[k] = int(n)
    return out


def check_stale(a, teacher):
    """Refuse (or with --replace-stale, clear) sequences another teacher made.
    When only some garments' own arguments changed, only their sequences are
    another teacher's: the others' are kept."""
    seq_files = glob.glob(os.path.join(a.out, "seq", "*.npy"))
    if not seq_files:
        return None
    try:
        with open(os.path.join(a.out, "manifest.json")) as f:
            man = json.load(f)
        old = man.get("teacher", {"version": 1})
        garment_of = {s["name"]: s["garment"] for s in man.get("sequences", [])}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        old, garment_of = {"version": "unknown (no readable manifest.json)"}, {}
    if old == teacher:
        return None
    diff = ", ".join(f"{k} {old.get(k)!r} -> {v!r}" for k, v in teacher.items() if old.get(k) != v)
    per_garment = ("garment_sim_args", "garment_prelude")
    rest = lambda t: {k: v for k, v in t.items() if k not in per_garment}  # noqa: E731
    if rest(old) == rest(teacher):
        changed = set()
        for key in per_garment:
            ga, gb = old.get(key) or {}, teacher.get(key) or {}
            changed |= {g for g in set(ga) | set(gb) if ga.get(g, "") != gb.get(g, "")}
        changed = sorted(changed)
        # a file the old manifest does not place under a garment is stale too
        names = {p: os.path.basename(p).split(".")[0] for p in seq_files}
        stale = [p for p, n in names.items() if n not in garment_of or garment_of[n] in changed]
        which = f"those of {', '.join(changed) or 'no garment'}"
    else:
        stale, which = seq_files, "all"
    if not a.replace_stale:
        return (f"dataset: {a.out} holds {len(stale)} files from another teacher ({diff}); "
                "remove it, choose another --out, or pass --replace-stale")
    for p in stale:
        os.remove(p)
    print(f"dataset: removed {len(stale)} stale files ({which}) from {a.out} ({diff})", file=sys.stderr)
    return None


def make_motion(kind, seed, seconds, fps, speed=1.0, upper=None):
    """[T,75] float32 for a motion kind, played SPEED times as fast (the
    family's draw over speed·seconds, sampled every speed/fps s), its upper
    body (UPPER_COLS) from family UPPER's draw of the same seed when given;
    falls back to a damped random drift where train/motions.py is not there."""
    T = int(round(seconds * fps))
    if motions is not None:
        def draw(k):
            return np.asarray(motions.generate(k, seconds * speed, seed, fps=fps / speed)[0], np.float32)[:T]
        m = draw(kind)
        if upper:
            m[:, UPPER_COLS] = draw(upper)[:, UPPER_COLS]
        return m
    rng = np.random.default_rng(seed)
    m = assets.random_motion(rng, T, fps=fps, pose_std=0.1, speed=0.5)
    m[:, 3:72] *= 0.5
    return m


def plan(cfg, a):
    """The list of sequences: dicts with name, split, garment, betas, kind, seed."""
    rng = np.random.default_rng(a.seed)
    S = cfg["betas"]
    lo, hi = cfg["beta_range"]
    # Shapes within ±2 (of ±3) on the first four betas (height, girth, ...);
    # the rest small: the teacher's meshes stay sensible.
    def draw(n):
        b = np.zeros((n, S))
        b[:, :4] = rng.uniform(max(lo, -2), min(hi, 2), (n, 4))
        b[:, 4:] = rng.uniform(-0.5, 0.5, (n, S - 4))
        return np.round(b, 3)
    train_b, test_b = draw(a.train_betas), draw(a.test_betas)
    kinds = a.motions.split(",")
    held = set(filter(None, a.held_out.split(",")))
    if held - set(kinds):
        raise SystemExit(f"dataset: --held-out {a.held_out}: {', '.join(sorted(held - set(kinds)))} not in "
                         f"--motions ({a.motions})")
    seqs = []
    for g in a.garments.split(","):
        if g not in cfg["garments"]:
            raise SystemExit(f"dataset: garment {g!r} is not in the base bundle ({cfg['garments']})")
        for bi, (b, b_test) in enumerate([(b, False) for b in train_b] + [(b, True) for b in test_b]):
            for kind in kinds:
                # --kind-seeds: more training draws of a kind, numbered after
                # the held-out ones so that those stay the same motions
                extra = 0 if b_test else a.draws.get(kind, a.train_seeds) - a.train_seeds
                for s in range(a.train_seeds + a.test_seeds + extra):
                    m_test = a.train_seeds <= s < a.train_seeds + a.test_seeds
                    # each (garment, betas) sees a different draw of each motion
                    seed = 1000 * s + 17 * bi + kinds.index(kind)
                    split = "test" if (b_test or m_test) else "train"
                    # keep the test set small: unseen shapes see one motion seed,
                    # unseen motions are played on the first few training shapes
                    if b_test and s > 0:
                        continue
                    if m_test and not b_test and bi >= a.test_motion_betas:
                        continue
                    # a held-out family: only its held-out draws on training shapes
                    if kind in held and not b_test and not m_test:
                        continue
                    seq = {"name": f"{g}-b{bi}{'t' if b_test else ''}-{kind}-s{s}{'t' if m_test else ''}",
                           "split": "test" if kind in held else split, "garment": g, "betas": b.tolist(),
                           "kind": kind, "seed": int(seed), "test_betas": b_test,
                           "test_motion": m_test or kind in held}
                    if held:  # (only then, so that older plans' manifests stay as they were)
                        seq["held_out_family"] = kind in held
                    if a.speed_range:  # --speed: other draws, played faster
                        lo_s, hi_s = a.speed_range
                        seq["seed"] = int(seed) + SPEED_SEED_OFFSET
                        # a stream of its own, apart from the one the motion draws from
                        seq["speed"] = round(float(np.random.default_rng([seq["seed"], 7]).uniform(lo_s, hi_s)), 2)
                        seq["name"] += f"-x{seq['speed']:.2f}"
                    if a.splice and seq["split"] == "train":  # --splice: other draws, two families in one body
                        seq["seed"] += SPLICE_SEED_OFFSET
                        others = [k for k in kinds if k != kind and k not in held]
                        if others:
                            seq["upper"] = str(np.random.default_rng([seq["seed"], 11]).choice(others))
                            seq["name"] += f"-u{seq['upper']}"
                    seqs.append(seq)
    return seqs


def summary(seqs, seconds):
    """The plan's motion minutes per garment and split, and per family: lines of text."""
    out = []
    for g in dict.fromkeys(s["garment"] for s in seqs):
        G = [s for s in seqs if s["garment"] == g]
        n = {sp: sum(s["split"] == sp for s in G) for sp in ("train", "test")}
        out.append(f"{g}: {n['train']} training sequences, {n['train'] * seconds / 60:.1f} min; "
                   f"{n['test']} test sequences, {n['test'] * seconds / 60:.1f} min")
        for k in dict.fromkeys(s["kind"] for s in G):
            K = [s for s in G if s["kind"] == k]
            tr = sum(s["split"] == "train" for s in K)
            tag = " (held out)" if any(s.get("held_out_family") for s in K) else ""
            out.append(f"  {k}{tag}: {tr} train ({tr * seconds / 60:.1f} min), {len(K) - tr} test")
    return out


def run_one(seq, a, fps):
    d = os.path.join(a.out, "seq")
    poses_p = os.path.join(d, seq["name"] + ".poses.npy")
    sim_p = os.path.join(d, seq["name"] + ".sim.npy")
    if os.path.exists(sim_p) and os.path.exists(poses_p):
        return seq["name"], "skip", 0.0
    m = make_motion(seq["kind"], seq["seed"], a.seconds, fps, seq.get("speed", 1.0), seq.get("upper"))
    np.save(poses_p + ".tmp.npy", m)
    os.replace(poses_p + ".tmp.npy", poses_p)
    t0 = time.time()
    sim_in, move = poses_p, None
    if seq["garment"] in a.prelude:
        kind, seed, sec = a.prelude[seq["garment"]]
        pre = np.asarray(motions.generate(kind, sec, seed, fps=fps)[0], np.float32)
        full, move = motions.lead_in(pre, m)
        sim_in = os.path.join(d, seq["name"] + ".lead.tmp.npy")
        np.save(sim_in, full)
    cmd = [a.drape, "sim", "garment", "--model", a.base, "--garment", seq["garment"],
           "--betas", ",".join(f"{x:g}" for x in seq["betas"]), "--poses", sim_in,
           "--out", sim_p + ".tmp.npy"] + a.sim_args.split() + a.garment_sim.get(seq["garment"], "").split()
    r = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
    if move is not None:
        os.remove(sim_in)
    if r.returncode:
        return seq["name"], "fail: " + (r.stderr.strip().splitlines() or ["?"])[-1], 0.0
    if move is not None:  # keep the clip's frames, in its own world frame
        x = np.load(sim_p + ".tmp.npy")[-len(m):] - move[None, None, :]
        np.save(sim_p + ".tmp.npy", x.astype(np.float32))
    os.replace(sim_p + ".tmp.npy", sim_p)
    return seq["name"], "ok", time.time() - t0


def parse_args(argv=None):
    """The command line, a named plan's defaults applied, its per-garment and
    per-kind options parsed (a.garment_sim, a.prelude, a.draws)."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--plan", choices=sorted(PLANS), help="a named plan's defaults (PLANS; flags given win)")
    ap.add_argument("--garments", default="skirt")
    ap.add_argument("--train-betas", type=int, default=6)
    ap.add_argument("--test-betas", type=int, default=2)
    ap.add_argument("--motions", default=",".join(DEFAULT_KINDS))
    ap.add_argument("--train-seeds", type=int, default=2)
    ap.add_argument("--test-seeds", type=int, default=1)
    ap.add_argument("--test-motion-betas", type=int, default=1 << 30,
                    help="how many training shapes also play the held-out motions")
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--drape", default="build/drape")
    ap.add_argument("--sim-args", default="")
    ap.add_argument("--garment-sim-args", action="append", default=[], metavar="GARMENT=ARGS",
                    help="more teacher arguments for one garment (after --sim-args, so they win)")
    ap.add_argument("--garment-prelude", action="append", default=[], metavar="GARMENT=KIND:SEED[:SECONDS]",
                    help="that garment's teacher starts worn in: each sequence after this motion (not stored)")
    ap.add_argument("--held-out", default="", metavar="KIND,...",
                    help="motion families held out whole: all their sequences are test sequences")
    ap.add_argument("--summary", action="store_true",
                    help="print the plan's minutes per garment and family, and stop")
    ap.add_argument("--kind-seeds", default="", metavar="KIND=N[,KIND=N...]",
                    help="N training draws of KIND on each training shape instead of --train-seeds "
                         "(the held-out draws unchanged)")
    ap.add_argument("--speed", default="", metavar="LO,HI",
                    help="every sequence another draw (seed + %d) played faster: a speed drawn in [LO, HI] "
                         "per sequence" % SPEED_SEED_OFFSET)
    ap.add_argument("--splice", action="store_true",
                    help="every training sequence another draw (seed + %d) with its upper body (spine, "
                         "neck, head, arms) from another training family's draw" % SPLICE_SEED_OFFSET)
    ap.add_argument("--only", choices=["train", "test"], help="generate one split only")
    ap.add_argument("--dry-run", action="store_true",
                    help="print the plan (a line per sequence: name, split, kind, motion seed) and stop")
    ap.add_argument("--replace-stale", action="store_true",
                    help="delete sequences that another teacher (version, sim args, length, base) made")
    a = ap.parse_args(argv)
    if a.plan:  # the plan's values as defaults, then the flags again over them
        ap.set_defaults(**PLANS[a.plan])
        a = ap.parse_args(argv)
    a.garment_sim = garment_sim_args(a)
    a.prelude = garment_preludes(a)
    a.draws = kind_seeds(a)
    a.speed_range = speed_range(a.speed)
    return a


def speed_range(spec):
    """--speed LO,HI as (LO, HI), or None without it."""
    if not spec:
        return None
    try:
        lo, hi = (float(x) for x in spec.split(","))
    except ValueError:
        lo = hi = float("nan")
    if not 0.25 <= lo <= hi <= 4:
        raise SystemExit(f"dataset: --speed {spec!r}: expected LO,HI with 0.25 <= LO <= HI <= 4")
    return lo, hi


def main(argv=None):
    a = parse_args(argv)
    cfg, _ = read_bundle(a.base)
    seqs = plan(cfg, a)
    n_test = sum(s["split"] == "test" for s in seqs)
    print(f"dataset: {len(seqs)} sequences ({len(seqs) - n_test} train, {n_test} test) in {a.out}", file=sys.stderr)
    if a.summary:
        print("\n".join(summary(seqs, a.seconds)))
        return 0
    if a.dry_run:
        for s in seqs:
            print(f"{s['name']} {s['split']} {s['kind']} seed {s['seed']}")
        return 0
    teacher = teacher_of(a)
    stale = check_stale(a, teacher)
    if stale:
        print(stale, file=sys.stderr)
        return 2
    os.makedirs(os.path.join(a.out, "seq"), exist_ok=True)
    manifest = {"base": os.path.abspath(a.base), "fps": cfg["fps"], "seconds": a.seconds,
                "sim_args": a.sim_args, "teacher": teacher, "sequences": seqs}
    with open(os.path.join(a.out, "manifest.json.tmp"), "w") as f:
        json.dump(manifest, f, indent=1)
    os.replace(os.path.join(a.out, "manifest.json.tmp"), os.path.join(a.out, "manifest.json"))
    if a.only:
        seqs = [s for s in seqs if s["split"] == a.only]
    t0, done, failed = time.time(), 0, 0
    with ThreadPoolExecutor(a.jobs) as ex:
        for name, status, dt in ex.map(lambda s: run_one(s, a, cfg["fps"]), seqs):
            done += 1
            failed += status.startswith("fail")
            eta = (time.time() - t0) / done * (len(seqs) - done)
            print(f"dataset: [{done}/{len(seqs)}] {name}: {status} {dt:.1f} s  (eta {eta / 60:.1f} min)",
                  file=sys.stderr, flush=True)
    if failed:
        print(f"dataset: {failed} sequences failed", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
