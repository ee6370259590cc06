"""PyTorch reference of Drape's modules A and B (docs/design.md §2.1-2.5, docs/conventions.md).

The C runtime is checked against this file, so every formula here is written
the way docs/design.md states it. The network is a plain torch.nn tree whose
state_dict keys are exactly the bundle's tensor names (docs/design.md §3), so a
bundle's network tensors load with `load_state_dict` as they are.

    /usr/bin/python3 train/reference.py infer --model M.safetensors --garment skirt \
        --betas 0.5,-1 --poses IN.npy --out OUT.npy [--lbs-only] [--threads N] \
        [--dump-dir DIR] [--device cpu|cuda]
"""
import argparse
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bundle import BundleError, read_bundle  # noqa: E402

F32 = torch.float32


# ---------------------------------------------------------------------------
# Network (parameter names = bundle tensor names)


class NormMLP(nn.Module):
    """Linear -> ReLU -> Linear -> LayerNorm, named `0`, `1`, `norm` (encoder MLPs)."""

    def __init__(self, d_in, d):
        super().__init__()
        self.add_module("0", nn.Linear(d_in, d))
        self.add_module("1", nn.Linear(d, d))
        self.norm = nn.LayerNorm(d, eps=1e-5)

    def forward(self, x):
        return self.norm(self._modules["1"](torch.relu(self._modules["0"](x))))


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.edge_mlp = NormMLP(3 * d, d)
        self.node_mlp = NormMLP(2 * d, d)


class Encoder(nn.Module):
    def __init__(self, d, blocks):
        super().__init__()
        self.node_embed = NormMLP(8, d)
        self.edge_embed = NormMLP(7, d)
        self.blocks = nn.ModuleList(Block(d) for _ in range(blocks))

    def forward(self, x_node, x_edge, send, recv):
        h, e = self.node_embed(x_node), self.edge_embed(x_edge)
        for blk in self.blocks:
            # Edge update first, then the node update with the new edges.
            e = e + blk.edge_mlp(torch.cat([e, h[send], h[recv]], 1))
            msg = torch.zeros_like(h).index_add_(0, recv, e)
            h = h + blk.node_mlp(torch.cat([h, msg], 1))
        return h


def mlp(sizes):
    """Linear layers named 0..n-1; ReLU between them is applied by run_mlp."""
    return nn.ModuleList(nn.Linear(a, b) for a, b in zip(sizes[:-1], sizes[1:]))


def run_mlp(layers, x):
    for i, lin in enumerate(layers):
        x = lin(x)
        if i + 1 < len(layers):
            x = torch.relu(x)
    return x


class Heads(nn.Module):
    def __init__(self, d, z_dim, bones, feat_dim, dw_hidden=64):
        super().__init__()
        self.z = mlp([d, d, z_dim])
        self.dw = mlp([d, dw_hidden, bones])
        self.feat = nn.Linear(d, feat_dim)


class BoneNet(nn.Module):
    """4 linear layers 15B -> H -> H -> H -> 9B plus the input normalisation."""

    def __init__(self, bones, hidden, frames=3):
        super().__init__()
        d_in = (2 * frames - 1) * 3 * bones  # 15B for three frames
        sizes = [d_in, hidden, hidden, hidden, 9 * bones]
        for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
            self.add_module(str(i), nn.Linear(a, b))
        self.register_buffer("in_mean", torch.zeros(d_in))
        self.register_buffer("in_std", torch.ones(d_in))
        # the raw inputs' range in training (docs/design.md §3.3): optional
        # bundle tensors, so not in the state_dict (network_names); None: no clamp
        self.register_buffer("in_min", None, persistent=False)
        self.register_buffer("in_max", None, persistent=False)

    def forward(self, x, film):
        """x [N,(2F-1)3B] raw inputs (15B for three frames), film [6H] -> (out [N,9B], h3 [N,H])."""
        if self.in_min is not None:  # clamped to the training range first, as the runtimes do
            x = torch.minimum(torch.maximum(x, self.in_min), self.in_max)
        h = (x - self.in_mean) / self.in_std
        for i in range(3):
            gamma = 1 + film[2 * i * self.hidden:(2 * i + 1) * self.hidden]
            beta = film[(2 * i + 1) * self.hidden:(2 * i + 2) * self.hidden]
            h = torch.relu(gamma * self._modules[str(i)](h) + beta)
        return self._modules["3"](h), h

    @property
    def hidden(self):
        return self._modules["0"].out_features


