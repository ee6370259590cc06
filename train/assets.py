"""Procedural assets: an SMPL-layout body with a shape space, and garments.

Everything is deterministic from a seed (numpy Generator) and a resolution
name ("tiny", "small", "paper").

Body placement: rest pose is a T-pose, y up, meters, facing +z, the body's
left on +x, **feet on y = 0** (the pelvis joint is at y = 0.93), 1.70 m tall.
The body is built from capsule-like pieces (one per body segment) that
overlap at the joints; its surface is one closed mesh around their union
(train/weld.py), faces counter-clockwise seen from outside.
"""
import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import dijkstra

import weld

PARENTS = np.array([-1, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 9, 9, 12, 13, 14, 16, 17,
                    18, 19, 20, 21], dtype=np.int32)
JOINT_NAMES = ["pelvis", "l_hip", "r_hip", "spine1", "l_knee", "r_knee", "spine2",
               "l_ankle", "r_ankle", "spine3", "l_foot", "r_foot", "neck", "l_collar",
               "r_collar", "head", "l_shoulder", "r_shoulder", "l_elbow", "r_elbow",
               "l_wrist", "r_wrist", "l_hand", "r_hand"]
NUM_BETAS = 10

# Intended rest joints (SMPL order). Left side listed; right side mirrors x.
_JOINTS_LEFT = {
    0: (0.0, 0.93, 0.0), 3: (0.0, 1.04, 0.0), 6: (0.0, 1.16, 0.0), 9: (0.0, 1.28, 0.0),
    12: (0.0, 1.45, 0.0), 15: (0.0, 1.55, 0.01),
    1: (0.085, 0.86, 0.0), 4: (0.09, 0.49, 0.0), 7: (0.09, 0.08, 0.0), 10: (0.095, 0.03, 0.12),
    13: (0.07, 1.38, 0.0), 16: (0.17, 1.40, 0.0), 18: (0.43, 1.40, 0.0),
    20: (0.68, 1.40, 0.0), 22: (0.77, 1.40, 0.0),
}
_MIRROR = {1: 2, 4: 5, 7: 8, 10: 11, 13: 14, 16: 17, 18: 19, 20: 21, 22: 23}


def rest_joints():
    """The intended rest joint positions [24,3] (J_regressor reproduces them)."""
    J = np.zeros((24, 3))
    for j, p in _JOINTS_LEFT.items():
        J[j] = p
        if j in _MIRROR:
            J[_MIRROR[j]] = (-p[0], p[1], p[2])
    return J


# Grid spacing (m) of the welded body per resolution (train/weld.py).
# "default" is the resolution of the default model (docs/conventions.md, Assets).
WELD_CELL = {"small": 0.03, "default": 0.03, "paper": 0.021}
# The "tiny" test body keeps its pieces meshed apart, at this edge length (m):
# a grid this coarse would lose the limbs.
TINY_BODY_EDGE = 0.11
# Skirt grid (columns around, rows down) per resolution.
SKIRT_GRID = {"tiny": (24, 10), "small": (56, 24), "paper": (96, 36), "default": (64, 32)}
# T-shirt target edge length (m) per resolution.
TSHIRT_EDGE = {"tiny": 0.07, "small": 0.03, "default": 0.02, "paper": 0.013}
# Dress grid (columns around, rows down) per resolution.
DRESS_GRID = {"tiny": (24, 16), "small": (56, 40), "default": (56, 40), "paper": (104, 72)}


