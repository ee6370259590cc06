"""One closed surface around overlapping body pieces (the welded body).

The pieces of assets.body_pieces() overlap at every joint. Meshed one by one,
each piece keeps its faces inside the others: a collider that takes the
nearest triangle then finds, near a junction, a face that is inside the body,
and docs/design.md §4's collision metric (nearest body vertex and its normal) reads
points outside the body as inside and the reverse. This module meshes the
boundary of the union instead:

1. a signed field per piece (exact zero set: the piece's surface; a distance
   proxy elsewhere), the union as their minimum, softened over `blend` m;
2. surface nets on a regular grid: one vertex per grid cell that the surface
   crosses, one quad per grid edge with a sign change;
3. the vertices projected onto the zero set and relaxed along the surface so
   triangles come out near-equilateral.

Each vertex also gets its weights over the pieces (a soft choice of the
nearest piece), from which assets.make_body blends skinning weights and
shape directions.
"""
import numpy as np
import scipy.sparse as sp


def piece_field(pc, x):
    """Signed field of piece pc at points x [...,3]: < 0 inside, 0 on its surface."""
    s, a, b = pc.local(x)
    rr = np.sqrt(a * a + b * b)
    d = rr - pc.radius_at(s)
    q0 = np.sqrt((s / pc.cap0) ** 2 + (rr / pc.r0) ** 2)
    q1 = np.sqrt(((s - pc.length) / pc.cap1) ** 2 + (rr / pc.r1) ** 2)
    d = np.where(s < 0, (q0 - 1) * min(pc.cap0, pc.r0), d)
    return np.where(s > pc.length, (q1 - 1) * min(pc.cap1, pc.r1), d)


def union_field(pieces, x, blend):
    """Soft minimum of the pieces' fields (polynomial smooth-min, width blend)."""
    f = None
    for pc in pieces:
        d = piece_field(pc, x)
        if f is None:
            f = d
            continue
        h = np.maximum(blend - np.abs(f - d), 0.0) / blend
        f = np.minimum(f, d) - h * h * blend / 4
    return f


def piece_weights(pieces, x, tau=0.006):
    """[n, P] weights of each point over the pieces: softmax of −field/tau."""
    d = np.stack([piece_field(pc, x) for pc in pieces], 1)
    w = np.exp(-(d - d.min(1, keepdims=True)) / tau)
    w[w < 1e-4] = 0
    return w / w.sum(1, keepdims=True)


def _gradient(pieces, x, blend, eps=1e-4):
    g = np.empty_like(x)
    for k in range(3):
        e = np.zeros(3)
        e[k] = eps
        g[:, k] = (union_field(pieces, x + e, blend) - union_field(pieces, x - e, blend)) / (2 * eps)
    return g


def project(pieces, x, blend, iters=4):
    """Newton steps along the field's gradient onto its zero set."""
    for _ in range(iters):
        f = union_field(pieces, x, blend)
        g = _gradient(pieces, x, blend)
        x = x - (f / np.maximum(np.einsum("ij,ij->i", g, g), 1e-12))[:, None] * g
    return x


def surface_nets(field, lo, cell):
    """Quads of the zero set of `field` [nx,ny,nz] sampled at lo + cell·(i,j,k).

    Returns vertices [n,3] (mean of the edge crossings of each crossed cell)
    and triangles [m,3] wound counter-clockwise seen from the positive side.
    """
    nx, ny, nz = field.shape
    neg = field < 0
    corners = [(i, j, k) for i in (0, 1) for j in (0, 1) for k in (0, 1)]
    cneg = np.stack([neg[i:nx - 1 + i, j:ny - 1 + j, k:nz - 1 + k] for i, j, k in corners], -1)
    active = cneg.any(-1) & ~cneg.all(-1)
    index = -np.ones(active.shape, np.int64)
    cells = np.argwhere(active)
    index[active] = np.arange(len(cells))
    # Each vertex: the mean of the zero crossings on its cell's 12 edges.
    acc = np.zeros((len(cells), 3))
    cnt = np.zeros(len(cells))
    for a in range(3):
        for u in (0, 1):
            for v in (0, 1):
                o0 = np.zeros((len(cells), 3), np.int64)
                o1, o2 = [b for b in range(3) if b != a]
                o0[:, o1], o0[:, o2] = u, v
                p0 = cells + o0
                p1 = p0.copy()
                p1[:, a] += 1
                f0 = field[p0[:, 0], p0[:, 1], p0[:, 2]]
                f1 = field[p1[:, 0], p1[:, 1], p1[:, 2]]
                cross = (f0 < 0) != (f1 < 0)
                t = np.where(cross, f0 / np.where(cross, f0 - f1, 1.0), 0.0)
                pt = p0 + t[:, None] * (p1 - p0)
                acc[cross] += pt[cross]
                cnt[cross] += 1
    verts = lo + cell * acc / cnt[:, None]
    # One quad per grid edge with a sign change, joining the 4 cells around it.
    faces = []
    for a in range(3):
        b, c = (a + 1) % 3, (a + 2) % 3
        sl0 = [slice(None)] * 3
        sl1 = [slice(None)] * 3
        sl0[a], sl1[a] = slice(0, -1), slice(1, None)
        f0, f1 = field[tuple(sl0)], field[tuple(sl1)]
        e = np.argwhere((f0 < 0) != (f1 < 0))
        e = e[(e[:, b] > 0) & (e[:, c] > 0) & (e[:, b] < field.shape[b] - 1) & (e[:, c] < field.shape[c] - 1)]
        inward = f0[tuple(e.T)] < 0  # inside at the low end: the surface faces +a
        def cell(db, dc):
            q = e.copy()
            q[:, b] -= db
            q[:, c] -= dc
            return index[q[:, 0], q[:, 1], q[:, 2]]
        q00, q10, q11, q01 = cell(1, 1), cell(0, 1), cell(0, 0), cell(1, 0)
        quad = np.stack([q00, q10, q11, q01], 1)
        quad[~inward] = quad[~inward][:, ::-1]
        # split along the shorter diagonal
        d02 = np.linalg.norm(verts[quad[:, 0]] - verts[quad[:, 2]], axis=1)
        d13 = np.linalg.norm(verts[quad[:, 1]] - verts[quad[:, 3]], axis=1)
        s = d02 <= d13
        faces.append(np.concatenate([
            np.stack([quad[s, 0], quad[s, 1], quad[s, 2]], 1), np.stack([quad[s, 0], quad[s, 2], quad[s, 3]], 1),
            np.stack([quad[~s, 0], quad[~s, 1], quad[~s, 3]], 1), np.stack([quad[~s, 1], quad[~s, 2], quad[~s, 3]], 1)]))
    return verts, np.concatenate(faces)


