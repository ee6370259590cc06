#!/usr/bin/python3
"""Stream scenarios of the physics mode against a running draped (the
server's defaults for the simulation: `drape sim garment --realtime`), on
ws_client.py's helpers (connection, frame decoding).

    physics_client.py URL SCENARIO [args...]

Each scenario checks what it observes and exits 0, or prints why it failed
and exits 1. tests/test_physics.c runs them."""
import asyncio
import json
import math
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ws_client as w  # noqa: E402  (reads the URL from argv[1], as this script does)

check, connect, decode = w.check, w.connect, w.decode
GARMENT = os.environ.get("DRAPE_TEST_GARMENT", "skirt")
DRAPE = os.environ.get("DRAPE_BIN", "build/drape")


def walk(t, k=0.0):
    """A gentle walk on the spot: pose [72], trans [3] (no cut: slow root, slow joints)."""
    p = [0.0] * 72
    p[3 * 1 + 0] = 0.35 * math.sin(0.2 * t + k)    # left hip
    p[3 * 2 + 0] = -0.35 * math.sin(0.2 * t + k)   # right hip
    p[3 * 4 + 0] = 0.3 * (1 - math.cos(0.2 * t + k))  # left knee
    p[3 * 16 + 2] = -0.5 - 0.2 * math.sin(0.2 * t)  # left shoulder down
    p[3 * 17 + 2] = 0.5 + 0.2 * math.sin(0.2 * t)   # right shoulder down
    return p, [0.0, 0.0, 0.02 * t]


async def open_avatar(c, avatar, mode, betas=None, fmt="f32", garment=None):
    msg = {"op": "open", "avatar": avatar, "garment": garment or GARMENT, "format": fmt, "mode": mode}
    if betas is not None:
        msg["betas"] = betas
    await c.send(msg)
    m = await c.until(lambda m: m["op"] in ("opened", "error") and m.get("avatar") == avatar, timeout=60)
    check(m["op"] == "opened", f"open {avatar} ({mode}): {m}")
    check(m["mode"] == mode, f"opened as {m['mode']}, asked {mode}")
    return m


async def frame_of(c, avatar, seq, p, tr, reset=False, timeout=60):
    msg = {"op": "pose", "avatar": avatar, "seq": seq, "pose": p, "trans": tr}
    if reset:
        msg["reset"] = True
    await c.send(msg)
    m = await c.until(lambda m: m["op"] == "frame" and m["avatar"] == avatar, timeout)
    check(m["seq"] == seq, f"{avatar}: frame {m['seq']} for pose {seq}")
    x = decode(m)
    check(np.isfinite(x).all(), f"{avatar}: a frame that is not finite")
    return x


async def rest(poses="20"):
    """Two physics avatars of one identity (one rig, shared) and a plain
    skinning one, at rest: frames flow, stay near skinning, and the two
    physics avatars, fed the same poses, give the same frames to the bit."""
    T = int(poses)
    c = await connect(True)
    a = await open_avatar(c, "p1", "physics", [0.5, -0.5])
    b = await open_avatar(c, "p2", "physics", [0.5, -0.5])
    await open_avatar(c, "lbs", "lbs", [0.5, -0.5])
    check(a["identity"] == b["identity"], "one identity")
    zero = [0.0] * 72
    worst = mean = 0.0
    for t in range(T):
        xs = {}
        for av in ("p1", "p2", "lbs"):
            xs[av] = await frame_of(c, av, t, zero, [0.0, 0.0, 0.0])
        check(np.array_equal(xs["p1"], xs["p2"]), f"pose {t}: two avatars of one identity differ")
        d = np.linalg.norm(xs["p1"].astype(np.float64) - xs["lbs"], axis=1)
        worst, mean = max(worst, float(d.max())), max(mean, float(d.mean()))
    # at rest the cloth hangs near its skinned place: it settles, it does not fly
    check(mean < 0.03 and worst < 0.15, f"at rest the cloth is up to {mean:.4f} m (a frame's mean), {worst:.4f} m (max) off skinning")
    for av in ("p1", "p2", "lbs"):
        await c.send({"op": "close", "avatar": av})
        await c.until(lambda m: m["op"] == "closed" and m["avatar"] == av)
    await c.ws.close()
    print(json.dumps({"frames": T, "mean_off_lbs_m": round(mean, 5), "max_off_lbs_m": round(worst, 5)}))