class Piece:
    """A closed capsule-like surface around the segment p0 -> p1.

    Cross-section radius goes linearly r0 -> r1 along the segment; its second
    axis is scaled by `squash` (flat torso, hands, feet). The ends are
    half-ellipsoids reaching `cap0` before p0 and `cap1` past p1. `side` is the
    first cross-section axis. Skinning: the joints in `chain` own consecutive
    stretches of the axis, switching at each joint chain[1:] (see _chain_weights).
    """

    def __init__(self, name, p0, p1, r0, r1, cap0, cap1, chain, side, squash=1.0,
                 girth=1.0, group="trunk"):
        self.name, self.chain, self.group = name, chain, group
        self.p0, self.p1 = np.asarray(p0, float), np.asarray(p1, float)
        self.r0, self.r1, self.cap0, self.cap1 = r0, r1, cap0, cap1
        self.squash, self.girth = squash, girth
        self.length = np.linalg.norm(self.p1 - self.p0)
        self.axis = (self.p1 - self.p0) / self.length
        e1 = np.asarray(side, float)
        e1 = e1 - e1.dot(self.axis) * self.axis
        self.e1 = e1 / np.linalg.norm(e1)
        self.e2 = np.cross(self.axis, self.e1)

    def radius_at(self, s):
        return self.r0 + (self.r1 - self.r0) * np.clip(s / self.length, 0.0, 1.0)

    def mesh(self, h):
        """Vertices and outward-facing triangles at target edge length h."""
        circ = 2 * np.pi * max(self.r0, self.r1) * (1 + self.squash) / 2
        n_around = max(6, int(round(circ / h)))
        n_body = max(1, int(round(self.length / h)))
        n_cap0 = max(2, int(round(0.5 * np.pi * max(self.cap0, self.r0) / h)))
        n_cap1 = max(2, int(round(0.5 * np.pi * max(self.cap1, self.r1) / h)))
        # Rings as (axial position s, radius scale): cap0 (pole excluded), body, cap1.
        rings = []
        for i in range(1, n_cap0 + 1):
            a = 0.5 * np.pi * i / n_cap0
            rings.append((-self.cap0 * np.cos(a), self.r0 * np.sin(a)))
        for i in range(1, n_body):
            s = self.length * i / n_body
            rings.append((s, self.radius_at(s)))
        for i in range(n_cap1):
            a = 0.5 * np.pi * i / n_cap1
            rings.append((self.length + self.cap1 * np.sin(a), self.r1 * np.cos(a)))
        phi = 2 * np.pi * np.arange(n_around) / n_around
        dirs = np.cos(phi)[:, None] * self.e1 + self.squash * np.sin(phi)[:, None] * self.e2
        verts = [self.p0 - self.cap0 * self.axis]
        for s, rho in rings:
            verts.extend(self.p0 + s * self.axis + rho * dirs)
        verts.append(self.p1 + self.cap1 * self.axis)
        verts = np.array(verts)

        n_r, top = len(rings), len(verts) - 1
        ring = lambda r, j: 1 + r * n_around + (j % n_around)
        faces = []
        for j in range(n_around):
            faces.append((0, ring(0, j + 1), ring(0, j)))
            faces.append((top, ring(n_r - 1, j), ring(n_r - 1, j + 1)))
            for r in range(n_r - 1):
                a, b = ring(r, j), ring(r, j + 1)
                c, d = ring(r + 1, j), ring(r + 1, j + 1)
                faces.append((a, b, d))
                faces.append((a, d, c))
        faces = np.array(faces)
        # e1, e2, axis is right-handed, so this winding is outward; checked, not assumed.
        if signed_volume(verts, faces) < 0:
            faces = faces[:, ::-1]
        return verts, faces

    def local(self, x):
        """Axial coordinate s and cross-section offset (e1, e2/squash) of points x."""
        d = x - self.p0
        s = d @ self.axis
        return s, d @ self.e1, (d @ self.e2) / self.squash

    def inside(self, x):
        """True where points x [...,3] lie strictly inside this piece."""
        s, a, b = self.local(x)
        rr = np.sqrt(a * a + b * b)
        body = (s >= 0) & (s <= self.length) & (rr < self.radius_at(s))
        cap0 = (s < 0) & ((s / self.cap0) ** 2 + (rr / self.r0) ** 2 < 1)
        cap1 = (s > self.length) & (((s - self.length) / self.cap1) ** 2 + (rr / self.r1) ** 2 < 1)
        return body | cap0 | cap1


def body_pieces():
    J = rest_joints()
    X, Y, Z = np.eye(3)
    ps = [
        Piece("pelvis", (0, 0.84, 0), (0, 0.98, 0), 0.16, 0.15, 0.07, 0.04, [0, 3], X, 0.72),
        Piece("torso", (0, 1.00, 0), (0, 1.40, 0), 0.145, 0.17, 0.04, 0.07, [0, 3, 6, 9], X, 0.68),
        Piece("neck", (0, 1.40, 0), (0, 1.52, 0), 0.055, 0.05, 0.03, 0.03, [9, 12, 15], X),
        Piece("head", (0, 1.57, 0.01), (0, 1.62, 0.01), 0.085, 0.085, 0.07, 0.08, [12, 15], X,
              1.15, girth=0.3, group="head"),
    ]
    for sgn, (sh, el, wr, ha, co, hip, kn, an, ft) in (
            (1, (16, 18, 20, 22, 13, 1, 4, 7, 10)), (-1, (17, 19, 21, 23, 14, 2, 5, 8, 11))):
        tip = J[ha] + sgn * np.array([0.07, 0, 0])
        ps += [
            Piece("upper_arm", J[sh], J[el], 0.052, 0.042, 0.04, 0.03, [co, sh, el], Y, group="arm"),
            Piece("forearm", J[el], J[wr], 0.040, 0.032, 0.03, 0.03, [sh, el, wr], Y, group="arm"),
            Piece("hand", J[wr], tip, 0.045, 0.04, 0.02, 0.03, [el, wr, ha], Z, 0.45,
                  girth=0.3, group="arm"),
            Piece("thigh", J[hip], J[kn], 0.078, 0.055, 0.05, 0.04, [0, hip, kn], X, group="leg"),
            Piece("shin", J[kn], J[an], 0.052, 0.035, 0.04, 0.03, [hip, kn, an], X, group="leg"),
            Piece("foot", (sgn * 0.09, 0.035, -0.04), (sgn * 0.095, 0.035, 0.15), 0.045, 0.045,
                  0.03, 0.03, [an, ft], X, 0.75, girth=0.3, group="leg"),
        ]
    return ps


def signed_volume(verts, faces):
    """Volume enclosed by a closed mesh; positive when faces wind outward."""
    a, b, c = verts[faces[:, 0]], verts[faces[:, 1]], verts[faces[:, 2]]
    return np.einsum("ij,ij->", a, np.cross(b, c)) / 6.0


def _smoothstep(e0, e1, x):
    t = np.clip((x - e0) / (e1 - e0), 0.0, 1.0)
    return t * t * (3 - 2 * t)


