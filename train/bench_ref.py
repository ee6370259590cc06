"""Benchmark peer for the C runtime: the PyTorch reference's modules A and B.

    /usr/bin/python3 train/bench_ref.py --model M.safetensors --garment skirt \
        --threads N --batches 1,32 --iters K [--betas ...] [--lbs-only] [--device cpu|cuda] [--compile]

Prints one JSON object per line:
  {"what": "moduleB", "ms_per_identity": ...}
  {"what": "moduleA", "batch": b, "ms_per_frame": ..., "ms_per_batch": ...}
With --compile module A goes through torch.compile (default mode, one
compilation per batch shape, not timed; its line carries "compiled": true and
"compile_s"). A batch of b is b avatars of one identity, each with its own three poses,
through module A in one call. Everything runs under torch.no_grad() after one
warm-up call; times are medians over --iters calls.
"""
import argparse
import json
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import assets  # noqa: E402
from reference import Drape, frame_windows  # noqa: E402


def timed(fn, iters, sync):
    """Median wall time of fn() in ms, after one warm-up call."""
    fn()
    sync()
    times = []
    for _ in range(iters):
        t0 = time.perf_counter()
        fn()
        sync()
        times.append((time.perf_counter() - t0) * 1e3)
    return float(np.median(times))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--garment", default="skirt")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batches", default="1,32")
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--betas", default="0.5,-1")
    ap.add_argument("--lbs-only", action="store_true", help="time the plain skinning baseline")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--compile", action="store_true", help="module A through torch.compile")
    a = ap.parse_args()

    if a.compile and not hasattr(torch, "compile"):
        sys.exit(f"bench_ref: --compile needs torch.compile (PyTorch 2); this is PyTorch {torch.__version__}")
    torch.set_num_threads(a.threads)
    sync = torch.cuda.synchronize if a.device == "cuda" else (lambda: None)
    model = Drape.load(a.model, a.device)
    betas = [float(b) for b in a.betas.split(",") if b.strip()]
    common = {"garment": a.garment, "threads": a.threads, "device": a.device,
              "preset": model.cfg.get("preset"), "lbs_only": a.lbs_only, "iters": a.iters}

    with torch.no_grad():
        ms = timed(lambda: model.identity(a.garment, betas, a.lbs_only), a.iters, sync)
        print(json.dumps({"what": "moduleB", "ms_per_identity": round(ms, 4), **common}), flush=True)

        ident = model.identity(a.garment, betas, a.lbs_only)
        rng = np.random.default_rng(a.seed)
        for b in (int(x) for x in a.batches.split(",")):
            # b avatars, each with its own random three-frame window.
            windows = [frame_windows(assets.random_motion(rng, 3)) for _ in range(b)]
            poses = torch.from_numpy(np.stack([w[0][2] for w in windows])).to(model.device)
            trans = torch.from_numpy(np.stack([w[1][2] for w in windows])).to(model.device)
            extra = {}
            if a.compile:
                # compiled again for each batch shape, static: the peer at its best per
                # shape, and no second compile for a dynamic batch size
                frames = torch.compile(model.frames, dynamic=False)
                t0 = time.perf_counter()
                frames(ident, poses, trans, a.lbs_only)
                sync()
                extra = {"compiled": True, "compile_s": round(time.perf_counter() - t0, 1)}
            else:
                frames = model.frames
            ms = timed(lambda: frames(ident, poses, trans, a.lbs_only), a.iters, sync)
            print(json.dumps({"what": "moduleA", "batch": b, "ms_per_frame": round(ms / b, 4),
                              "ms_per_batch": round(ms, 4), **extra, **common}), flush=True)


if __name__ == "__main__":
    main()