async def matches_tool(model, betas="0.5,-1", poses="24", substeps="0"):
    """A physics avatar streamed paced over a walk: its frames are
    `drape sim garment --realtime` on the same poses, byte for byte (with
    SUBSTEPS, `--substeps` too: draped's --physics-substeps for GARMENT)."""
    T, B = int(poses), [float(x) for x in betas.split(",")]
    seq = np.array([walk(t)[0] + walk(t)[1] for t in range(T)], np.float32)
    c = await connect(True)
    await open_avatar(c, "a", "physics", B)
    got = []
    for t in range(T):
        got.append((await frame_of(c, "a", t, seq[t, :72].tolist(), seq[t, 72:].tolist())).copy())
    await c.ws.close()
    with tempfile.TemporaryDirectory() as tmp:
        pin, pout = os.path.join(tmp, "p.npy"), os.path.join(tmp, "o.npy")
        np.save(pin, seq)
        r = subprocess.run([DRAPE, "sim", "garment", "--realtime", "--model", model, "--garment", GARMENT, "--betas",
                            betas, "--poses", pin, "--out", pout, "--substeps", substeps], capture_output=True, text=True)
        check(r.returncode == 0, f"drape sim garment --realtime failed: {r.stderr}")
        want = np.load(pout)
    got = np.stack(got)
    check(want.dtype == np.float32 and want.shape == got.shape, f"shapes {want.shape} {got.shape}")
    same = [t for t in range(T) if want[t].tobytes() == got[t].tobytes()]
    check(len(same) == T, f"frames equal to the tool's: {same} of {T}; worst {np.abs(want - got).max():.3g} m")
    print(json.dumps({"frames": T, "bit_identical": True, "tool": r.stdout.strip()}))


async def flood(n="30"):
    """Poses sent faster than the cloth runs: the newest wins, every pose is
    a frame or counted in `dropped`, frames stay in order."""
    N = int(n)
    c = await connect(True)
    await open_avatar(c, "f", "physics")
    for t in range(N):
        p, tr = walk(t)
        await c.send({"op": "pose", "avatar": "f", "seq": t, "pose": p, "trans": tr})
    seqs, dropped = [], 0
    while True:
        m = await c.until(lambda m: m["op"] == "frame", timeout=60)
        seqs.append(m["seq"])
        dropped = m["dropped"]
        if m["seq"] == N - 1:
            break
    await c.ws.close()
    check(seqs == sorted(seqs), f"frames out of order: {seqs}")
    check(len(seqs) + dropped == N, f"{len(seqs)} frames + {dropped} dropped != {N} poses")
    check(dropped > 0, "nothing was skipped: the poses came slower than the cloth ran")
    print(json.dumps({"sent": N, "frames": len(seqs), "skipped": dropped}))


async def restart(how="reset", before="8", after="5"):
    """An avatar walks, then starts again 2 m away (how: `reset` says so with
    reset: true; `detect` leaves it to the server's cut detection): from that
    pose on its frames are those of a physics avatar opened there, exactly
    (the cloth settled again from skinning)."""
    B, A = int(before), int(after)
    c = await connect(True)
    await open_avatar(c, "a", "physics")
    await open_avatar(c, "b", "physics")
    for t in range(B):
        await frame_of(c, "a", t, *walk(t))
    for k in range(A):
        p, tr = walk(B + k)
        tr = [tr[0] + 2.0, tr[1], tr[2]]
        xa = await frame_of(c, "a", B + k, p, tr, reset=(how == "reset" and k == 0))
        xb = await frame_of(c, "b", k, p, tr)
        check(np.array_equal(xa, xb), f"{how}: frame {k} after the cut differs from a fresh avatar's by "
                                      f"{np.abs(xa - xb).max():.3g} m")
    await c.ws.close()
    print(json.dumps({"how": how, "frames_after": A, "identical": True}))