def _chain_weights(piece, s, J, blend=0.04):
    """Skinning weights [n,24] along a piece's joint chain.

    Joint chain[i] owns the stretch between the positions of chain[i] and
    chain[i+1]; at each switch point the weight moves over with a smoothstep of
    half-width `blend`. Weight of chain[i] = S_i - S_{i+1} with S_0 = 1, so rows
    are nonnegative and sum to 1 exactly (telescoping).
    """
    bps = [(J[j] - piece.p0) @ piece.axis for j in piece.chain[1:]]
    gaps = np.diff(bps)
    b = min(blend, 0.45 * gaps.min()) if len(gaps) else blend
    S = [np.ones_like(s)] + [_smoothstep(p - b, p + b, s) for p in bps] + [np.zeros_like(s)]
    W = np.zeros((len(s), 24))
    for i, j in enumerate(piece.chain):
        W[:, j] += S[i] - S[i + 1]
    return W


def _regressor_row(verts, cand, target, sigma=0.06, iters=50):
    """Nonnegative weights over verts[cand] summing to 1 whose mean is `target`.

    Start from Gaussian weights around the target and tilt them exponentially
    (w_i ∝ g_i exp(λ·(v_i - target))) until the weighted mean hits the target:
    Newton on the convex function log Σ g_i exp(λ·(v_i - target)).
    """
    d = verts[cand] - target
    logg = -np.sum(d * d, 1) / (2 * sigma * sigma)
    lam = np.zeros(3)
    for _ in range(iters):
        a = logg + d @ lam
        w = np.exp(a - a.max())
        w /= w.sum()
        grad = w @ d
        if np.linalg.norm(grad) < 1e-10:
            break
        cov = (d * w[:, None]).T @ d - np.outer(grad, grad)
        step = np.linalg.solve(cov + 1e-12 * np.eye(3), grad)
        lam -= step
    if np.linalg.norm(grad) > 1e-8:
        raise RuntimeError(f"joint regressor did not converge (target {target})")
    return w


def _shape_dirs(verts, piece_w, pieces, rng):
    """shapedirs [Nb,3,S]: β0 height, β1 girth, β2 shoulder width, β3 hip width,
    β4.. small smooth random fields. Scaled so |β| = 3 is a plausible extreme.
    piece_w [Nb,P]: each vertex's weights over the pieces (one-hot for a body
    of separate pieces, blended across the junctions of the welded one).
    """
    n = len(verts)
    D = np.zeros((n, 3, NUM_BETAS))
    x, y = verts[:, 0], verts[:, 1]
    side = np.sign(x)
    wsum = lambda test: piece_w[:, [p for p, pc in enumerate(pieces) if test(pc)]].sum(1)
    arm, leg = wsum(lambda pc: pc.group == "arm"), wsum(lambda pc: pc.group == "leg")
    torso, pel = wsum(lambda pc: pc.name == "torso"), wsum(lambda pc: pc.name == "pelvis")
    # β0: height, uniform vertical scale about the floor (±10% at |β| = 3).
    D[:, 1, 0] = y / 30.0
    # β1: girth, each piece's cross-section grows 10% per unit (less for head,
    # hands, feet); limbs move out with the trunk so they stay attached.
    for p, pc in enumerate(pieces):
        m = piece_w[:, p] > 0
        s, _, _ = pc.local(verts[m])
        radial = verts[m] - pc.p0 - s[:, None] * pc.axis
        D[m, :, 1] += piece_w[m, p, None] * 0.1 * pc.girth * radial
    D[:, 0, 1] += side * 0.1 * (0.17 * arm + 0.05 * leg)
    # β2: shoulder width, upper torso widens, arms move out 1.7 cm per unit.
    D[:, 0, 2] = torso * 0.1 * x * _smoothstep(1.15, 1.40, y) + arm * side * 0.017
    # β3: hip width, pelvis and lower torso widen, legs move out 1 cm per unit.
    D[:, 0, 3] = pel * 0.1 * x + torso * 0.1 * x * (1 - _smoothstep(0.95, 1.15, y)) + leg * side * 0.01
    # β4..: smooth random fields, three sinusoids each, std ~2 mm per unit.
    for k in range(4, NUM_BETAS):
        for _ in range(3):
            freq = rng.normal(0.0, 3.0, 3)
            amp = rng.normal(0.0, 0.002 / np.sqrt(3), 3)
            D[:, :, k] += np.sin(verts @ freq + rng.uniform(0, 2 * np.pi))[:, None] * amp
    return D


ARM_JOINTS = range(16, 24)  # SMPL's shoulders, elbows, wrists and hands


def arms_out(v_template, weights, girth=0.0, shoulders=0.0):
    """A shape space's extra term [Nb,3,S]: the arms moved out along x by
    `girth` m per unit of β1 and `shoulders` m per unit of β2, beyond what
    _shape_dirs does, each vertex by its skinning weight on the arm joints
    (ARM_JOINTS), so the shift fades across the welded shoulder. _shape_dirs
    moves the arms 1.7 cm per unit of girth, less than the chest and the arm
    together grow, and 1.7 cm per unit of shoulder width, more than the upper
    torso narrows at the armpit: a thick, narrow-shouldered shape's lowered
    arms pass through its chest (docs/training-log.md, "Where the T-shirt's
    collisions are")."""
    arm = np.asarray(weights, np.float64)[:, ARM_JOINTS].sum(1)
    D = np.zeros((len(v_template), 3, NUM_BETAS))
    side = np.sign(np.asarray(v_template, np.float64)[:, 0])
    D[:, 0, 1] = side * girth * arm
    D[:, 0, 2] = side * shoulders * arm
    return D


