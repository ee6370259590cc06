"""Cloth energies as differentiable PyTorch terms, HOOD-style (the same
definitions as sim/metrics.c and docs/conventions.md, "Garment metrics"):

    stretch   Σ_f A0 (μ tr(E²) + λ/2 tr(E)²), E = ½(FᵀF − I) (StVK, 2D in the rest triangle's frame)
    bending   Σ_e k_b/2 · 3 l0² / (A1 + A2) · (θ − θ0)², θ the dihedral angle
    collision Σ_v k_c · max(0, ε − n_b·(x − x_b))³ for the nearest posed-body vertex x_b
    inertia   Σ_v m/(2h²) |x_t − 2x_{t−1} + x_{t−2}|²
    gravity   Σ_v m g y

All take positions [N,V,3] (a batch of frames) and return a mean per frame.
"""
import torch


def lame(young=5000.0, poisson=0.3, thickness=1.0):
    """HOOD's cloth: μ, λ from Young's modulus (Pa·m, thickness folded in)."""
    mu = young * thickness / (2 * (1 + poisson))
    lam = young * thickness * poisson / (1 - poisson * poisson)
    return mu, lam


class Cloth:
    """Rest-state tables of one garment (rest [V,3], faces [F,3] int64)."""

    def __init__(self, rest, faces, density=0.15, bending=1e-5, fps=30.0, gravity=9.81):
        self.faces = faces
        a, b, c = (rest[faces[:, i]] for i in range(3))
        e1, e2 = b - a, c - a
        n = torch.cross(e1, e2, dim=1)
        self.area0 = 0.5 * n.norm(dim=1)
        # 2D rest frame per face: Dm = [[|e1|, e2·u], [0, e2·w]]
        u = e1 / e1.norm(dim=1, keepdim=True)
        w = torch.cross(n / n.norm(dim=1, keepdim=True), u, dim=1)
        Dm = torch.stack([torch.stack([e1.norm(dim=1), (e2 * u).sum(1)], 1),
                          torch.stack([torch.zeros_like(self.area0), (e2 * w).sum(1)], 1)], 1)
        self.Dm_inv = torch.linalg.inv(Dm)
        V = len(rest)
        m = torch.zeros(V, dtype=rest.dtype, device=rest.device)
        for i in range(3):
            m.index_add_(0, faces[:, i], density * self.area0 / 3)
        self.mass = m
        self.mu, self.lam = lame()
        self.kb, self.h, self.g = bending, 1.0 / fps, gravity
        # interior edges and their opposite vertices
        e = torch.cat([faces[:, [0, 1]], faces[:, [1, 2]], faces[:, [2, 0]]])
        opp = torch.cat([faces[:, 2], faces[:, 0], faces[:, 1]])
        fid = torch.arange(len(faces), device=faces.device).repeat(3)
        key = torch.sort(e, 1).values
        order = torch.argsort(key[:, 0] * V + key[:, 1])
        k_sorted = key[order]
        same = (k_sorted[1:] == k_sorted[:-1]).all(1)
        i0 = order[:-1][same]
        i1 = order[1:][same]
        self.hinge = torch.stack([k_sorted[:-1][same][:, 0], k_sorted[:-1][same][:, 1], opp[i0], opp[i1]], 1)
        self.hinge_area = self.area0[fid[i0]] + self.area0[fid[i1]]
        self.hinge_l0 = (rest[self.hinge[:, 0]] - rest[self.hinge[:, 1]]).norm(dim=1)
        self.theta0 = self.dihedral(rest[None])[0]

    def dihedral(self, x):
        h = self.hinge
        x0, x1, x2, x3 = (x[:, h[:, i]] for i in range(4))
        e = x1 - x0
        n1 = torch.cross(e, x2 - x0, dim=-1)
        n2 = torch.cross(x3 - x0, e, dim=-1)
        n1 = n1 / (n1.norm(dim=-1, keepdim=True) + 1e-12)
        n2 = n2 / (n2.norm(dim=-1, keepdim=True) + 1e-12)
        eh = e / (e.norm(dim=-1, keepdim=True) + 1e-12)
        return torch.atan2((torch.cross(n1, n2, dim=-1) * eh).sum(-1), (n1 * n2).sum(-1))

    def stretch(self, x):
        f = self.faces
        a, b, c = (x[:, f[:, i]] for i in range(3))
        Ds = torch.stack([b - a, c - a], -1)  # [N,F,3,2]
        Fm = Ds @ self.Dm_inv                  # [N,F,3,2]
        E = 0.5 * (Fm.transpose(-1, -2) @ Fm - torch.eye(2, dtype=x.dtype, device=x.device))
        tr = E[..., 0, 0] + E[..., 1, 1]
        e2 = (E * E).sum((-1, -2))
        return (self.area0 * (self.mu * e2 + 0.5 * self.lam * tr * tr)).sum(1).mean()

    def bending(self, x):
        d = self.dihedral(x) - self.theta0
        d = torch.atan2(torch.sin(d), torch.cos(d))
        w = self.kb / 2 * 3 * self.hinge_l0 ** 2 / self.hinge_area
        return (w * d * d).sum(1).mean()

    def inertia(self, x, x1, x2):
        """x at t, x1 at t−1, x2 at t−2 (the teacher's or the model's)."""
        acc = x - 2 * x1 + x2
        return (self.mass[None, :, None] * acc * acc).sum((1, 2)).mean() / (2 * self.h ** 2)

    def gravity(self, x):
        return (self.mass * self.g * x[..., 1]).sum(1).mean()


def collision(x, body, body_n, eps=0.005, k=1e4, nn=None, depth_cap=0.03):
    """Cubic penalty against the posed body: x [N,V,3], body/body_n [N,Nb,3];
    nn [N,V] nearest body vertex (found here, without gradient, if None).
    The penetration counted is capped at depth_cap: a vertex far from its
    body point (a neighbour found from another position, e.g. the teacher's)
    must not dominate the sum."""
    if nn is None:
        with torch.no_grad():
            nn = torch.cdist(x, body).argmin(-1)
    xb = torch.gather(body, 1, nn[..., None].expand(-1, -1, 3))
    nb = torch.gather(body_n, 1, nn[..., None].expand(-1, -1, 3))
    d = ((x - xb) * nb).sum(-1)
    return (k * torch.clamp(eps - d, min=0, max=depth_cap + eps) ** 3).sum(1).mean()
