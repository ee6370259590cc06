"""The goals of the CUDA backend (issue 36), one row each: ours, the peer,
the goal, pass or FAIL; from the logs of `make gpu-check`'s steps.

    python3 bench/gpu_goals.py LOG_DIR [--precision fp16]

Reads LOG_DIR/bench_gpu.jsonl (bench_gpu.c's JSON lines: module A per frame
per bundle, backend, precision and batch, PyTorch eager's too),
LOG_DIR/torch_compile.log (train/bench_ref.py --compile's JSON lines, paper
scale) and LOG_DIR/load.log (`drape load --json` against draped on the CUDA
backend, bench/gpu_load.sh). A goal whose own numbers are missing (its step
did not run or failed) is a FAIL; one where ours was measured but the peer
was not (no PyTorch with CUDA there) is "unmeasured", counted apart. Exit
status: 0 when every goal passes, 1 otherwise, 2 on bad usage.
"""
import argparse
import json
import os
import sys

BATCHES = (1, 8, 32, 64, 256)


def json_lines(path):
    """The JSON objects of a file, one a line; other lines are skipped."""
    out = []
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                line = line.strip()
                if line.startswith("{"):
                    try:
                        out.append(json.loads(line))
                    except ValueError:
                        pass
    except OSError:
        pass
    return out


def fmt_ms(x):
    return "—" if x is None else f"{x:.4f} ms"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("log")
    ap.add_argument("--precision", default=os.environ.get("GPU_GOAL_PRECISION", "fp16"),
                    help="the CUDA backend's precision the goals are judged at (default fp16: the tensor cores)")
    a = ap.parse_args()
    if not os.path.isdir(a.log):
        print(f"gpu_goals: {a.log} is not a folder", file=sys.stderr)
        return 2

    bench = json_lines(os.path.join(a.log, "bench_gpu.jsonl"))

    def ours(bundle, batch):
        for r in bench:
            if (r.get("bundle", "").startswith(bundle) and r.get("backend") == "cuda"
                    and r.get("precision") == a.precision and r.get("batch") == batch):
                return r.get("ms_per_frame")
        return None

    def eager(bundle, batch):
        for r in bench:
            if r.get("bundle", "").startswith(bundle) and r.get("backend") == "torch_eager" and r.get("batch") == batch:
                return r.get("ms_per_frame")
        return None

    compiled = {r["batch"]: r["ms_per_frame"] for r in json_lines(os.path.join(a.log, "torch_compile.log"))
                if r.get("what") == "moduleA" and "batch" in r and "ms_per_frame" in r}
    loads = json_lines(os.path.join(a.log, "load.log"))
    load = loads[-1] if loads else None

    rows = []  # (goal, ours, peer, target, verdict: True, False or None for unmeasured)

    def faster(goal, mine, peer, peer_name):
        ok = None if mine is not None and peer is None else mine is not None and mine < peer
        rows.append((goal, fmt_ms(mine), f"{fmt_ms(peer)} ({peer_name})", "faster than the peer", ok))

    b1 = ours("paper", 1)
    rows.append(("paper, module A at batch 1", fmt_ms(b1), f"{fmt_ms(compiled.get(1))} (torch.compile)", "≤ 0.5 ms",
                 b1 is not None and b1 <= 0.5))
    b256 = ours("paper", 256)
    fps = None if not b256 else 1e3 / b256
    peer = compiled.get(256)
    rows.append(("paper, module A at batch 256", "—" if fps is None else f"{fps:.0f} frames/s",
                 "—" if not peer else f"{1e3 / peer:.0f} frames/s (torch.compile)", "≥ 2,000 frames/s",
                 fps is not None and fps >= 2000))
    for b in BATCHES:
        faster(f"paper, batch {b}", ours("paper", b), compiled.get(b), "torch.compile")
    for b in BATCHES:
        faster(f"small, batch {b}", ours("small", b), eager("small", b), "PyTorch eager")
    s1 = ours("small", 1)
    rows.append(("small, module A at batch 1", fmt_ms(s1), f"{fmt_ms(eager('small', 1))} (PyTorch eager)", "≤ 0.15 ms",
                 s1 is not None and s1 <= 0.15))
    if load:
        lat = load.get("latency_ms", {})
        lost = load.get("dropped", 0) + load.get("missing", 0)
        errs = load.get("errors", 0) + load.get("connection_errors", 0)
        mine = (f"p99 {lat.get('p99', float('nan')):.2f} ms, {lost} dropped, {errs} errors, "
                f"{load.get('throughput_fps', 0):.0f} frames/s")
        # every frame the avatars were to send went out (the client kept up)
        due = load.get("avatars", 0) * load.get("fps", 0) * load.get("duration_s", 0)
        ok = (load.get("avatars") == 1000 and lat.get("p99", 1e9) <= 10 and lost == 0 and errs == 0
              and load.get("received", 0) > 0 and load.get("sent", 0) >= 0.98 * due > 0)
    else:
        mine, ok = "—", False
    rows.append(("default model, draped, 1,000 avatars x 30 fps", mine, "—", "p99 ≤ 10 ms, 0 dropped", ok))

    print(f"Goals (the CUDA backend at {a.precision}; a missing number of ours is a FAIL, a missing peer's"
          " is unmeasured)\n")
    print("| goal | ours | peer | target | result |")
    print("|---|---|---|---|---|")
    for goal, mine, peer, target, ok in rows:
        print(f"| {goal} | {mine} | {peer} | {target} | {'unmeasured' if ok is None else 'pass' if ok else 'FAIL'} |")
    passed = sum(r[4] is True for r in rows)
    unmeasured = sum(r[4] is None for r in rows)
    print(f"\n{passed} of {len(rows)} goals pass" + (f", {unmeasured} unmeasured (no peer)" if unmeasured else ""))
    return 0 if passed == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
