"""Procedural SMPL pose sequences, and an importer for `drape infer` pose files.

    /usr/bin/python3 train/motions.py --list
    /usr/bin/python3 train/motions.py --kind walk --seconds 4 --seed 1 --out walk.npy
    /usr/bin/python3 train/motions.py --import in.npy --src-fps 60 --out out.npy

Format ([T,75] float32, the input of `drape infer`): per frame 72 axis-angle
values (24 joints in SMPL order, each a local rotation; joint 0 the global
orientation) then the root translation (3), added to the pelvis joint; y up,
meters, 30 frames per second unless --fps says otherwise.

The body is the one of train/assets.py: T-pose rest, facing +z, its left on
+x. Local rotation axes are the rest (world) axes: hip/knee flexion about x
(hip forward is negative, knee bend positive), arms lowered about z (left −,
right +), elbows bent about y (left −, right +), spine lean forward about +x.

Every kind is deterministic from its seed, smooth (C1 in every angle and in
the translation), and keeps every joint's angular velocity (the angle of
R_t⁻¹ R_{t+1} times fps, root included) below MAX_JOINT_SPEED; `generate`
checks that and raises otherwise.
"""
import argparse
import sys

import numpy as np
from scipy.spatial.transform import Rotation, Slerp

FPS = 30.0
MAX_JOINT_SPEED = 15.0  # rad/s, any joint, root orientation included
MAX_ROOT_SPEED = 6.0  # m/s, horizontal

# Leg segment lengths of the procedural body (train/assets.py rest joints):
# hip y 0.86 -> knee 0.49 -> ankle 0.08.
THIGH, SHIN = 0.37, 0.41
G = 9.81

# SMPL joint indices used here.
PELVIS, L_HIP, R_HIP, SPINE1, L_KNEE, R_KNEE, SPINE2, L_ANKLE, R_ANKLE, SPINE3 = range(10)
NECK, L_COLLAR, R_COLLAR, HEAD, L_SHOULDER, R_SHOULDER, L_ELBOW, R_ELBOW = 12, 13, 14, 15, 16, 17, 18, 19
L_WRIST, R_WRIST = 20, 21


def _smoothstep(x):
    x = np.clip(x, 0.0, 1.0)
    return x * x * (3 - 2 * x)


def _hermite(t, keys):
    """C1 curve through keys [(time, value, slope), ...] (times increasing);
    constant before the first and after the last key (slopes there should be 0)."""
    keys = sorted(keys)
    out = np.full_like(t, keys[0][1], dtype=float)
    for (t0, p0, m0), (t1, p1, m1) in zip(keys[:-1], keys[1:]):
        sel = (t >= t0) & (t < t1)
        h = t1 - t0
        s = (t[sel] - t0) / h
        s2, s3 = s * s, s * s * s
        out[sel] = ((2 * s3 - 3 * s2 + 1) * p0 + (s3 - 2 * s2 + s) * h * m0
                    + (-2 * s3 + 3 * s2) * p1 + (s3 - s2) * h * m1)
    out[t >= keys[-1][0]] = keys[-1][1]
    return out


def _noise(rng, t, shape, amp, fmax=0.8):
    """Smooth random signals [T, *shape]: three sinusoids each, frequencies
    0.1..fmax Hz, total amplitude about `amp` (so speed ≤ 2π·fmax·amp)."""
    out = np.zeros((len(t),) + shape)
    for _ in range(3):
        f = rng.uniform(0.1, fmax, shape)
        ph = rng.uniform(0, 2 * np.pi, shape)
        a = rng.uniform(0.0, amp / 3, shape)
        out += a * np.sin(2 * np.pi * f * t.reshape((-1,) + (1,) * len(shape)) + ph)
    return out


class Pose:
    """Per-frame local joint angles (x, y, z) [T,24,3], composed per joint as
    R = Rx·Ry·Rz (z applied first), plus heading ψ [T], root lean/roll and the
    translation [T,3]."""

    def __init__(self, T):
        self.ang = np.zeros((T, 24, 3))
        self.heading = np.zeros(T)
        self.trans = np.zeros((T, 3))

    def to_array(self):
        T = len(self.heading)
        R = Rotation.from_euler("zyx", self.ang[..., ::-1].reshape(-1, 3)).as_matrix().reshape(T, 24, 3, 3)
        head = Rotation.from_euler("y", self.heading[:, None]).as_matrix()
        R[:, 0] = head @ R[:, 0]
        rv = Rotation.from_matrix(R.reshape(-1, 3, 3)).as_rotvec().reshape(T, 72)
        return np.concatenate([rv, self.trans], 1).astype(np.float32)