class DrapeNet(nn.Module):
    def __init__(self, cfg, dw_hidden=64):
        super().__init__()
        B, H = cfg["bones"], cfg["hidden"]
        self.bonenet = BoneNet(B, H, len(history(cfg)))
        self.pose_embed = nn.Linear(H, cfg["pose_dim"])
        self.modulator = mlp([cfg["z_dim"], H, H, 6 * H])
        chans = [3 + cfg["feat_dim"] + cfg["pose_dim"] + 1] + list(cfg["conv"])
        self.conv = nn.ModuleList(nn.Conv2d(a, b, 3, padding=1)
                                  for a, b in zip(chans[:-1], chans[1:]))
        self.encoder = Encoder(cfg["latent"], cfg["blocks"])
        self.heads = Heads(cfg["latent"], cfg["z_dim"], B, cfg["feat_dim"], dw_hidden)


def network_names(cfg, dw_hidden=64):
    """The bundle tensor names (and shapes) that belong to the network, in order."""
    return {k: tuple(v.shape) for k, v in DrapeNet(cfg, dw_hidden).state_dict().items()}


# ---------------------------------------------------------------------------
# Geometry


def rodrigues(aa):
    """Axis-angle [...,3] -> rotation [...,3,3], in float64 (conventions.md)."""
    aa = aa.to(torch.float64)
    a = aa.norm(dim=-1)[..., None, None]
    def cross(v):
        z = torch.zeros_like(v[..., 0])
        return torch.stack([torch.stack([z, -v[..., 2], v[..., 1]], -1),
                            torch.stack([v[..., 2], z, -v[..., 0]], -1),
                            torch.stack([-v[..., 1], v[..., 0], z], -1)], -2)
    eye = torch.eye(3, dtype=torch.float64, device=aa.device).expand(aa.shape[:-1] + (3, 3))
    small = a < 1e-12
    K = cross(aa / torch.where(small[..., 0], torch.ones_like(a[..., 0]), a[..., 0]))
    full = eye + torch.sin(a) * K + (1 - torch.cos(a)) * (K @ K)
    return torch.where(small, eye + cross(aa), full)


def skinning_transforms(R, trans, J, parents):
    """FK (docs/design.md §2.1). R [N,24,3,3], trans [N,3], J [24,3] ->
    A [N,24,3,4] with A_k = G_k ∘ [I | -J_k]."""
    GR, Gt = [R[:, 0]], [J[0] + trans]
    for k in range(1, 24):
        p = int(parents[k])
        GR.append(GR[p] @ R[:, k])
        Gt.append(GR[p] @ (J[k] - J[p]) + Gt[p])
    GR, Gt = torch.stack(GR, 1), torch.stack(Gt, 1)
    t = Gt - (GR @ J[:, :, None])[..., 0]
    return torch.cat([GR, t[..., None]], -1)


def heading(R0):
    """Heading rotation R_y(ψ) [N,3,3] from the root rotations R0 [N,3,3]."""
    f, g = R0[:, :, 2], R0[:, :, 0]  # R0·(0,0,1), R0·(1,0,0)
    psi = torch.where(torch.hypot(f[:, 0], f[:, 2]) < 1e-6,
                      torch.atan2(-g[:, 2], g[:, 0]), torch.atan2(f[:, 0], f[:, 2]))
    c, s, z, o = torch.cos(psi), torch.sin(psi), torch.zeros_like(psi), torch.ones_like(psi)
    return torch.stack([torch.stack([c, z, s], -1), torch.stack([z, o, z], -1),
                        torch.stack([-s, z, c], -1)], -2)


def _rot6d_tame(a):
    """a [...,3] scaled by a power of two where its largest component passes 2^60 (hd_rot6d_tame)."""
    m = a.abs().amax(-1, keepdim=True)
    _, e = torch.frexp(m)
    return torch.where((m > 2.0 ** 60) & ~torch.isinf(m), torch.ldexp(a, -e), a)