def make_body(resolution, rng):
    """Procedural body in SMPL layout: dict of float64/int arrays (see docs/design.md §2.1).

    The surface is the welded union of the pieces (train/weld.py), except at
    the "tiny" test resolution, whose grid would lose the limbs: there each
    piece is meshed on its own and the pieces overlap.
    """
    pieces = body_pieces()
    J = rest_joints()
    welded = resolution != "tiny"
    if welded:
        verts, faces, piece_w = weld.weld(pieces, WELD_CELL[resolution])
    else:
        h = TINY_BODY_EDGE
        verts, faces, piece_of = [], [], []
        for p, pc in enumerate(pieces):
            v, f = pc.mesh(h)
            faces.append(f + sum(len(x) for x in verts))
            verts.append(v)
            piece_of.append(np.full(len(v), p))
        verts, faces = np.concatenate(verts), np.concatenate(faces)
        piece_w = np.eye(len(pieces))[np.concatenate(piece_of)]
    piece_of = piece_w.argmax(1)
    weights = np.zeros((len(verts), 24))
    for p, pc in enumerate(pieces):
        m = piece_w[:, p] > 0
        weights[m] += piece_w[m, p, None] * _chain_weights(pc, pc.local(verts[m])[0], J)
    if welded:
        weights = weld.smooth_weights(faces, weights)

    # Joint regressor: each joint from the pieces whose chain contains it or
    # whose volume contains it (the collars sit inside the torso).
    Jreg = np.zeros((24, len(verts)))
    for j in range(24):
        near = [p for p, pc in enumerate(pieces) if j in pc.chain or pc.inside(J[j])]
        cand = np.flatnonzero(np.isin(piece_of, near))
        Jreg[j, cand] = _regressor_row(verts, cand, J[j])
    return {
        "v_template": verts,
        "shapedirs": _shape_dirs(verts, piece_w, pieces, rng),
        "J_regressor": Jreg,
        "weights": weights,
        "parents": PARENTS.copy(),
        "faces": faces.astype(np.int32),
        "pieces": pieces,  # kept for inside tests (skirt clearance); not exported
    }


def inside_body(body, x):
    """True where points x [...,3] are inside the canonical (β = 0) body."""
    return np.any([pc.inside(x) for pc in body["pieces"]], axis=0)


def _pieces_near_heights(body, y_lo, y_hi):
    """The body pieces that reach into the height band [y_lo, y_hi]."""
    out = []
    for pc in body["pieces"]:
        reach = max(pc.r0, pc.r1, pc.cap0, pc.cap1)
        if min(pc.p0[1], pc.p1[1]) - reach <= y_hi and max(pc.p0[1], pc.p1[1]) + reach >= y_lo:
            out.append(pc)
    return out


# ---------------------------------------------------------------------------
# Garments


def _body_radius_profile(body, ys, thetas, r_max=0.45, dr=0.001):
    """Largest distance from the y axis at which the canonical body is present,
    per height y and direction θ (x = r sin θ, z = r cos θ): [len(ys), len(thetas)]."""
    rs = np.arange(0.0, r_max, dr)
    dirs = np.stack([np.sin(thetas), np.zeros_like(thetas), np.cos(thetas)], -1)
    prof = np.zeros((len(ys), len(thetas)))
    near = _pieces_near_heights(body, ys.min(), ys.max())
    # A piece lies within ρ of its segment p0-p1, so no point of it is
    # farther from the y axis than its ends' distance + ρ: only the radii
    # below that are tested (the same points, so the same answer, faster).
    n_test = []
    for pc in near:
        rho = np.hypot(max(pc.cap0, pc.cap1), max(pc.r0, pc.r1) * max(1.0, pc.squash))
        reach = max(np.hypot(pc.p0[0], pc.p0[2]), np.hypot(pc.p1[0], pc.p1[2])) + rho
        n_test.append(min(len(rs), int(np.ceil(reach / dr)) + 2))
    for i, y in enumerate(ys):
        ins = np.zeros((len(thetas), len(rs)), dtype=bool)  # [θ, r]
        for pc, n in zip(near, n_test):
            pts = rs[None, :n, None] * dirs[:, None, :] + np.array([0.0, y, 0.0])
            ins[:, :n] |= pc.inside(pts)
        last = np.where(ins.any(1), len(rs) - 1 - np.argmax(ins[:, ::-1], axis=1), 0)
        prof[i] = rs[last]
    return prof


def _two_panel_uv(panels, gutter=0.02):
    """Lays out two unrolled panels in the unit square: [(u, d), (u, d)] with
    u centred on 0 (m across) and d >= 0 (m down from the panel's top).
    Front and back side by side or one above the other, whichever gives the
    larger texel density; a gutter around and between the panels. Returns
    the uv [N,2] of both panels' points, front first."""
    width = max(p[0].max() - p[0].min() for p in panels)
    height = max(p[1].max() for p in panels)
    side_by_side = min((0.5 - 1.5 * gutter) / width, (1 - 2 * gutter) / height)
    stacked = min((1 - 2 * gutter) / width, (0.5 - 1.5 * gutter) / height)
    scale = max(side_by_side, stacked)
    uv = []
    for k, (u, d) in enumerate(panels):
        if side_by_side >= stacked:  # front in the left half, back in the right
            uc, vtop = 0.25 + 0.5 * k, 1 - gutter
        else:  # front in the top half (high v), back in the bottom half
            uc, vtop = 0.5, 1 - gutter - 0.5 * k
        uv.append(np.stack([uc + scale * u, vtop - scale * d], -1).reshape(-1, 2))
    return np.concatenate(uv)