async def beyond_builtin_limits(trans="20000"):
    """The server runs with --pose-max-trans above the built-in 10000 m: a
    neural avatar takes a root that far, a physics avatar (whose cloth
    engine keeps the built-in limits) gets bad_field naming the limit for
    that pose, not an internal error from its worker, and goes on."""
    far = float(trans)
    c = await connect(False)
    await open_avatar(c, "p", "physics")
    await open_avatar(c, "n", "neural")
    await frame_of(c, "p", 0, *walk(0))
    p, tr = walk(1)
    await frame_of(c, "n", 1, p, [far, tr[1], tr[2]])
    await c.send({"op": "pose", "avatar": "p", "seq": 1, "pose": p, "trans": [far, tr[1], tr[2]]})
    m = await c.until(lambda m: m.get("avatar") == "p", 60)
    check(m["op"] == "error" and m["code"] == "bad_field" and m.get("seq") == 1 and "10000" in m["message"],
          f"a physics pose past the built-in limit: {m}")
    await frame_of(c, "p", 2, *walk(2))
    await c.ws.close()
    print(json.dumps({"refused": m["message"]}))


async def diverge(before="4", after="4"):
    """With cut detection off (the server runs --cut-speed 0), a physics
    avatar teleported 5 km is not a cut: its cloth is flung past the
    divergence bound, so the server restarts it from skinning and says so
    (error physics_reset, no seq: its frame follows). A neural avatar on the
    same connection gets every frame throughout, and the physics avatar goes
    on streaming."""
    B, A = int(before), int(after)
    c = await connect(False)
    await open_avatar(c, "p", "physics")
    await open_avatar(c, "n", "neural")
    resets, t = [], 0
    for k in range(B + A):
        p, tr = walk(k)
        if k >= B:
            tr = [tr[0] + 5000.0, tr[1], tr[2]]
        for av in ("p", "n"):
            await c.send({"op": "pose", "avatar": av, "seq": k, "pose": p, "trans": tr})
        got = set()
        while len(got) < 2:
            m = await c.recv(60)
            if m["op"] == "error":
                check(m["code"] == "physics_reset" and m.get("avatar") == "p" and "seq" not in m,
                      f"unexpected error {m}")
                resets.append(k)
                continue
            check(m["op"] == "frame" and m["seq"] == k, f"expected frames for pose {k}, got {m}")
            check(np.isfinite(decode(m)).all(), f"{m['avatar']}: frame not finite")
            got.add(m["avatar"])
        t += 1
    await c.ws.close()
    check(resets, "the flung cloth was not reset")
    check(all(r >= B for r in resets), f"reset before the teleport: {resets}")
    print(json.dumps({"frames": t, "resets_at": resets}))