def rot6d(r):
    """6D rotation with identity offset (docs/design.md §2.4.4): r [...,6] -> [...,3,3].

    Total over finite inputs, as core/kinematics.h's hd_rot6d: a1 with norm
    below 1e-6 is taken as x; a u (a2 less its part along e1) below 1e-6 or
    below 1e-4 of that part becomes y (z where e1 is nearer +-y) made
    perpendicular to e1. The unused branches see safe denominators, so the
    gradients stay finite.
    """
    one = lambda *v: torch.tensor(v, dtype=r.dtype, device=r.device)  # noqa: E731
    a1 = _rot6d_tame(r[..., 0:3] + one(1.0, 0.0, 0.0))
    a2 = _rot6d_tame(r[..., 3:6] + one(0.0, 1.0, 0.0))
    n1 = a1.norm(dim=-1, keepdim=True)
    small1 = n1 < 1e-6
    a1 = torch.where(small1, one(1.0, 0.0, 0.0).expand_as(a1), a1)
    e1 = a1 / torch.where(small1, torch.ones_like(n1), n1)
    d = (e1 * a2).sum(-1, keepdim=True)
    u = a2 - d * e1
    n2 = u.norm(dim=-1, keepdim=True)
    small2 = (n2 < 1e-6) | (n2 < 1e-4 * d.abs())
    ax = torch.where(e1[..., 1:2] * e1[..., 1:2] > 0.5, one(0.0, 0.0, 1.0), one(0.0, 1.0, 0.0))
    u = torch.where(small2, ax - (e1 * ax).sum(-1, keepdim=True) * e1, u)
    e2 = u / u.norm(dim=-1, keepdim=True)
    e3 = torch.cross(e1, e2, dim=-1)
    return torch.stack([e1, e2, e3], -1)  # columns


def uv_raster(uv, uv_faces, faces, hu, wu):
    """Texel table of docs/design.md §2.5: face [Hu,Wu] (-1 empty), vidx [Hu,Wu,3], bary [Hu,Wu,3].

    Barycentrics in float64 of the texel centre; faces with |UV area| < 1e-12
    are skipped; the lowest-numbered face with all λ >= -1e-6 wins.
    """
    uv = np.asarray(uv, np.float64)
    face = np.full((hu, wu), -1, np.int64)
    bary = np.zeros((hu, wu, 3), np.float64)
    for f in range(len(uv_faces)):
        a, b, c = uv[uv_faces[f]]
        area = (b[0] - a[0]) * (c[1] - a[1]) - (c[0] - a[0]) * (b[1] - a[1])
        if abs(area) < 1e-12:
            continue
        lo, hi = np.minimum(np.minimum(a, b), c), np.maximum(np.maximum(a, b), c)
        # Candidate texels: a one-texel margin around the UV bounding box.
        j0, j1 = max(int(np.floor(lo[0] * wu - 0.5)) - 1, 0), min(int(np.ceil(hi[0] * wu - 0.5)) + 1, wu - 1)
        i0, i1 = max(int(np.floor(lo[1] * hu - 0.5)) - 1, 0), min(int(np.ceil(hi[1] * hu - 0.5)) + 1, hu - 1)
        if j0 > j1 or i0 > i1:
            continue
        pu = (np.arange(j0, j1 + 1)[None, :] + 0.5) / wu
        pv = (np.arange(i0, i1 + 1)[:, None] + 0.5) / hu
        lb = ((pu - a[0]) * (c[1] - a[1]) - (c[0] - a[0]) * (pv - a[1])) / area
        lc = ((b[0] - a[0]) * (pv - a[1]) - (pu - a[0]) * (b[1] - a[1])) / area
        la = 1.0 - lb - lc
        hit = (la >= -1e-6) & (lb >= -1e-6) & (lc >= -1e-6)
        sub = face[i0:i1 + 1, j0:j1 + 1]
        take = hit & (sub < 0)  # faces run in increasing order: first hit wins
        sub[take] = f
        bsub = bary[i0:i1 + 1, j0:j1 + 1]
        bsub[take] = np.stack([la, lb, lc], -1)[take]
    vidx = np.where(face[..., None] >= 0, np.asarray(faces)[np.maximum(face, 0)], 0)
    return face, vidx, bary.astype(np.float32)


def body_normals(v, faces):
    """Area-weighted vertex normals, normalized; zero where the sum is zero."""
    a, b, c = v[faces[:, 0]], v[faces[:, 1]], v[faces[:, 2]]
    fn = torch.cross(b - a, c - a, dim=1)
    n = torch.zeros_like(v)
    for i in range(3):
        n.index_add_(0, faces[:, i], fn)
    norm = n.norm(dim=1, keepdim=True)
    return torch.where(norm > 0, n / torch.where(norm > 0, norm, torch.ones_like(norm)), n)


def unique_edges(faces):
    e = torch.cat([faces[:, [0, 1]], faces[:, [1, 2]], faces[:, [2, 0]]])
    return torch.unique(torch.sort(e, dim=1).values, dim=0)


def skin_weights(w0, dw, skin_idx):
    """w_vj = softmax_j(log(W0_vj + 1e-8) + Δw_v,skin_idx_vj) (docs/design.md §2.3.5)."""
    return torch.softmax(torch.log(w0 + 1e-8) + torch.gather(dw, 1, skin_idx), 1)