def _panel_tube(radius, ys, n_cols):
    """A vertical open tube split into a front and a back panel.

    Rows at heights ys (top first), n_cols columns around at
    θ_j = -π/2 + 2π j / n_cols (θ = 0 is +z, the front); `radius(y, θ)` gives
    the distance from the y axis. Seams are at the sides (θ = ±π/2). Returns
    rest [V,3], faces [F,3] (outward), uv [Nuv,2], uv_faces [F,3].
    """
    assert n_cols % 2 == 0
    n_rows, half = len(ys), n_cols // 2
    th = -0.5 * np.pi + 2 * np.pi * np.arange(n_cols) / n_cols
    Y, TH = np.meshgrid(ys, th, indexing="ij")
    R = radius(Y, TH)
    rest = np.stack([R * np.sin(TH), Y, R * np.cos(TH)], -1).reshape(-1, 3)
    vid = lambda r, c: r * n_cols + (c % n_cols)

    # UVs: each panel is unrolled, u = arc length along the row from the panel's
    # centre line, v = length down the column; both panels share one scale.
    grid = rest.reshape(n_rows, n_cols, 3)
    panels = []
    for c0 in (0, half):  # front: θ -π/2..π/2, back: π/2..3π/2
        cols = [(c0 + c) % n_cols for c in range(half + 1)]
        P = grid[:, cols]
        arc = np.concatenate([np.zeros((n_rows, 1)),
                              np.cumsum(np.linalg.norm(np.diff(P, axis=1), axis=2), 1)], 1)
        down = np.concatenate([np.zeros((1, half + 1)),
                               np.cumsum(np.linalg.norm(np.diff(P, axis=0), axis=2), 0)], 0)
        panels.append((arc - arc[:, -1:] / 2, down))
    uv = _two_panel_uv(panels)
    uvid = lambda k, r, c: k * n_rows * (half + 1) + r * (half + 1) + c

    faces, uv_faces = [], []
    for r in range(n_rows - 1):
        for c in range(n_cols):
            k, cc = divmod(c, half)  # panel and column within it
            # Row r+1 is below row r; (down × around) points away from the axis.
            faces += [(vid(r, c), vid(r + 1, c), vid(r, c + 1)),
                      (vid(r, c + 1), vid(r + 1, c), vid(r + 1, c + 1))]
            uv_faces += [(uvid(k, r, cc), uvid(k, r + 1, cc), uvid(k, r, cc + 1)),
                         (uvid(k, r, cc + 1), uvid(k, r + 1, cc), uvid(k, r + 1, cc + 1))]
    return rest, np.array(faces), uv, np.array(uv_faces)


def _hanging_radius(body, y_top, y_hem, clearance, flare):
    """radius(y, θ) of a garment hanging from y_top to y_hem around the body.

    The radius at each height must clear every body part at that height or
    above (the garment hangs straight or flares), plus `clearance`, smoothed
    around the circle, plus flare(ys) [len(ys),1] (an A-line widening)."""
    ys = np.linspace(y_top, y_hem, 101)
    ths = np.linspace(-np.pi, np.pi, 181)
    prof = _body_radius_profile(body, ys, ths)
    need = np.maximum.accumulate(prof, axis=0) + clearance
    # Smooth around the circle (circular moving average), never below `need`.
    k = 9
    padded = np.concatenate([need[:, -k:], need, need[:, :k]], 1)
    smooth = np.stack([padded[:, i:i + need.shape[1]] for i in range(2 * k + 1)]).mean(0)
    prof = np.maximum(smooth, need) + flare(ys)

    def radius(y, th):
        # Bilinear lookup in the (y, θ) table; ys is decreasing.
        fy = (y_top - y) / (y_top - y_hem) * (len(ys) - 1)
        ft = (np.mod(th + np.pi, 2 * np.pi)) / (2 * np.pi) * (len(ths) - 1)
        i0 = np.clip(np.floor(fy).astype(int), 0, len(ys) - 2)
        j0 = np.clip(np.floor(ft).astype(int), 0, len(ths) - 2)
        a, b = fy - i0, ft - j0
        return ((1 - a) * ((1 - b) * prof[i0, j0] + b * prof[i0, j0 + 1])
                + a * ((1 - b) * prof[i0 + 1, j0] + b * prof[i0 + 1, j0 + 1]))

    return radius


def make_skirt(body, resolution, y_top=1.00, y_hem=0.50, clearance=0.02, flare=0.2, row_frac=1.0):
    """A flared skirt from the waist down to y_hem, clear of the body."""
    n_cols, n_rows = SKIRT_GRID[resolution]
    n_rows = max(3, int(round(n_rows * row_frac)))
    radius = _hanging_radius(body, y_top, y_hem, clearance, lambda ys: flare * (y_top - ys)[:, None])
    return _panel_tube(radius, np.linspace(y_top, y_hem, n_rows), n_cols)


def make_miniskirt(body, resolution):
    """A short, wider A-line skirt: a second garment with its own topology."""
    return make_skirt(body, resolution, y_hem=0.76, flare=0.35, row_frac=0.5)