def _stand(P, rng, t):
    """Relaxed standing: arms lowered (about 20° from the body), elbows a
    little bent, plus small smooth noise everywhere."""
    down = rng.uniform(1.15, 1.3)
    P.ang[:, L_SHOULDER, 2] -= down
    P.ang[:, R_SHOULDER, 2] += down
    bend = rng.uniform(0.1, 0.3)
    P.ang[:, L_ELBOW, 1] -= bend
    P.ang[:, R_ELBOW, 1] += bend
    P.ang += _noise(rng, t, (24, 3), 0.03)


def _leg_extension(hip_flex, knee):
    """Height of the hip above the ankle for a thigh flexed forward by
    hip_flex and a knee bent by `knee` (both radians)."""
    return THIGH * np.cos(hip_flex) + SHIN * np.cos(knee - hip_flex)


def _softmax2(a, b, tau=0.01):
    return np.maximum(a, b) + tau * np.log1p(np.exp(-np.abs(a - b) / tau))


def _gait(P, rng, t, speed, heading, run, fade=None):
    """Locomotion at speed(t) m/s along heading(t); `run` in {0, 1};
    fade(t) in [0,1] scales the gait (1 = full gait, 0 = standing)."""
    T = len(t)
    dt = t[1] - t[0] if T > 1 else 1 / FPS
    if fade is None:
        fade = np.ones(T)
    # Step length grows with speed; a stride is two steps.
    step = np.where(run, 0.75 + 0.15 * speed, 0.45 + 0.2 * speed) * rng.uniform(0.9, 1.1)
    freq = np.maximum(speed / (2 * step), 0.6 if not run else 1.2)
    phase = rng.uniform(0, 2 * np.pi) + 2 * np.pi * np.concatenate([[0], np.cumsum(0.5 * (freq[1:] + freq[:-1]) * dt)])
    amp = rng.uniform(0.85, 1.15) * fade
    H, K0, K, S = (0.55, 0.35, 1.3, 0.6) if run else (0.38, 0.08, 0.95, 0.35)
    hip_l = -amp * H * np.sin(phase) - run * 0.2 * fade
    hip_r = amp * H * np.sin(phase) - run * 0.2 * fade
    knee = lambda ph: amp * (K0 + K * ((1 + np.cos(ph)) / 2) ** 2)
    knee_l, knee_r = knee(phase), knee(phase + np.pi)
    P.ang[:, L_HIP, 0] += hip_l
    P.ang[:, R_HIP, 0] += hip_r
    P.ang[:, L_KNEE, 0] += knee_l
    P.ang[:, R_KNEE, 0] += knee_r
    P.ang[:, L_ANKLE, 0] += -0.15 * amp * np.sin(phase + 0.5)
    P.ang[:, R_ANKLE, 0] += 0.15 * amp * np.sin(phase + 0.5)
    # Arms swing against the legs; elbows bend more when running.
    P.ang[:, L_SHOULDER, 0] += amp * S * np.sin(phase)
    P.ang[:, R_SHOULDER, 0] -= amp * S * np.sin(phase)
    P.ang[:, L_ELBOW, 1] -= fade * run * 1.1
    P.ang[:, R_ELBOW, 1] += fade * run * 1.1
    # Torso counter-rotation and forward lean.
    P.ang[:, SPINE2, 1] += 0.06 * amp * np.sin(phase)
    P.ang[:, PELVIS, 1] -= 0.05 * amp * np.sin(phase)
    P.ang[:, PELVIS, 0] += fade * (0.04 + 0.12 * run) * np.minimum(speed / 4, 1)
    # The pelvis height follows the longer leg (that foot is on the floor);
    # running adds a flight bump twice per stride.
    rest = THIGH + SHIN
    ext = _softmax2(_leg_extension(-hip_l, knee_l), _leg_extension(-hip_r, knee_r))
    y = ext - rest + run * fade * 0.03 * np.sin(2 * phase) ** 2
    P.trans[:, 1] += y
    P.heading += heading
    vx, vz = speed * np.sin(heading), speed * np.cos(heading)
    integ = lambda v: np.concatenate([[0], np.cumsum(0.5 * (v[1:] + v[:-1]) * dt)])
    P.trans[:, 0] += integ(vx)
    P.trans[:, 2] += integ(vz)
    return phase