def knn_body(x, v, k, chunk=1024):
    """For each x, the k nearest rows of v (squared Euclidean, ties to the lower index)."""
    out = []
    for i in range(0, len(x), chunk):
        d = ((x[i:i + chunk, None, :] - v[None, :, :]) ** 2).sum(-1)
        # one nearest: argmin returns the first of tied minima, the stable
        # sort's first, without sorting every row (the refine step's search)
        out.append(d.argmin(1, keepdim=True) if k == 1 else torch.sort(d, dim=1, stable=True).indices[:, :k])
    return torch.cat(out)


# ---------------------------------------------------------------------------
# The model: bundle data + network, modules A and B


class Drape:
    """A loaded bundle: config, body, garments and the network."""

    def __init__(self, cfg, t, device="cpu"):
        """cfg: the drape.config dict; t: bundle tensor name -> ndarray."""
        self.cfg, self.device = cfg, torch.device(device)
        as_t = lambda a: torch.from_numpy(np.asarray(a)).to(self.device)
        fl = lambda a: as_t(np.asarray(a, np.float32))
        ix = lambda a: as_t(np.asarray(a, np.int64))
        # The Δw hidden width is read from the tensor, as the C runtime does.
        dw_hidden = t["heads.dw.0.weight"].shape[0]
        self.net = DrapeNet(cfg, dw_hidden)
        # garments with a network of their own (garment.<g>.net.<name>;
        # docs/conventions.md "A garment's own network")
        self.own = torch.nn.ModuleDict({g: DrapeNet(cfg, dw_hidden) for g in cfg["garments"]
                                        if f"garment.{g}.net.bonenet.0.weight" in t})
        self.load_network(t)
        self.body = {k: fl(t["body." + k]) for k in ("v_template", "shapedirs", "J_regressor", "weights")}
        self.body["faces"] = ix(t["body.faces"])
        self.parents = np.asarray(t["body.parents"], np.int64)
        self.garments = {}
        for g in cfg["garments"]:
            p = f"garment.{g}."
            G = {k: fl(t[p + k]) for k in ("rest", "uv", "bones", "bone_joint_w", "skin_w0")}
            G.update({k: ix(t[p + k]) for k in ("faces", "uv_faces", "skin_idx", "body_nn", "bone_body_nn")})
            self.garments[g] = G
        self._static = {}

    @classmethod
    def load(cls, path, device="cpu"):
        cfg, t = read_bundle(path)
        return cls(cfg, t, device)

    def load_network(self, t):
        """(Re)load the network tensors, the garments' own too; strict, so
        names and shapes must match."""
        for pre, net in [("", self.net)] + [(f"garment.{g}.net.", n) for g, n in self.own.items()]:
            state = {k: torch.from_numpy(np.asarray(t[pre + k], np.float32)) for k in net.state_dict()}
            net.load_state_dict(state)
            lo, hi = (t.get(pre + "bonenet." + k) for k in ("in_min", "in_max"))
            if (lo is None) != (hi is None) or (lo is not None and (lo.shape != hi.shape or lo.shape !=
                                                                    tuple(net.bonenet.in_mean.shape))):
                raise BundleError(f"{pre}bonenet.in_min and in_max: both or neither, each of the inputs' size")
            net.bonenet.in_min = None if lo is None else torch.from_numpy(np.asarray(lo, np.float32))
            net.bonenet.in_max = None if hi is None else torch.from_numpy(np.asarray(hi, np.float32))
            net.to(self.device).eval()

    def net_for(self, garment):
        """The network that garment runs: its own, or the shared one."""
        return self.own[garment] if garment in self.own else self.net

    def network_tensors(self):
        """Bundle name -> tensor of every network (the shared, the garments' own)."""
        out = dict(self.net.state_dict())
        for g, n in self.own.items():
            out.update({f"garment.{g}.net.{k}": v for k, v in n.state_dict().items()})
        return out

    def static(self, garment):
        """Per-garment tables computed at load: raster, UV copies, graph edges."""
        if garment in self._static:
            return self._static[garment]
        G = self.garments[garment]
        hu, wu = self.cfg["uv_size"]
        face, vidx, bary = uv_raster(G["uv"].cpu().numpy(), G["uv_faces"].cpu().numpy(),
                                     G["faces"].cpu().numpy(), hu, wu)
        # UV copies: the distinct (vertex, uv index) pairs of the faces.
        pairs = np.unique(np.stack([G["faces"].cpu().numpy().ravel(),
                                    G["uv_faces"].cpu().numpy().ravel()], 1), axis=0)
        V = len(G["rest"])
        count = np.bincount(pairs[:, 0], minlength=V)
        dev = lambda a, dt: torch.as_tensor(a, dtype=dt, device=self.device)
        S = {
            "face": face.astype(np.int32),
            "mask": dev(face >= 0, F32),
            "vidx": dev(vidx, torch.int64),
            "bary": dev(bary, F32),
            "copy_v": dev(pairs[:, 0], torch.int64),
            "copy_uv": dev(pairs[:, 1], torch.int64),
            "copy_n": dev(np.maximum(count, 1), F32),  # vertices in no face get 0
            "g_edges": unique_edges(G["faces"]),
            "b_edges": unique_edges(self.body["faces"]),
        }
        self._static[garment] = S
        return S

    # -- module B ----------------------------------------------------------

    @torch.no_grad()
    def identity(self, garment, betas, lbs_only=False):
        """Module B (docs/design.md §2.3): everything cached per (garment, betas)."""
        if garment not in self.garments:
            raise KeyError(f"unknown garment {garment!r} (have {list(self.garments)})")
        S_max = self.body["shapedirs"].shape[2]
        if len(betas) > S_max:
            raise ValueError(f"{len(betas)} betas given, the model has {S_max}")
        beta = torch.zeros(S_max, dtype=F32, device=self.device)
        beta[:len(betas)] = torch.as_tensor(betas, dtype=F32)
        G, S, body = self.garments[garment], self.static(garment), self.body

        v_s = body["v_template"] + body["shapedirs"] @ beta
        J = body["J_regressor"] @ v_s
        g = G["rest"] + body["shapedirs"][G["body_nn"]] @ beta
        c = G["bones"] + body["shapedirs"][G["bone_body_nn"]] @ beta
        ident = {"garment": garment, "beta": beta, "J": J, "g": g, "c": c}
        if lbs_only:
            ident["skin_w"] = G["skin_w0"]
            return ident

        V, Nb, net = len(g), len(v_s), self.net_for(garment)
        # Graph: garment nodes 0..V-1, then body nodes.
        x = torch.cat([g, v_s])
        normals = torch.cat([torch.zeros_like(g), body_normals(v_s, body["faces"])])
        flags = torch.zeros(V + Nb, 2, dtype=F32, device=self.device)
        flags[V:, 0] = 1  # is_body
        flags[:V, 1] = 1  # is_garment
        x_node = torch.cat([x, normals, flags], 1)
        nn_b = knn_body(g, v_s, self.cfg["knn"])
        gb = torch.stack([torch.arange(V, device=self.device).repeat_interleave(nn_b.shape[1]),
                          V + nn_b.reshape(-1)], 1)
        und = [S["g_edges"], S["b_edges"] + V, gb]
        send = torch.cat([torch.cat([e[:, 0], e[:, 1]]) for e in und])
        recv = torch.cat([torch.cat([e[:, 1], e[:, 0]]) for e in und])
        etype = torch.cat([torch.full((2 * len(e),), i, device=self.device) for i, e in enumerate(und)])
        dx = x[send] - x[recv]
        x_edge = torch.cat([dx, dx.norm(dim=1, keepdim=True), F.one_hot(etype, 3).to(F32)], 1)

        Fc = net.encoder(x_node, x_edge, send, recv)[:V]
        z = run_mlp(net.heads.z, Fc.mean(0))
        dw = run_mlp(net.heads.dw, Fc)
        f = net.heads.feat(Fc)
        film = run_mlp(net.modulator, z)
        skin_w = skin_weights(G["skin_w0"], dw, G["skin_idx"])
        F_uv = (S["bary"][..., None] * f[S["vidx"]]).sum(2) * S["mask"][..., None]
        ident.update(z=z, film=film, dw=dw, skin_w=skin_w, F_uv=F_uv)
        return ident

    # -- module A ----------------------------------------------------------

    @torch.no_grad()
    def frames(self, ident, poses, trans, lbs_only=False):
        """Module A (docs/design.md §2.4) for N frames of one identity.

        poses [N,F,72] and trans [N,F,3] hold the frames of history(cfg), t
        last: (t-2, t-1, t) unless the config says otherwise. Returns a
        dict: world [N,V,3], phat [N,V,3] and delta [N,V,3] (in H_t),
        bonenet_in [N,(2F-1)3B] (raw, before normalisation) and bonenet_out [N,9B]
        (absent with lbs_only).
        """
        G, S, net = self.garments[ident["garment"]], self.static(ident["garment"]), self.net_for(ident["garment"])
        poses = torch.as_tensor(poses, device=self.device)
        trans = torch.as_tensor(trans, dtype=F32, device=self.device)
        N, B = poses.shape[0], len(ident["c"])
        J, c, g = ident["J"], ident["c"], ident["g"]

        nf = poses.shape[1]
        R = rodrigues(poses.reshape(N, nf, 24, 3)).to(F32)  # [N,F,24,3,3]
        A = skinning_transforms(R.reshape(N * nf, 24, 3, 3), trans.reshape(N * nf, 3), J, self.parents)
        Tb = torch.einsum("bk,nkij->nbij", G["bone_joint_w"], A).reshape(N, nf, B, 3, 4)
        p = (Tb[..., :3] @ c[:, :, None])[..., 0] + Tb[..., 3]  # p̃ [N,F,B,3]
        Ry = heading(R[:, -1, 0])  # from frame t's root
        o = J[0] + trans[:, -1]  # H_t origin [N,3]
        # q = H_t⁻¹ p̃ = Ry^T (p̃ - o); row vectors: (p̃ - o) @ Ry.
        q = torch.einsum("nfbi,nij->nfbj", p - o[:, None, None], Ry)
        # T̂_b = H_t⁻¹ T̃_b^t as a 3x4: rotation Ry^T R̃, translation Ry^T (t̃ - o).
        RyT = Ry.transpose(1, 2)
        That_R = RyT[:, None] @ Tb[:, -1, :, :, :3]
        That_t = (RyT[:, None] @ (Tb[:, -1, :, :, 3] - o[:, None])[..., None])[..., 0]

        qs = [q[:, i].reshape(N, 3 * B) for i in range(nf)]
        x = torch.cat(qs + [b - a for a, b in zip(qs[:-1], qs[1:])], 1)
        out = {"bonenet_in": x}
        if lbs_only:
            MR, Mt = That_R, That_t
        else:
            bo, h3 = net.bonenet(x, ident["film"])
            phi = net.pose_embed(h3)
            out["bonenet_out"] = bo
            bo = bo.reshape(N, B, 9)
            dR, tau = rot6d(bo[..., :6]), bo[..., 6:9]
            qt = q[:, -1]
            # x ↦ ΔR (T̂ x − q) + q + τ, composed into one 3x4 per bone.
            MR = dR @ That_R
            Mt = (dR @ (That_t - qt)[..., None])[..., 0] + qt + tau

        w, idx = ident["skin_w"], G["skin_idx"]
        # p̂_v = Σ_j w_vj M_{idx_vj} g_v
        y = (MR[:, idx] @ g[None, :, None, :, None])[..., 0] + Mt[:, idx]  # [N,V,k,3]
        phat = (w[None, :, :, None] * y).sum(2)
        out["phat"] = phat

        if lbs_only:
            delta = torch.zeros_like(phat)
        else:
            mask = S["mask"]
            P_uv = (S["bary"][..., None] * phat[:, S["vidx"]]).sum(3) * mask[..., None]
            hu, wu = mask.shape
            inp = torch.cat([P_uv.permute(0, 3, 1, 2),
                             ident["F_uv"].permute(2, 0, 1)[None].expand(N, -1, -1, -1),
                             phi[:, :, None, None] * mask,
                             mask[None, None].expand(N, 1, hu, wu)], 1)
            delta = self.sample_vertices(self.conv_stack(inp, net), G, S)
        out["delta"] = delta
        p_final = phat + delta
        out["world"] = torch.einsum("nij,nvj->nvi", Ry, p_final) + o[:, None]
        return out

    def conv_stack(self, inp, net=None):
        """The Conv-MLP (docs/design.md §2.4.8) of net (the shared one by default) on
        input maps [N,C,Hu,Wu] -> [N,3,Hu,Wu].

        On the CPU the frames go through in groups whose widest map stays
        within about 8 MiB: the same arithmetic, but cache-resident, which
        makes large batches several times faster.
        """
        net = self.net if net is None else net
        convs = net.conv
        if inp.device.type == "cpu":
            widest = max(c.out_channels for c in convs) * inp.shape[2] * inp.shape[3] * 4
            group = max(1, (8 << 20) // widest)
            if group < len(inp):
                return torch.cat([self.conv_stack(inp[i:i + group], net)
                                  for i in range(0, len(inp), group)])
        h = inp
        for i, conv in enumerate(convs):
            if i + 1 == len(convs):
                h = conv(h)
            elif conv.in_channels == conv.out_channels:
                # h + ReLU(conv(h)); out of place when training (autograd)
                h = torch.relu(conv(h)) + h if torch.is_grad_enabled() else torch.relu_(conv(h)).add_(h)
            else:
                h = torch.relu(conv(h)) if torch.is_grad_enabled() else torch.relu_(conv(h))
        return h

    @staticmethod
    def sample_vertices(m, G, S):
        """Bilinear samples of the map m [N,3,Hu,Wu] at the UV copies, averaged per vertex."""
        N, _, hu, wu = m.shape
        uv = G["uv"][S["copy_uv"]]
        x = torch.clamp(uv[:, 0] * wu - 0.5, 0, wu - 1)
        y = torch.clamp(uv[:, 1] * hu - 0.5, 0, hu - 1)
        x0, y0 = torch.floor(x), torch.floor(y)
        fx, fy = x - x0, y - y0
        x0, y0 = x0.long(), y0.long()
        x1, y1 = torch.clamp(x0 + 1, max=wu - 1), torch.clamp(y0 + 1, max=hu - 1)
        M = lambda yy, xx: m[:, :, yy, xx]  # [N,3,n]
        s = ((1 - fy) * ((1 - fx) * M(y0, x0) + fx * M(y0, x1))
             + fy * ((1 - fx) * M(y1, x0) + fx * M(y1, x1)))
        V = len(G["rest"])
        acc = torch.zeros(N, V, 3, dtype=m.dtype, device=m.device)
        acc.index_add_(1, S["copy_v"], s.permute(0, 2, 1))
        return acc / S["copy_n"][None, :, None]


# ---------------------------------------------------------------------------
# Command line


def posed_body(model, ident, poses, trans):
    """The posed body [N,Nb,3] and its normals for frames poses [N,72], trans [N,3]."""
    b = model.body
    v_s = b["v_template"] + b["shapedirs"] @ ident["beta"]
    R = rodrigues(poses.reshape(-1, 24, 3)).to(torch.float32)
    A = skinning_transforms(R, trans, ident["J"], model.parents)  # [N,24,3,4]
    T = torch.einsum("vk,nkij->nvij", b["weights"], A)
    body = (T[..., :3] @ v_s[None, :, :, None])[..., 0] + T[..., 3]
    normals = torch.stack([body_normals(x, b["faces"]) for x in body])
    return body, normals


REFINE_PLAIN_SWEEPS = 10  # runtime/refine.c: sweeps before the Chebyshev acceleration starts


def refine(x, body, normals, edges, l0, iters, k, margin, nearest=None, rho=0.0):
    """The refine step of one frame (runtime/refine.h, docs/conventions.md "The
    refine step"), in float64: x [V,3] the network's world positions, body
    and normals [Nb,3] the posed body, edges [E,2] with rest lengths l0 [E];
    rho > 0: Chebyshev-accelerated after REFINE_PLAIN_SWEEPS sweeps.
    Differentiable in x (the nearest vertices are indices, held fixed);
    nearest(y, body) -> [V] may replace the exact search (training's k-d tree)."""
    near = nearest or (lambda y, b: knn_body(y, b, 1)[:, 0])
    p, body, normals, l0 = (t.double() for t in (x, body, normals, l0))
    deg = torch.zeros(len(p), dtype=torch.float64, device=p.device)
    deg.index_add_(0, edges.reshape(-1), torch.ones(edges.numel(), dtype=torch.float64, device=p.device))
    i, j = edges[:, 0], edges[:, 1]

    def push(y, nn):  # along the nearest body vertex's normal, to `margin` off its tangent plane
        n = normals[nn]
        d = ((y - body[nn]) * n).sum(-1)
        return y + torch.clamp(margin - d, min=0)[:, None] * n

    nn, x, xo, w = near(p, body), p, None, 1.0  # nn: the prediction's nearest body vertices, for every sweep
    for it in range(iters):
        x = push(x, nn)
        dv = x[i] - x[j]
        proj = dv * (l0 / dv.norm(dim=-1).clamp(min=1e-12))[:, None]
        s = torch.zeros_like(x)
        s.index_add_(0, i, x[j] + proj)
        s.index_add_(0, j, x[i] - proj)
        xn = (p + k * s) / (1 + k * deg)[:, None]
        if rho > 0 and it >= REFINE_PLAIN_SWEEPS:
            w = 2 / (2 - rho * rho) if it == REFINE_PLAIN_SWEEPS else 4 / (4 - rho * rho * w)
            xn = w * (xn - xo) + xo
        x, xo = xn, x
    return push(x, near(x, body))


def refine_frames(model, ident, world, poses, trans, posed=None, nearest=None):
    """The refine step over N frames world [N,V,3] of frames t (poses [N,72],
    trans [N,3]), when the bundle asks for it on this garment; else world.
    posed: their (body, normals) when the caller has them; nearest: refine's."""
    rc = model.cfg.get("refine", {}).get(ident["garment"])
    if not rc or rc["iters"] <= 0:
        return world
    body, normals = posed if posed is not None else posed_body(model, ident, poses, trans)
    edges = model.static(ident["garment"])["g_edges"]
    g = ident["g"].detach().double()
    l0 = (g[edges[:, 0]] - g[edges[:, 1]]).norm(dim=-1)
    return torch.stack([refine(world[f], body[f], normals[f], edges, l0, rc["iters"], rc["stiffness"], rc["margin"],
                               nearest, rc.get("rho", 0.0)) for f in range(len(world))]).to(world.dtype)


def history(cfg):
    """The frames module A sees, as offsets back from t, oldest first: docs/design.md
    §2.4's (t-2, t-1, t) unless the config's "history" says otherwise."""
    return tuple(cfg.get("history", (2, 1, 0)))


def frame_windows(seq, offsets=(2, 1, 0)):
    """[T,75] -> poses [T,F,72], trans [T,F,3] with frames max(t-o,0) for each offset o."""
    T = len(seq)
    t = np.arange(T)
    win = np.stack([np.maximum(t - o, 0) for o in offsets], 1)
    return seq[win, :72], seq[win, 72:75]


def infer(model, garment, betas, seq, lbs_only=False, chunk=None):
    """Run module B once and module A over a [T,75] sequence; returns numpy dicts."""
    ident = model.identity(garment, betas, lbs_only)
    poses, trans = frame_windows(np.asarray(seq, np.float32), history(model.cfg))
    if chunk is None:
        # Bound the conv stack's activations to about 1 GiB.
        hu, wu = model.cfg["uv_size"]
        widest = max(list(model.cfg["conv"]) + [3 + model.cfg["feat_dim"] + model.cfg["pose_dim"] + 1])
        chunk = max(1, int(2 ** 30 // (3 * widest * hu * wu * 4)))
    parts = [model.frames(ident, poses[i:i + chunk], trans[i:i + chunk], lbs_only)
             for i in range(0, len(seq), chunk)]
    frames = {k: torch.cat([p[k] for p in parts]) for k in parts[0]}
    if not lbs_only:  # after module A, as the runtime does (frame t is the window's last)
        at = lambda a: torch.from_numpy(np.ascontiguousarray(a[:, -1])).to(model.device)
        with torch.no_grad():
            frames["world"] = refine_frames(model, ident, frames["world"], at(poses), at(trans))
    frames = {k: v.cpu().numpy() for k, v in frames.items()}
    return ident, frames


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("infer", help="garment vertices for a pose sequence")
    p.add_argument("--model", required=True)
    p.add_argument("--garment", required=True)
    p.add_argument("--betas", default="", help="comma-separated, missing values are 0")
    p.add_argument("--poses", required=True, help=".npy float32 [T,75]")
    p.add_argument("--out", required=True, help=".npy float32 [T,V,3] world positions")
    p.add_argument("--lbs-only", action="store_true", help="plain skinning baseline")
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--dump-dir", help="write intermediates as .npy")
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    a = ap.parse_args(argv)

    if a.threads > 0:
        torch.set_num_threads(a.threads)
    if a.device == "cuda" and not torch.cuda.is_available():
        sys.exit("reference: --device cuda but CUDA is not available")
    betas = [float(b) for b in a.betas.split(",") if b.strip()]
    seq = np.load(a.poses)
    if seq.ndim != 2 or seq.shape[1] != 75 or len(seq) == 0:
        sys.exit(f"reference: poses must be [T,75], got {seq.shape}")
    if not np.all(np.isfinite(seq)):
        sys.exit("reference: poses contain NaN/Inf")
    try:
        model = Drape.load(a.model, a.device)
        ident, frames = infer(model, a.garment, betas, seq, a.lbs_only)
    except (BundleError, KeyError, ValueError, RuntimeError) as e:
        sys.exit(f"reference: {e}")
    np.save(a.out, frames["world"].astype(np.float32))

    if a.dump_dir:
        os.makedirs(a.dump_dir, exist_ok=True)
        S = model.static(a.garment)
        hu, wu = model.cfg["uv_size"]
        dump = {"skin_w": ident["skin_w"], "g": ident["g"], "c": ident["c"],
                "raster_face": S["face"], "raster_bary": S["bary"],
                "phat": frames["phat"], "delta": frames["delta"]}
        if not a.lbs_only:
            dump.update(film=ident["film"], z=ident["z"], F_uv=ident["F_uv"],
                        bonenet_out=frames["bonenet_out"])
        for k, v in dump.items():
            v = v.cpu().numpy() if torch.is_tensor(v) else np.asarray(v)
            np.save(os.path.join(a.dump_dir, k + ".npy"), v)


if __name__ == "__main__":
    main()