def make_dress(body, resolution, y_top=1.25, y_hem=0.35, clearance=0.02, y_flare=1.05, flare=0.3):
    """A loose strapless dress: a bodice from below the arms (y 1.25), hanging
    straight past the chest and hips, then an A-line flare below y_flare down
    to y_hem (past the knees). Same panel construction as the skirt.

    Its top clears the lowered arms: a bodice at y 1.32 was caught under them,
    and in a symmetric standing pose its hem hung 70 mm to one side, a state
    the poses do not set (docs/training-log.md, "Training on mirror images,
    and the dress's hem in a standing pose")."""
    n_cols, n_rows = DRESS_GRID[resolution]
    radius = _hanging_radius(body, y_top, y_hem, clearance,
                             lambda ys: flare * np.maximum(y_flare - ys, 0.0)[:, None])
    return _panel_tube(radius, np.linspace(y_top, y_hem, n_rows), n_cols)


def make_tshirt(body, resolution, y_hem=0.90, clearance=0.02, sleeve=0.2, r_sleeve=(0.085, 0.07),
                neck=(0.10, 0.125, 0.08), lift=0.02):
    """A T-shirt with short sleeves, sewn from a front and a back panel.

    Hip length (y_hem 0.90, above the crotch): a hem the thighs reach is
    pushed about by the legs, and where it settles then depends on the
    motion's history, which a model of three frames cannot know.

    Each panel is a T on one (row i, column j) grid: rows 0..n_up are the
    shoulder region and the sleeves (row 0 the shoulder/sleeve-top seam, row
    n_up the underarm seam and the armpit), rows below are the torso down to
    the hem; columns |j| <= S are the torso (j = ±S the side seams), the rest
    the sleeves (|j| = S + L the cuffs). Front and back share the vertices of
    the seams (top row, underarm rows, side columns), so the shirt is one
    connected manifold with four openings (neck, hem, two cuffs).

    3D, in the T-pose: the torso below the armpits is a tube hanging from the
    chest (the skirt's radius rule, trunk only); a sleeve is a tapered tube
    around the arm axis (radius r_sleeve[0] at the armhole, [1] at the cuff);
    the shoulder region runs from the flat top seam over the shoulders to the
    torso's top row (a quarter ellipse, then straight down), bent onto the
    armhole half-circles near the sides. The neck opening removes
    the shoulder-region vertices inside the ellipse (x/a)² + (z/b)² < 1,
    neck = (a, b front, b back). UVs are the flat panels: per row the arc
    length from the centre line, per column the length down from the top.
    """
    h = TSHIRT_EDGE[resolution]
    y_arm = rest_joints()[16, 1]  # the arms' axis in the T-pose
    R0, R1 = r_sleeve
    y_top, y_pit = y_arm + R0, y_arm - R0
    radius = _hanging_radius(body, y_pit, y_hem, clearance, lambda ys: 0.05 * (y_pit - ys)[:, None])
    th = np.linspace(0, 0.5 * np.pi, 65)
    ring = radius(np.full_like(th, y_pit), th)[:, None] * np.stack([np.sin(th), np.cos(th)], 1)
    quarter = np.linalg.norm(np.diff(ring, axis=0), axis=1).sum()
    n_up = max(2, int(round(np.pi * R0 / h)))
    n_low = max(2, int(round((y_pit - y_hem) / h)))
    S, L = max(2, int(round(quarter / h))), max(1, int(round(sleeve / h)))
    n_rows, n_cols = n_up + n_low + 1, 2 * (S + L) + 1
    I, Jc = np.meshgrid(np.arange(n_rows), np.arange(-S - L, S + L + 1), indexing="ij")
    valid = (np.abs(Jc) <= S) | (I <= n_up)
    seam = valid & ((I == 0) | ((I == n_up) & (np.abs(Jc) >= S)) | ((np.abs(Jc) == S) & (I >= n_up)))
    xh = {1: float(radius(y_pit, 0.5 * np.pi)), -1: float(radius(y_pit, -0.5 * np.pi))}

    def panel(sgn):
        """Vertex positions [n_rows, n_cols, 3] of the front (sgn 1) or back (-1)."""
        X = np.zeros((n_rows, n_cols, 3))
        ys = np.linspace(y_pit, y_hem, n_low + 1)
        tor = slice(L, L + 2 * S + 1)
        th = (Jc[0, tor] / S) * 0.5 * np.pi
        th = th if sgn > 0 else np.pi - th
        Y, TH = np.meshgrid(ys, th, indexing="ij")
        R = radius(Y, TH)
        X[n_up:, tor] = np.stack([R * np.sin(TH), Y, R * np.cos(TH)], -1)
        # Sleeves: rows go around the arm from the top (ψ = 0) over the
        # front (back) to the bottom (ψ = π).
        psi = np.pi * np.arange(n_up + 1) / n_up
        for side in (1, -1):
            cols = np.flatnonzero(side * Jc[0] >= S)
            t = (side * Jc[0, cols] - S) / L
            r = R0 + (R1 - R0) * t
            X[:n_up + 1, cols] = np.stack(np.broadcast_arrays(
                side * (xh[side] + sleeve * t)[None, :], y_arm + np.cos(psi)[:, None] * r[None, :],
                sgn * np.sin(psi)[:, None] * r[None, :]), -1)
        # Shoulder region. Each column runs from the top seam over the
        # shoulder to the chest row along a stadium profile: a quarter ellipse
        # (R0 high, centred on the arm axis) down to y_arm, then straight down
        # to the armpit row, so it meets the tube below without a crease.
        # Rows are spaced by arc length. Near the sides a correction,
        # fading out over u_side of the width, bends the columns onto the
        # armhole half-circles (the sleeves' first column).
        bot = X[n_up, tor]  # [2S+1, 3], the chest row
        u = (Jc[0, tor] + S) / (2 * S)
        x_top = -xh[-1] + (xh[1] + xh[-1]) * u
        # Sloped shoulders: the top seam is `lift` higher at the neck opening
        # than at the armholes (where the sleeve tops continue it).
        y_seam = y_top + lift * (1 - _smoothstep(neck[0], np.minimum(xh[1], xh[-1]), np.abs(x_top)))
        tau = np.linspace(0, 1, 257)
        beta = np.pi * np.minimum(tau, 0.5)
        v = np.arange(n_up + 1) / n_up
        E = np.zeros((n_up + 1, 2 * S + 1, 3))
        for c in range(2 * S + 1):
            pz = bot[c, 2] * np.sin(beta)
            prof_y = np.where(tau < 0.5, y_arm + (y_seam[c] - y_arm) * np.cos(beta), y_arm - R0 * (2 * tau - 1))
            arc = np.concatenate([[0], np.cumsum(np.hypot(np.diff(prof_y), np.diff(pz)))])
            E[:, c, 1] = np.interp(v * arc[-1], arc, prof_y)
            E[:, c, 2] = np.interp(v * arc[-1], arc, pz)
            E[:, c, 0] = bot[c, 0] + (x_top[c] - bot[c, 0]) * (E[:, c, 1] - y_pit) / (y_seam[c] - y_pit)
        u_side = 0.3
        w_left, w_right = 1 - _smoothstep(0, u_side, u), 1 - _smoothstep(0, u_side, 1 - u)
        left, right = X[:n_up + 1, L], X[:n_up + 1, L + 2 * S]
        X[:n_up + 1, tor] = (E + w_left[None, :, None] * (left - E[:, 0])[:, None]
                             + w_right[None, :, None] * (right - E[:, -1])[:, None])
        X[:n_up + 1, tor, 1] = np.minimum(X[:n_up + 1, tor, 1], y_seam)  # the top seam stays highest
        return X

    P = [panel(1), panel(-1)]
    # Unique vertices: the front's, then the back's off the seams.
    vid = np.full((2, n_rows, n_cols), -1)
    vid[0][valid] = np.arange(valid.sum())
    own = valid & ~seam
    vid[1] = np.where(seam, vid[0], -1)
    vid[1][own] = valid.sum() + np.arange(own.sum())
    rest = np.concatenate([P[0][valid], P[1][own]])
    # The neck opening.
    a, b_front, b_back = neck
    x, z = rest[:, 0], rest[:, 2]
    b = np.where(z > 0, b_front, b_back)
    upper = np.concatenate([(I <= 0.6 * n_up)[valid], (I <= 0.6 * n_up)[own]])
    keep = ~(upper & ((x / a) ** 2 + (z / b) ** 2 < 1))

    # Flat panels: u = arc length along the row from the centre column,
    # d = length down the column from the top row; the back mirrored so
    # that both charts keep the faces' orientation.
    panels, uvid = [], np.full((2, n_rows, n_cols), -1)
    for k in range(2):
        X = np.where(valid[..., None], P[k], np.nan)
        seg = np.linalg.norm(np.diff(X, axis=1), axis=2)
        arc = np.concatenate([np.zeros((n_rows, 1)), np.nancumsum(seg, 1)], 1)
        arc = (arc - arc[:, S + L:S + L + 1]) * (1 - 2 * k)  # the back seen from behind
        down = np.concatenate([np.zeros((1, n_cols)), np.nancumsum(np.linalg.norm(np.diff(X, axis=0), axis=2), 0)], 0)
        panels.append((arc[valid], down[valid]))
        uvid[k][valid] = k * valid.sum() + np.arange(valid.sum())
    off = 0.5 * (max(p[0].max() for p in panels) + min(p[0].min() for p in panels))
    uv = _two_panel_uv([(u - off, d) for u, d in panels])

    faces, uv_faces = [], []
    for k in range(2):
        for i in range(n_rows - 1):
            for c in range(n_cols - 1):
                q = [(i, c), (i + 1, c), (i, c + 1), (i + 1, c + 1)]  # a, b (below a), c (right of a), d
                if not all(valid[r, cc] for r, cc in q):
                    continue
                # Mirror-symmetric diagonals; (down × right) is outward on the front.
                tris = [(0, 1, 2), (2, 1, 3)] if Jc[0, c] >= 0 else [(0, 1, 3), (0, 3, 2)]
                for t in tris:
                    t = t if k == 0 else t[::-1]
                    faces.append([vid[k][q[m]] for m in t])
                    uv_faces.append([uvid[k][q[m]] for m in t])
    faces, uv_faces = np.array(faces), np.array(uv_faces)
    ok = keep[faces].all(1)
    faces, uv_faces = faces[ok], uv_faces[ok]
    # Drop the unreferenced vertices and UVs, keeping their order.
    used = np.unique(faces)
    remap = np.full(len(rest), -1)
    remap[used] = np.arange(len(used))
    used_uv = np.unique(uv_faces)
    remap_uv = np.full(len(uv), -1)
    remap_uv[used_uv] = np.arange(len(used_uv))
    return rest[used], remap[faces], uv[used_uv], remap_uv[uv_faces]


