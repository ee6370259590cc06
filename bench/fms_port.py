"""NumPy/SciPy port of the seed notebook's fast mass springs (Liu et al. 2013),
kept as the peer that `drape sim cloth` is checked and benchmarked against.

    /usr/bin/python3 bench/fms_port.py grid --nx 25 --ny 25 --width 2 --height 2 --out grid.obj
        writes the notebook's triangulated grid (in the z = 0 plane) and prints
        the 0-based indices of its two top corners
    /usr/bin/python3 bench/fms_port.py run --mesh grid.obj --pin 600,624 [--ym 80] [--dt 0.0333333]
        [--steps 240] [--iters 8] [--gravity 9.8] --out out.obj
        the notebook's FastMassSpring in 3D: unit lumped mass, k = ym/l0^2,
        springs = unique triangle edges, pinned DOFs eliminated, one
        factorization (scipy.sparse.linalg.factorized), each inner iteration a
        local step then a global step; prints the simulation loop's time.
"""
import argparse
import time

import numpy as np
import scipy as sp
import scipy.sparse
import scipy.sparse.linalg


def triangulated_grid(nx, ny, width, height):
    xs = np.linspace(-width / 2, width / 2, nx)
    ys = np.linspace(-height / 2, height / 2, ny)
    X = np.array([[x, y, 0.0] for y in ys for x in xs])
    T = []
    for j in range(ny - 1):
        for i in range(nx - 1):
            a, b, c, d = j * nx + i, j * nx + i + 1, (j + 1) * nx + i, (j + 1) * nx + i + 1
            T += [(a, b, d), (a, d, c)]
    return X, np.array(T)


def read_obj(path):
    V, F = [], []
    for line in open(path):
        p = line.split()
        if not p:
            continue
        if p[0] == "v":
            V.append([float(x) for x in p[1:4]])
        elif p[0] == "f":
            idx = [int(x.split("/")[0]) - 1 for x in p[1:]]
            F += [(idx[0], idx[t], idx[t + 1]) for t in range(1, len(idx) - 1)]
    return np.array(V), np.array(F)


def write_obj(path, X, T):
    with open(path, "w") as f:
        for v in X:
            f.write("v %.17g %.17g %.17g\n" % tuple(v))
        for t in T:
            f.write("f %d %d %d\n" % tuple(t + 1))


def mesh_edges(T):
    E = np.sort(np.concatenate([T[:, [0, 1]], T[:, [1, 2]], T[:, [2, 0]]]), axis=1)
    return np.unique(E, axis=0)


class FastMassSpring:
    def __init__(self, X, T, pins, ym=80.0, h=1.0 / 30.0, gravity=9.8):
        self.X, self.T, self.h = X, T, h
        self.n, self.dim = X.shape
        self.Edge = mesh_edges(T)
        self.ne = len(self.Edge)
        self.l0 = np.linalg.norm(X[self.Edge[:, 1]] - X[self.Edge[:, 0]], axis=1)[:, None]
        self.k = (ym / self.l0 ** 2).flatten()
        rows = np.repeat(np.arange(self.ne), 2)
        Sinc = sp.sparse.csc_matrix((np.tile([-1.0, 1.0], self.ne), (rows, self.Edge.reshape(-1))),
                                    shape=(self.ne, self.n))
        self.G = sp.sparse.kron(Sinc, sp.sparse.eye(self.dim)).tocsc()
        self.W = sp.sparse.kron(sp.sparse.diags(self.k), sp.sparse.eye(self.dim)).tocsc()
        self.M = sp.sparse.eye(self.n * self.dim).tocsc()
        self.gvec = np.tile([0.0, -gravity, 0.0], self.n).reshape(-1, 1)
        pins = np.asarray(pins, dtype=int)
        self.pin_dof = (pins[:, None] * self.dim + np.arange(self.dim)).ravel()
        self.free_dof = np.setdiff1d(np.arange(self.n * self.dim), self.pin_dof)
        self.xp = X.flatten().reshape(-1, 1)[self.pin_dof]
        self.Hc = (self.M / h ** 2 + self.G.T @ self.W @ self.G).tocsc()
        H_ff = self.Hc[self.free_dof][:, self.free_dof].tocsc()
        self.H_fp = self.Hc[self.free_dof][:, self.pin_dof].tocsc()
        self.solve = sp.sparse.linalg.factorized(H_ff)

    def full(self, xf):
        x = np.empty((self.n * self.dim, 1))
        x[self.free_dof] = xf
        x[self.pin_dof] = self.xp
        return x

    def local_step(self, xf):
        d = (self.G @ self.full(xf)).reshape(-1, self.dim)
        return (self.l0 * d / np.linalg.norm(d, axis=1, keepdims=True)).reshape(-1, 1)

    def global_step(self, d, rhs_inertia):
        rhs = (rhs_inertia + self.G.T @ (self.W @ d))[self.free_dof] - self.H_fp @ self.xp
        return self.solve(rhs).reshape(-1, 1)

    def step(self, x, v, iters):
        y = x + self.h * v + self.h ** 2 * self.gvec
        rhs_inertia = (self.M / self.h ** 2) @ y
        xf = x[self.free_dof].copy()
        for _ in range(iters):
            xf = self.global_step(self.local_step(xf), rhs_inertia)
        x_new = self.full(xf)
        return x_new, (x_new - x) / self.h


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("grid")
    g.add_argument("--nx", type=int, default=25)
    g.add_argument("--ny", type=int, default=25)
    g.add_argument("--width", type=float, default=2.0)
    g.add_argument("--height", type=float, default=2.0)
    g.add_argument("--out", required=True)
    r = sub.add_parser("run")
    r.add_argument("--mesh", required=True)
    r.add_argument("--pin", required=True)
    r.add_argument("--ym", type=float, default=80.0)
    r.add_argument("--dt", type=float, default=1.0 / 30.0)
    r.add_argument("--steps", type=int, default=240)
    r.add_argument("--iters", type=int, default=8)
    r.add_argument("--gravity", type=float, default=9.8)
    r.add_argument("--out", required=True)
    a = ap.parse_args()
    if a.cmd == "grid":
        X, T = triangulated_grid(a.nx, a.ny, a.width, a.height)
        write_obj(a.out, X, T)
        print("%d,%d" % ((a.ny - 1) * a.nx, a.ny * a.nx - 1))
        return
    X, T = read_obj(a.mesh)
    sim = FastMassSpring(X, T, [int(p) for p in a.pin.split(",")], a.ym, a.dt, a.gravity)
    x = X.flatten().reshape(-1, 1).copy()
    v = np.zeros_like(x)
    t0 = time.perf_counter()
    for _ in range(a.steps):
        x, v = sim.step(x, v, a.iters)
    ms = (time.perf_counter() - t0) * 1e3
    write_obj(a.out, x.reshape(sim.n, sim.dim), T)
    print('{"what": "fms_port", "nodes": %d, "springs": %d, "steps": %d, "loop_ms": %.3f, "ms_per_step": %.4f}'
          % (sim.n, sim.ne, a.steps, ms, ms / max(a.steps, 1)))


if __name__ == "__main__":
    main()