def _neighbours(n, faces):
    e = np.concatenate([faces[:, [0, 1]], faces[:, [1, 2]], faces[:, [2, 0]]])
    e = np.unique(np.sort(e, 1), axis=0)
    A = sp.coo_matrix((np.ones(2 * len(e)), (np.r_[e[:, 0], e[:, 1]], np.r_[e[:, 1], e[:, 0]])), shape=(n, n)).tocsr()
    return A


def smooth_weights(faces, W, iters=12):
    """Skinning weights diffused over the surface: half each row, half the mean
    of its neighbours', `iters` times (rows still sum to 1).

    Blended from the pieces alone, the weights change within millimetres at
    the creases where pieces meet (groin, armpit), and a bent hip or shoulder
    then folds the welded surface there; 12 passes spread the change over
    about three edges (~8 cm), like the smooth weights of a scanned body.
    """
    A = _neighbours(len(W), faces)
    deg = np.asarray(A.sum(1)).ravel()
    for _ in range(iters):
        W = 0.5 * W + 0.5 * (A @ W) / deg[:, None]
    return W


def vertex_normals(v, faces):
    """Unit vertex normals: the normalized sums of the adjacent faces' cross products."""
    n = np.zeros_like(v)
    c = np.cross(v[faces[:, 1]] - v[faces[:, 0]], v[faces[:, 2]] - v[faces[:, 0]])
    for k in range(3):
        np.add.at(n, faces[:, k], c)
    return n / np.maximum(np.linalg.norm(n, axis=1, keepdims=True), 1e-12)


def weld(pieces, cell, blend=0.015, relax=6, pad=0.05):
    """The welded surface of `pieces` at grid spacing `cell` (m).

    Returns (vertices [n,3], faces [m,3] int, piece weights [n,P]).
    """
    lo = np.min([np.minimum(pc.p0, pc.p1) - max(pc.r0, pc.r1, pc.cap0, pc.cap1) for pc in pieces], 0) - pad
    hi = np.max([np.maximum(pc.p0, pc.p1) + max(pc.r0, pc.r1, pc.cap0, pc.cap1) for pc in pieces], 0) + pad
    n = np.ceil((hi - lo) / cell).astype(int) + 1
    g = np.stack(np.meshgrid(*[lo[k] + cell * np.arange(n[k]) for k in range(3)], indexing="ij"), -1)
    field = union_field(pieces, g.reshape(-1, 3), blend).reshape(g.shape[:3])
    v, f = surface_nets(field, lo, cell)
    # Drop unused vertices (cells on the grid border) and renumber.
    used = np.unique(f)
    remap = -np.ones(len(v), np.int64)
    remap[used] = np.arange(len(used))
    v, f = v[used], remap[f]
    v = project(pieces, v, blend)
    A = _neighbours(len(v), f)
    deg = np.asarray(A.sum(1)).ravel()
    for _ in range(relax):
        nrm = vertex_normals(v, f)
        lap = A @ v / deg[:, None] - v
        lap -= np.einsum("ij,ij->i", lap, nrm)[:, None] * nrm  # along the surface only
        v = project(pieces, v + 0.5 * lap, blend)
    return v, f.astype(np.int64), piece_weights(pieces, v)