GARMENTS = {"skirt": make_skirt, "miniskirt": make_miniskirt, "dress": make_dress, "tshirt": make_tshirt}


def edge_list(faces):
    """Unique undirected edges (i < j) of a triangle mesh, sorted."""
    e = np.concatenate([faces[:, [0, 1]], faces[:, [1, 2]], faces[:, [2, 0]]])
    return np.unique(np.sort(e, axis=1), axis=0)


def nearest(points, targets, chunk=512):
    """Index of the nearest target (squared Euclidean; ties to the lower index)."""
    out = np.empty(len(points), dtype=np.int64)
    for i in range(0, len(points), chunk):
        d = points[i:i + chunk, None, :] - targets[None, :, :]
        out[i:i + chunk] = np.argmin(np.einsum("ijk,ijk->ij", d, d), axis=1)
    return out


def farthest_points(x, n, start=0):
    """Farthest point sampling: indices of n points, beginning with `start`."""
    idx = [start]
    d = np.sum((x - x[start]) ** 2, 1)
    for _ in range(n - 1):
        idx.append(int(np.argmax(d)))  # argmax: ties go to the lower index
        d = np.minimum(d, np.sum((x - x[idx[-1]]) ** 2, 1))
    return np.array(idx)


def garment_rig(rest, faces, body, bones, k, sigma=0.05):
    """The per-garment data of docs/design.md §2.2 beyond the mesh itself."""
    if bones > len(rest) or k > bones:
        raise ValueError(f"need k <= bones <= V (k={k}, bones={bones}, V={len(rest)})")
    bone_vid = farthest_points(rest, bones)
    e = edge_list(faces)
    length = np.linalg.norm(rest[e[:, 0]] - rest[e[:, 1]], axis=1)
    graph = sp.coo_matrix((length, (e[:, 0], e[:, 1])), shape=(len(rest),) * 2).tocsr()
    geo = dijkstra(graph, directed=False, indices=bone_vid).T  # [V,B], inf if unreachable
    # Stable sort: ties go to the lower bone index, inf sorts last.
    skin_idx = np.argsort(geo, axis=1, kind="stable")[:, :k]
    d = np.take_along_axis(geo, skin_idx, axis=1)
    w = np.exp(-d * d / (2 * sigma * sigma))  # exp(-inf) = 0
    s = w.sum(1, keepdims=True)
    under = s[:, 0] == 0
    w[under] = 0
    w[under, 0] = 1  # everything underflowed: all weight on the nearest bone
    w /= np.where(under[:, None], 1.0, s)
    bone_pos = rest[bone_vid]
    bone_body_nn = nearest(bone_pos, body["v_template"])
    return {
        "bones": bone_pos,
        "bone_joint_w": body["weights"][bone_body_nn],
        "skin_idx": skin_idx.astype(np.int32),
        "skin_w0": w,
        "body_nn": nearest(rest, body["v_template"]).astype(np.int32),
        "bone_body_nn": bone_body_nn.astype(np.int32),
    }