# ---------------------------------------------------------------------------
# Kinds. Each takes (rng, t) and returns (Pose, params).


def _straight(rng, t, vmin, vmax, is_run):
    """Locomotion along a random heading at vmin..vmax m/s (small drifts)."""
    v = rng.uniform(vmin, vmax)
    P = Pose(len(t))
    _stand(P, rng, t)
    psi = rng.uniform(-np.pi, np.pi) + _noise(rng, t, (), 0.05, 0.3)
    speed = v * (1 + _noise(rng, t, (), 0.05, 0.3))
    _gait(P, rng, t, speed, psi, is_run)
    return P, {"speed": v}


def walk(rng, t):
    return _straight(rng, t, 0.8, 1.7, 0)


def run(rng, t):
    return _straight(rng, t, 2.2, 4.0, 1)


def turn(rng, t):
    """Walking, turning by 60°–180° left or right over 0.8–2 s."""
    v = rng.uniform(0.6, 1.3)
    dpsi = rng.choice([-1, 1]) * rng.uniform(np.pi / 3, np.pi)
    dur = min(rng.uniform(0.8, 2.0), 0.8 * t[-1] + 1e-6)
    t0 = rng.uniform(0.1, 0.9) * max(t[-1] - dur, 0)
    ramp = _smoothstep((t - t0) / dur)
    psi = rng.uniform(-np.pi, np.pi) + dpsi * ramp
    P = Pose(len(t))
    _stand(P, rng, t)
    speed = v * (1 - 0.3 * np.sin(np.pi * ramp))  # slows down while turning
    _gait(P, rng, t, speed, psi, 0)
    # Lean into the turn: roll about the forward axis ∝ v·ψ'.
    dpsidt = np.gradient(psi, t) if len(t) > 1 else np.zeros(1)
    P.ang[:, PELVIS, 2] += np.clip(0.05 * speed * dpsidt, -0.15, 0.15)
    return P, {"speed": v, "turn": float(dpsi), "duration": dur}


def jump(rng, t):
    """Repeated jumps in place or forward: crouch, push, flight, landing, recover."""
    P = Pose(len(t))
    _stand(P, rng, t)
    crouch = np.zeros(len(t))  # 0 standing, 1 deep crouch
    y = np.zeros(len(t))
    fwd = np.zeros(len(t))
    arms = np.zeros(len(t))  # -1 back, +1 up/forward
    s, heights = rng.uniform(0.2, 0.6), []
    while s < t[-1] + 1e-9:
        h = rng.uniform(0.08, 0.25)  # apex of the pelvis above standing
        depth = rng.uniform(0.5, 0.9)
        drop = THIGH + SHIN - _leg_extension(0.7 * depth, 1.3 * depth)
        dist = rng.uniform(0.0, 0.6)
        v0 = np.sqrt(2 * G * h)
        tc, tp, tl, tr = rng.uniform(0.35, 0.5), rng.uniform(0.22, 0.3), 0.3, rng.uniform(0.4, 0.6)
        tf = 2 * v0 / G
        a, b, c, d, e = s, s + tc, s + tc + tp, s + tc + tp + tf, s + tc + tp + tf + tl
        f = e + tr
        apex = 0.5 * (c + d)
        y += _hermite(t, [(a, 0, 0), (b, -drop, 0), (c, 0, v0), (apex, h, 0), (d, 0, -v0),
                          (e, -0.6 * drop, 0), (f, 0, 0)]) * ((t >= a) & (t < f))
        crouch += _hermite(t, [(a, 0, 0), (b, depth, 0), (c, 0, 0), (apex, 0.25, 0), (d, 0, 0),
                               (e, 0.6 * depth, 0), (f, 0, 0)]) * ((t >= a) & (t < f))
        arms += _hermite(t, [(a, 0, 0), (b, -1, 0), (apex, 1, 0), (e, 0, 0)]) * ((t >= a) & (t < e))
        fwd += dist * _smoothstep((t - b) / (e - b))
        heights.append(h)
        s = f + rng.uniform(0.2, 0.8)
    P.ang[:, L_HIP, 0] -= 0.7 * crouch
    P.ang[:, R_HIP, 0] -= 0.7 * crouch
    P.ang[:, L_KNEE, 0] += 1.3 * crouch
    P.ang[:, R_KNEE, 0] += 1.3 * crouch
    P.ang[:, L_ANKLE, 0] -= 0.5 * crouch
    P.ang[:, R_ANKLE, 0] -= 0.5 * crouch
    P.ang[:, PELVIS, 0] += 0.4 * crouch  # lean forward in the crouch
    P.ang[:, L_SHOULDER, 0] -= 0.8 * arms
    P.ang[:, R_SHOULDER, 0] -= 0.8 * arms
    psi = rng.uniform(-np.pi, np.pi)
    P.heading += psi
    P.trans[:, 1] += y
    P.trans[:, 0] += fwd * np.sin(psi)
    P.trans[:, 2] += fwd * np.cos(psi)
    return P, {"heights": heights}


