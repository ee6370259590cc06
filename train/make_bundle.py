"""Make a complete model bundle: procedural body and garments plus network weights.

    /usr/bin/python3 train/make_bundle.py --preset tiny|small|paper|default --seed 0 \
        --weights random|zero --out PATH.safetensors

`--weights zero` gives the plain-skinning model (every weight and bias zero,
in_mean 0, in_std 1). `--weights random` gives an untrained but non-trivial
model: PyTorch-like uniform init, then the last layers rescaled so the
corrections are visible and bounded (bone rotations of a few degrees, bone
translations and vertex displacements of millimetres to about a centimetre),
which makes a 1e-4 m cross-check against the C runtime meaningful.
"""
import argparse
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import assets  # noqa: E402
from bundle import write_bundle  # noqa: E402
from reference import Drape, frame_windows, history, network_names, skin_weights  # noqa: E402

# docs/conventions.md, "Bundle" presets.
PRESETS = {
    "tiny": dict(bones=8, skin_k=4, hidden=32, z_dim=16, pose_dim=4, feat_dim=4,
                 uv_size=[32, 32], conv=[8, 8, 3], latent=16, blocks=2, knn=2),
    "small": dict(bones=32, skin_k=8, hidden=128, z_dim=64, pose_dim=16, feat_dim=16,
                  uv_size=[128, 128], conv=[32, 64, 64, 32, 3], latent=64, blocks=4, knn=4),
    "paper": dict(bones=128, skin_k=16, hidden=256, z_dim=128, pose_dim=16, feat_dim=32,
                  uv_size=[512, 512], conv=[64, 128, 128, 64, 3], latent=128, blocks=15, knn=4),
    # The default model's assets ("default" resolution: garments of 2k-8k
    # vertices); the network sizes are a starting point for training.
    "default": dict(bones=32, skin_k=8, hidden=128, z_dim=64, pose_dim=16, feat_dim=16,
                    uv_size=[256, 256], conv=[32, 64, 64, 32, 3], latent=64, blocks=4, knn=4),
}
# tiny with a longer pose history, gaps and all (t-6, t-3, t-1, t): the
# runtime's history paths against the reference's (docs/conventions.md)
PRESETS["tinyhist"] = dict(PRESETS["tiny"], history=[6, 3, 1, 0])
# tiny with a network of its own for the second garment (docs/conventions.md,
# "A garment's own network"): the runtime's per-network split against the
# reference's
PRESETS["tinyown"] = dict(PRESETS["tiny"])
OWN_NETWORKS = {"tinyown": ["miniskirt"]}
# tiny with the refine step on its first garment (docs/conventions.md, "The
# refine step"): the runtime's refine against the reference's
PRESETS["tinyrefine"] = dict(PRESETS["tiny"], refine={"skirt": {"iters": 10, "stiffness": 1.0, "margin": 0.003}})
# Presets whose assets are another preset's (the same body and garments).
ASSET_RESOLUTION = {"tinyhist": "tiny", "tinyown": "tiny", "tinyrefine": "tiny"}
GARMENT_NAMES = ["skirt", "miniskirt"]
# Presets that carry other garments than GARMENT_NAMES (the test presets keep
# exactly those two, so their bundles do not change).
PRESET_GARMENTS = {"default": ["skirt", "miniskirt", "dress", "tshirt"]}

# Target spreads of the random model's corrections (standard deviations).
TARGET = {"dw": 0.5, "film": 0.2, "rot6d": 0.03, "tau": 0.004, "delta": 0.003}


def make_config(preset, seed, weights):
    cfg = {"format_version": 1, "fps": 30, "betas": assets.NUM_BETAS}
    cfg.update(PRESETS[preset])
    cfg.update({"beta_range": [-3, 3], "garments": PRESET_GARMENTS.get(preset, GARMENT_NAMES), "up": "y", "units": "m",
                "preset": preset, "seed": seed, "weights_init": weights})
    return cfg


def asset_tensors(cfg, preset, rng):
    """Body and garment tensors, float32 / int32, under their bundle names."""
    body = assets.make_body(preset, rng)
    t = {}
    for k in ("v_template", "shapedirs", "J_regressor", "weights", "parents", "faces"):
        t["body." + k] = body[k]
    for name in cfg["garments"]:
        g = assets.make_garment(name, body, preset, cfg["bones"], cfg["skin_k"])
        if preset in PRESET_GARMENTS:  # not in the test presets: their bytes stay
            g["attach"] = assets.attach_vertices(g["rest"])
        for k, v in g.items():
            t[f"garment.{name}.{k}"] = v
    ints = ("parents", "faces", "uv_faces", "skin_idx", "body_nn", "bone_body_nn", "attach")
    return {k: np.asarray(v, np.int32 if k.split(".")[-1] in ints else np.float32)
            for k, v in t.items()}


def init_network(cfg, rng, zero):
    """Network tensors: zeros, or U(±1/sqrt(fan_in)) for Linear/Conv and
    LayerNorm scale 1 ± 0.1, shift ± 0.05."""
    shapes = network_names(cfg)
    t = {}
    for name, shape in shapes.items():
        if zero:
            t[name] = np.ones(shape) if name == "bonenet.in_std" else np.zeros(shape)
        elif name == "bonenet.in_mean":
            t[name] = np.zeros(shape)
        elif name == "bonenet.in_std":
            t[name] = np.ones(shape)
        elif name.endswith("norm.weight"):
            t[name] = 1 + rng.uniform(-0.1, 0.1, shape)
        elif name.endswith("norm.bias"):
            t[name] = rng.uniform(-0.05, 0.05, shape)
        else:
            w_shape = shapes[name.rsplit(".", 1)[0] + ".weight"]
            fan_in = int(np.prod(w_shape[1:]))
            t[name] = rng.uniform(-1, 1, shape) / np.sqrt(fan_in)
    return {k: v.astype(np.float32) for k, v in t.items()}