def attach_vertices(rest, band=0.01):
    """The vertices the simulator should attach: those within `band` of the
    highest rest vertex (sim/garment.c's rule, but on the rest shape, so the
    set does not change with β). Sorted indices [A]."""
    return np.flatnonzero(rest[:, 1] >= rest[:, 1].max() - band)


SLEEVED = ("tshirt",)  # the garments of GARMENTS with sleeves (attach_more's cuffs)


def attach_more(rest, hem=0.0, cuffs=0.0):
    """Vertices to attach beyond attach_vertices: the hem, within `hem` of the
    lowest rest vertex, and the sleeve cuffs, within `cuffs` of either end of
    the garment along x (the T-pose's arm axis: only for a garment with
    sleeves); 0 leaves one out. Sorted indices [A]."""
    keep = np.zeros(len(rest), bool)
    if hem > 0:
        keep |= rest[:, 1] <= rest[:, 1].min() + hem
    if cuffs > 0:
        x = rest[:, 0] - np.median(rest[:, 0])
        keep |= (x >= x.max() - cuffs) | (x <= x.min() + cuffs)
    return np.flatnonzero(keep)


def make_garment(name, body, resolution, bones, k):
    rest, faces, uv, uv_faces = GARMENTS[name](body, resolution)
    g = {"rest": rest, "faces": faces.astype(np.int32), "uv": uv,
         "uv_faces": uv_faces.astype(np.int32)}
    g.update(garment_rig(rest, faces, body, bones, k))
    return g


# ---------------------------------------------------------------------------
# Motions


def random_motion(rng, frames, fps=30.0, pose_std=0.25, speed=1.0):
    """A smooth random pose sequence [frames, 75] (72 axis-angle + 3 trans).

    Each joint's axis-angle drifts linearly from a random start with a random
    angular velocity (rad/s); the root gets a random yaw; the body walks at
    about `speed` m/s in a random horizontal direction. Plausible enough for
    input statistics and tests, not for training.
    """
    start = rng.normal(0.0, pose_std, (24, 3))
    vel = rng.normal(0.0, 1.0, (24, 3))
    yaw = rng.uniform(-np.pi, np.pi)
    start[0] = rng.normal(0.0, 0.1, 3) + np.array([0.0, yaw, 0.0])
    t = np.arange(frames) / fps
    pose = start[None] + t[:, None, None] * vel[None]
    dirn = rng.normal(0.0, 1.0, 3) * np.array([1.0, 0.1, 1.0])
    trans = rng.normal(0.0, 0.3, 3) * np.array([1.0, 0.1, 1.0]) + t[:, None] * speed * dirn / np.linalg.norm(dirn)
    return np.concatenate([pose.reshape(frames, 72), trans], 1).astype(np.float32)