def arm_swings(rng, t):
    """Standing, swinging the arms: forward/back, circles, or raising them."""
    P = Pose(len(t))
    _stand(P, rng, t)
    style = rng.choice(["swing", "circle", "raise"])
    f = rng.uniform(0.4, 1.4)
    amp = min(rng.uniform(0.5, 1.2), 9.0 / (2 * np.pi * f))
    ph = 2 * np.pi * f * t + rng.uniform(0, 2 * np.pi)
    sync = rng.choice([0.0, np.pi])  # arms together or alternating
    env = _smoothstep(t / 0.5)  # ease in from the standing pose
    for j, sgn, off in ((L_SHOULDER, 1, 0.0), (R_SHOULDER, -1, sync)):
        if style == "swing":
            P.ang[:, j, 0] += env * amp * np.sin(ph + off)
        elif style == "circle":
            P.ang[:, j, 0] += env * amp * np.sin(ph + off)
            P.ang[:, j, 2] += sgn * env * 0.5 * amp * (1 - np.cos(ph + off))
        else:  # raise sideways towards (or past) the T-pose and lower again
            P.ang[:, j, 2] += sgn * env * amp * (1 - np.cos(ph + off))
    P.ang[:, L_ELBOW, 1] -= env * 0.4 * (1 + np.sin(ph + 1.0))
    P.ang[:, R_ELBOW, 1] += env * 0.4 * (1 + np.sin(ph + sync + 1.0))
    P.ang[:, SPINE2, 1] += 0.05 * env * np.sin(ph)
    P.heading += rng.uniform(-np.pi, np.pi)
    P.trans[:, 1] += -0.01 + 0.005 * np.sin(2 * ph)
    return P, {"style": str(style), "freq": f, "amplitude": amp}


def idle(rng, t):
    """Idle sway: slow weight shifts, looking around, small arm motion."""
    P = Pose(len(t))
    _stand(P, rng, t)
    f = rng.uniform(0.15, 0.4)
    sway = rng.uniform(0.015, 0.04)
    ph = 2 * np.pi * f * t + rng.uniform(0, 2 * np.pi)
    dx = sway * np.sin(ph)
    # Pelvis shifts sideways; the hips ab/adduct so the feet stay put.
    P.ang[:, L_HIP, 2] += dx / (THIGH + SHIN)
    P.ang[:, R_HIP, 2] += dx / (THIGH + SHIN)
    P.ang[:, PELVIS, 2] += 0.5 * dx / (THIGH + SHIN)
    P.ang[:, SPINE2, 2] -= dx / (THIGH + SHIN)
    P.ang[:, (NECK, HEAD)] += _noise(rng, t, (2, 3), 0.15, 0.3)
    P.ang[:, (L_SHOULDER, R_SHOULDER, L_ELBOW, R_ELBOW)] += _noise(rng, t, (4, 3), 0.1, 0.4)
    psi = rng.uniform(-np.pi, np.pi) + _noise(rng, t, (), 0.1, 0.1)
    P.heading += psi
    P.trans[:, 0] += dx * np.cos(psi)
    P.trans[:, 2] -= dx * np.sin(psi)
    P.trans[:, 1] += -0.005 * np.abs(np.sin(ph))
    return P, {"freq": f, "sway": sway}