def sample_windows(cfg, rng, n):
    """n history windows (three frames unless the config says otherwise) of
    random plausible motion: poses [n,F,72], trans [n,F,3]."""
    offsets = history(cfg)
    seqs = [assets.random_motion(rng, offsets[0] + 1, fps=cfg["fps"]) for _ in range(n)]
    poses, trans = zip(*(frame_windows(s, offsets) for s in seqs))
    return np.stack(poses)[:, -1], np.stack(trans)[:, -1]  # the full window of the last frame


def _factor(target, spread):
    """Rescale factor, rounded to 3 significant digits so that float noise in
    `spread` (thread count, BLAS) does not change the bundle's bytes."""
    return float(f"{target / spread:.3g}")


def calibrate(cfg, t, rng, log, garment=None):
    """Set in_mean/in_std from sample poses and rescale the last layers (see TARGET).

    Each rescaled layer is the last linear map of its output, so scaling its
    weight and bias scales that output exactly; module B therefore runs once
    and the conv stack only on one frame (the paper preset's conv is costly).
    """
    model = Drape(cfg, t)
    garment = garment or cfg["garments"][0]
    poses, trans = sample_windows(cfg, rng, 64)
    betas = rng.uniform(-2, 2, (4, cfg["betas"]))

    # Bone-Net input statistics over a few identities and poses.
    xs = [model.frames(model.identity(garment, b, lbs_only=True), poses, trans, True)["bonenet_in"]
          for b in betas]
    xs = np.concatenate([x.numpy() for x in xs]).astype(np.float64)
    t["bonenet.in_mean"] = xs.mean(0).astype(np.float32)
    t["bonenet.in_std"] = np.maximum(xs.std(0), 1e-3).astype(np.float32)
    model.load_network(t)

    def rescale(layer, factor, rows=slice(None)):
        for p in ("weight", "bias"):
            t[f"{layer}.{p}"][rows] *= np.float32(factor)

    # Module B outputs: Δw and the FiLM vectors.
    ident = model.identity(garment, betas[0])
    f_dw = _factor(TARGET["dw"], float(ident["dw"].std()))
    f_film = _factor(TARGET["film"], float(ident["film"].std()))
    rescale("heads.dw.1", f_dw)
    rescale("modulator.2", f_film)
    model.load_network(t)
    G = model.garments[garment]
    ident["dw"] = ident["dw"] * f_dw
    ident["film"] = ident["film"] * f_film
    ident["skin_w"] = skin_weights(G["skin_w0"], ident["dw"], G["skin_idx"])

    # Bone-Net output: rotation rows (9b..9b+5) and translation rows (9b+6..9b+8).
    x = model.frames(ident, poses, trans, lbs_only=True)["bonenet_in"]
    with torch.no_grad():
        out = model.net.bonenet(x, ident["film"])[0].numpy().reshape(len(x), -1, 9)
    f_rot = _factor(TARGET["rot6d"], out[..., :6].std())
    f_tau = _factor(TARGET["tau"], out[..., 6:].std())
    rows_r = np.tile(np.arange(9) < 6, cfg["bones"])
    rescale("bonenet.3", f_rot, rows_r)
    rescale("bonenet.3", f_tau, ~rows_r)
    model.load_network(t)

    # Conv output: the per-vertex displacement, on one frame.
    delta = model.frames(ident, poses[:1], trans[:1])["delta"].numpy()
    f_delta = _factor(TARGET["delta"], delta.std())
    rescale(f"conv.{len(cfg['conv']) - 1}", f_delta)
    log(f"calibrated: |rot6d| max {np.abs(out[..., :6]).max() * f_rot:.3f}, |tau| max "
        f"{np.linalg.norm(out[..., 6:], axis=-1).max() * f_tau * 100:.2f} cm, |delta| max "
        f"{np.linalg.norm(delta, axis=-1).max() * f_delta * 100:.2f} cm")
    return t


def make_bundle(preset, seed, weights, log=print):
    rng = np.random.default_rng(seed)
    cfg = make_config(preset, seed, weights)
    t = asset_tensors(cfg, ASSET_RESOLUTION.get(preset, preset), rng)
    net = init_network(cfg, rng, weights == "zero")
    if weights == "random":
        net = calibrate(cfg, {**t, **net}, rng, log)
        net = {k: net[k] for k in network_names(cfg)}
    t.update(net)
    for g in OWN_NETWORKS.get(preset, []):
        own = init_network(cfg, rng, weights == "zero")
        if weights == "random":  # calibrated on its garment, with the shared network's layout
            own = calibrate(cfg, {**t, **own}, rng, log, garment=g)
        t.update({f"garment.{g}.net.{k}": own[k] for k in network_names(cfg)})
    return cfg, t


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", choices=sorted(PRESETS), default="tiny")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--weights", choices=["random", "zero"], default="random")
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    torch.set_num_threads(len(os.sched_getaffinity(0)))
    t0 = time.time()
    log = lambda m: print(f"make_bundle: {m}", file=sys.stderr)
    cfg, t = make_bundle(a.preset, a.seed, a.weights, log)
    write_bundle(a.out, cfg, t)
    g = cfg["garments"][0]
    log(f"{a.out}: preset {a.preset}, body {len(t['body.v_template'])} verts, "
        f"{g} {len(t[f'garment.{g}.rest'])} verts, {len(t)} tensors, "
        f"{os.path.getsize(a.out) / 2**20:.1f} MiB, {time.time() - t0:.1f} s")


if __name__ == "__main__":
    main()
