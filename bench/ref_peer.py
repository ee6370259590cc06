"""PyTorch peer of `drape_bench --contention`: module A at batch 1 on request.

    /usr/bin/python3 bench/ref_peer.py --model M.safetensors --garment skirt --threads N

Loads the bundle into the PyTorch reference (train/reference.py), makes one
identity, prints {"ready": true}, then reads lines from stdin: "K MS" runs
frames of one avatar (its own three-frame window, as train/bench_ref.py's
batch of 1) after one untimed frame, at most K and for about MS
milliseconds but at least two, and prints {"ms": [t1, ...]}, each frame's
wall time; EOF or "quit" ends it. The benchmark interleaves these
blocks with the C runtime's, so both see the same neighbours.
"""
import argparse
import json
import os
import sys
import time

import numpy as np
import torch

TRAIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "train")
sys.path.insert(0, TRAIN)
import assets  # noqa: E402
from reference import Drape, frame_windows  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--garment", default="skirt")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--betas", default="0.5,-1")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()

    torch.set_num_threads(a.threads)
    model = Drape.load(a.model, "cpu")
    with torch.no_grad():
        ident = model.identity(a.garment, [float(b) for b in a.betas.split(",") if b.strip()])
        w = frame_windows(assets.random_motion(np.random.default_rng(a.seed), 3))
        poses, trans = torch.from_numpy(w[0][2][None]), torch.from_numpy(w[1][2][None])
        model.frames(ident, poses, trans)
        print(json.dumps({"ready": True}), flush=True)
        for line in sys.stdin:
            if line.strip() == "quit":
                break
            k, budget = line.split()
            k, budget = max(2, int(k)), float(budget)
            model.frames(ident, poses, trans)
            ms = []
            while len(ms) < k and (len(ms) < 2 or sum(ms) < budget):
                t0 = time.perf_counter()
                model.frames(ident, poses, trans)
                ms.append(round((time.perf_counter() - t0) * 1e3, 4))
            print(json.dumps({"ms": ms}), flush=True)


if __name__ == "__main__":
    main()