def stop(rng, t):
    """Walking or running, then a sudden stop (0.3–0.6 s), then standing."""
    is_run = int(rng.uniform() < 0.4)
    v = rng.uniform(2.2, 3.5) if is_run else rng.uniform(0.9, 1.7)
    t_stop = rng.uniform(0.35, 0.6) * t[-1]
    dur = rng.uniform(0.3, 0.6)
    fade = 1 - _smoothstep((t - t_stop) / dur)
    P = Pose(len(t))
    _stand(P, rng, t)
    psi = rng.uniform(-np.pi, np.pi)
    _gait(P, rng, t, v * fade, psi, is_run, fade=fade)
    # Brace: lean back while braking, then settle.
    brake = np.sin(np.pi * np.clip((t - t_stop) / (dur + 0.3), 0, 1)) ** 2
    P.ang[:, PELVIS, 0] -= 0.12 * brake
    P.ang[:, SPINE2, 0] += 0.08 * brake
    return P, {"speed": v, "run": is_run, "t_stop": t_stop, "duration": dur}


KINDS = {
    "walk": (walk, "walking straight, 0.8–1.7 m/s, random heading"),
    "run": (run, "running straight, 2.2–4.0 m/s, random heading"),
    "turn": (turn, "walking 0.6–1.3 m/s while turning 60°–180° left or right over 0.8–2 s"),
    "jump": (jump, "repeated jumps in place or forward (≤ 0.6 m), pelvis apex 8–25 cm"),
    "arm_swings": (arm_swings, "standing; arms swing forward/back, circle or raise, 0.4–1.4 Hz"),
    "idle": (idle, "standing idle sway: weight shifts 1.5–4 cm at 0.15–0.4 Hz, looking around"),
    "stop": (stop, "walking or running, then a sudden stop within 0.3–0.6 s, then standing"),
}


def joint_speeds(seq, fps=FPS):
    """Angular speed of every joint between consecutive frames [T-1, 24] (rad/s)."""
    R = Rotation.from_rotvec(np.asarray(seq[:, :72], np.float64).reshape(-1, 3)).as_matrix()
    R = R.reshape(len(seq), 24, 3, 3)
    rel = np.einsum("tjki,tjkl->tjil", R[:-1], R[1:])  # R_t^T R_{t+1}
    cos = np.clip((np.trace(rel, axis1=2, axis2=3) - 1) / 2, -1, 1)
    return np.arccos(cos) * fps


def heading(seq):
    """Heading ψ [T] of the root (docs/design.md §2.1), unwrapped."""
    R = Rotation.from_rotvec(np.asarray(seq[:, :3], np.float64)).as_matrix()
    f = R[:, :, 2]
    return np.unwrap(np.arctan2(f[:, 0], f[:, 2]))


def generate(kind, seconds, seed, fps=FPS):
    """A pose sequence [T,75] float32 (T = round(seconds·fps) ≥ 2) and its parameters."""
    if kind not in KINDS:
        raise ValueError(f"unknown motion kind {kind!r} (known: {', '.join(KINDS)})")
    T = max(2, int(round(seconds * fps)))
    rng = np.random.default_rng([seed, list(KINDS).index(kind)])
    t = np.arange(T) / fps
    P, params = KINDS[kind][0](rng, t)
    seq = P.to_array()
    check(seq, fps)
    return seq, params


LEAD_IN_BLEND = 15  # frames from a prelude's last pose into the clip's first (0.5 s at 30 fps)


def lead_in(prelude, clip, blend=LEAD_IN_BLEND):
    """prelude [T1,75], then `blend` frames slerped into clip [T2,75], then the
    clip moved (translation only) to go on from where the prelude stands.
    Returns the [T1+blend+T2,75] float32 sequence and the move [3]: the clip's
    frames of a garment simulated on it, less the move, are in the clip's own
    world frame."""
    move = prelude[-1, 72:] - clip[0, 72:]
    moved = clip.copy()
    moved[:, 72:] += move
    mid = np.empty((blend, 75), np.float32)
    for i in range(blend):
        s = (i + 1) / (blend + 1)
        s = s * s * (3 - 2 * s)
        for j in range(24):
            r = Rotation.from_rotvec(np.stack([prelude[-1, 3 * j:3 * j + 3], moved[0, 3 * j:3 * j + 3]]))
            mid[i, 3 * j:3 * j + 3] = Slerp([0, 1], r)([s]).as_rotvec()[0]
        mid[i, 72:] = prelude[-1, 72:] + s * (moved[0, 72:] - prelude[-1, 72:])
    return np.concatenate([prelude, mid, moved]).astype(np.float32), move