async def busy_neighbour(physics="6", seconds="4"):
    """Many physics avatars flooding one physics worker (the server runs
    --physics-threads 1) and one neural avatar on the same connection at
    30 fps: the neural frames keep coming while the physics avatars are busy
    (and skip poses). Each physics avatar gets three poses back to back a
    tick, so that the worker is behind however slowly this client runs (on a
    loaded machine a client waiting for its neural frame once gave the
    worker time to keep up with one pose a tick)."""
    P, S = int(physics), float(seconds)
    c = await connect(True)
    names = [f"p{i}" for i in range(P)]
    for av in names:
        await open_avatar(c, av, "physics", [0.1 * names.index(av)])
    await open_avatar(c, "n", "neural")
    neural_times, physics_frames, skipped = [], 0, 0
    stop = time.time() + S
    t = 0
    while time.time() < stop:
        p, tr = walk(t)
        for av in names:  # three poses a tick: the third replaces a second still waiting
            for k in range(3):
                await c.send({"op": "pose", "avatar": av, "seq": 3 * t + k, "pose": p, "trans": tr})
        await c.send({"op": "pose", "avatar": "n", "seq": t, "pose": p, "trans": tr})
        due = time.time() + 1 / 30
        got_neural = False
        while time.time() < due or not got_neural:
            try:
                m = await c.recv(max(0.005, due - time.time()) if got_neural else 30)
            except asyncio.TimeoutError:
                check(got_neural, f"no neural frame for pose {t} within 30 s")
                break
            check(m["op"] == "frame", f"unexpected {m}")
            if m["avatar"] == "n":
                check(m["seq"] == t, f"neural frame {m['seq']} for pose {t}")
                neural_times.append(time.time())
                got_neural = True
            else:
                physics_frames += 1
                skipped = max(skipped, m["dropped"])
        t += 1
    # under ASan a physics frame can take seconds (one read in the 4 s of a
    # quiet run), so the first may come after the window: wait for it, sending
    # nothing more; it carries the poses skipped meanwhile
    if physics_frames == 0:
        try:
            m = await c.recv(60)
        except asyncio.TimeoutError:
            check(False, "no physics frame within 60 s of the window's end")
        check(m["op"] == "frame" and m["avatar"] != "n", f"unexpected {m} after the window")
        physics_frames, skipped = 1, m["dropped"]
    await c.ws.close()
    gaps = np.diff(neural_times)
    check(len(neural_times) == t, f"{len(neural_times)} neural frames for {t} poses")
    # a stall, not a speed: a loaded CI machine once stopped a draped for 3.6 s
    check(gaps.max() < 10.0, f"the neural avatar waited {gaps.max():.3f} s for a frame")
    check(skipped > 0, f"the physics avatars kept up: the test needs them busy ({t} ticks, "
                       f"{physics_frames} physics frames read)")
    print(json.dumps({"poses": t, "neural_frames": len(neural_times), "neural_max_gap_s": round(float(gaps.max()), 3),
                      "neural_p50_gap_s": round(float(np.median(gaps)), 4), "physics_frames": physics_frames,
                      "physics_skipped_max": skipped}))


async def evict(rounds="3"):
    """A small cache (the test sizes --cache-bytes for about two identities
    with their rigs): a physics avatar keeps streaming while other
    identities come and go (each new one evicts an unused one, never the
    streaming avatar's); a physics avatar whose rig finds no room is refused
    with `limit`, and the streaming avatar goes on."""
    R = int(rounds)
    c = await connect(True)
    await open_avatar(c, "keep", "physics", [1.0])
    t = 0
    refused = 0
    for r in range(R):
        for k in range(3):  # other identities through neural avatars: module B only
            av = f"n{r}-{k}"
            await open_avatar(c, av, "neural", [-1.0 + 0.3 * k + 0.05 * r])
            await frame_of(c, av, 0, *walk(0))
            await c.send({"op": "close", "avatar": av})
            await c.until(lambda m: m["op"] == "closed" and m["avatar"] == av)
            await frame_of(c, "keep", t, *walk(t))
            t += 1
        # two more physics identities at once: at most one fits beside "keep"
        for k in range(2):
            av = f"q{r}-{k}"
            await c.send({"op": "open", "avatar": av, "garment": GARMENT, "mode": "physics", "betas": [2.0 - k - 0.1 * r]})
            m = await c.until(lambda m: m["op"] in ("opened", "error") and m.get("avatar") == av, timeout=60)
            if m["op"] == "error":
                check(m["code"] == "limit", f"{av}: {m}")
                refused += 1
            else:
                await frame_of(c, av, 0, *walk(0))
        await frame_of(c, "keep", t, *walk(t))
        t += 1
        for k in range(2):
            av = f"q{r}-{k}"
            await c.send({"op": "close", "avatar": av})
            await c.until(lambda m: m["op"] in ("closed", "error") and m.get("avatar") == av)
    await c.ws.close()
    check(refused > 0, "no physics open was refused: the cache was not small enough for the test")
    print(json.dumps({"keep_frames": t, "refused": refused}))


if __name__ == "__main__":
    asyncio.run(globals()[sys.argv[2]](*sys.argv[3:]))