def check(seq, fps=FPS):
    """Raises ValueError unless seq is a finite [T,75] sequence within the speed bounds."""
    validate(seq)
    if len(seq) > 1:
        w = joint_speeds(seq, fps).max()
        v = np.linalg.norm(np.diff(seq[:, [72, 74]], axis=0), axis=1).max() * fps
        if w > MAX_JOINT_SPEED or v > MAX_ROOT_SPEED:
            raise ValueError(f"motion too fast: joint {w:.2f} rad/s (max {MAX_JOINT_SPEED}), "
                             f"root {v:.2f} m/s (max {MAX_ROOT_SPEED})")


def validate(seq):
    """Raises ValueError unless seq is a finite float [T,75] array with T ≥ 1."""
    if not isinstance(seq, np.ndarray) or seq.ndim != 2 or seq.shape[1] != 75 or seq.shape[0] < 1:
        raise ValueError(f"pose sequence must be [T,75], got {getattr(seq, 'shape', type(seq))}")
    if seq.dtype not in (np.float32, np.float64):
        raise ValueError(f"pose sequence must be float32 (or float64), got {seq.dtype}")
    if not np.all(np.isfinite(seq)):
        raise ValueError("pose sequence has NaN or Inf values")


def resample(seq, src_fps, dst_fps=FPS):
    """Resample a [T,75] sequence: slerp per joint, linear translation.
    Output frames cover [0, (T−1)/src_fps] at dst_fps."""
    seq = np.asarray(seq, np.float64)
    T = len(seq)
    if T == 1 or src_fps == dst_fps:
        return seq.astype(np.float32)
    ts = np.arange(T) / src_fps
    td = np.arange(int(np.floor(ts[-1] * dst_fps + 1e-9)) + 1) / dst_fps
    out = np.empty((len(td), 75))
    for j in range(24):
        rots = Rotation.from_rotvec(seq[:, 3 * j:3 * j + 3])
        out[:, 3 * j:3 * j + 3] = Slerp(ts, rots)(td).as_rotvec()
    for k in range(3):
        out[:, 72 + k] = np.interp(td, ts, seq[:, 72 + k])
    return out.astype(np.float32)


def load(path, src_fps=None, dst_fps=FPS):
    """Import a `drape infer` pose file (.npy [T,75]); float64 is accepted and
    converted; resampled to dst_fps when src_fps is given and differs."""
    try:
        seq = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as e:
        raise ValueError(f"{path}: not a readable .npy array ({e})") from None
    try:
        validate(seq)
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from None
    if src_fps is not None:
        if not (np.isfinite(src_fps) and src_fps > 0):
            raise ValueError(f"source fps must be > 0, got {src_fps}")
        return resample(seq, src_fps, dst_fps)
    return seq.astype(np.float32)


def _fmt(v):
    """A parameter for the log line: numbers (or lists of them) to 3 decimals."""
    if isinstance(v, str):
        return v
    return str(np.round(np.asarray(v, float), 3).tolist())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--list", action="store_true", help="list the motion kinds")
    ap.add_argument("--kind", choices=sorted(KINDS))
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--fps", type=float, default=FPS, help="output frame rate")
    ap.add_argument("--import", dest="src", metavar="IN.npy", help="validate (and resample) a [T,75] file")
    ap.add_argument("--src-fps", type=float, help="frame rate of --import's file (default: --fps)")
    ap.add_argument("--out")
    a = ap.parse_args(argv)
    if a.list:
        for k, (_, doc) in KINDS.items():
            print(f"{k:11s} {doc}")
        return 0
    if not a.out or (a.kind is None) == (a.src is None):
        ap.error("give --out and exactly one of --kind or --import (or --list)")
    try:
        if a.src:
            seq = load(a.src, a.src_fps, a.fps)
            info = f"imported {a.src}"
        else:
            seq, params = generate(a.kind, a.seconds, a.seed, a.fps)
            info = f"{a.kind} seed {a.seed} " + " ".join(f"{k}={_fmt(v)}" for k, v in params.items())
    except ValueError as e:
        print(f"motions: {e}", file=sys.stderr)
        return 1
    np.save(a.out, seq)
    print(f"motions: {a.out}: {len(seq)} frames at {a.fps:g} fps, {info}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
