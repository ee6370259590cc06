#!/usr/bin/python3
"""Clients of a router (nginx with deploy/nginx/drape.conf) in front of
several draped replicas; tests/test_routing.c runs them.

    routing_client.py BASE map N OUT.json [REPEAT]
        GET BASE/v1/model?identity=user-NNNN for N keys, REPEAT times each
        (interleaved); every answer for one key must name the same replica
        (X-Drape-Instance). Writes {key: instance} to OUT.json.
    routing_client.py BASE stream KEY [FRAMES_AFTER]
        streams one avatar on BASE/v1/stream?identity=KEY, printing
        "streaming INSTANCE" once frames flow; when the replica goes away
        (close 1001, the test stops it) reconnects with the same key, re-opens
        the avatar from its garment and betas, checks that it is the same
        identity, and resumes the sequence until FRAMES_AFTER more frames.
    routing_client.py BASE streams N ROUND
        N short streams, one per key "body-I": open (garment + betas of that
        body), 3 poses, close; for the cache hit-rate measurement.

Each prints what it saw as one JSON line; exits 0, or 1 with FAIL: why."""
import asyncio
import http.client
import json
import math
import sys
import time
import urllib.parse

import websockets

BASE = sys.argv[1].rstrip("/")
U = urllib.parse.urlparse(BASE)
WS = "ws://%s/v1/stream" % U.netloc
GARMENT = "skirt"


def fail(msg):
    print("FAIL:", msg, flush=True)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


def pose(t):
    p = [0.0] * 72
    p[3 * 16 + 2] = 0.6 * math.sin(0.2 * t)
    p[3 * 1 + 0] = 0.4 * math.sin(0.15 * t)
    return p


def betas_of(i):
    """distinct bodies, well inside any beta_range"""
    return [round(-0.8 + 0.05 * (i % 33), 3), round(0.6 - 0.1 * (i // 33), 3)]


def instance_of(headers):
    v = headers.get("X-Drape-Instance")
    check(v, "no X-Drape-Instance header")
    return v


def cmd_map(n, out, repeat="2"):
    n, repeat = int(n), int(repeat)
    conn = http.client.HTTPConnection(U.hostname, U.port, timeout=20)
    seen = {}
    for r in range(repeat):
        for i in range(n):
            key = "user-%04d" % i
            conn.request("GET", "/v1/model?identity=" + urllib.parse.quote(key))
            resp = conn.getresponse()
            resp.read()
            check(resp.status == 200, f"{key}: HTTP {resp.status}")
            inst = instance_of(resp.headers)
            if r == 0:
                seen[key] = inst
            else:
                check(seen[key] == inst, f"{key} went to {inst}, earlier to {seen[key]}")
    conn.close()
    with open(out, "w") as f:
        json.dump(seen, f)
    counts = {}
    for v in seen.values():
        counts[v] = counts.get(v, 0) + 1
    print(json.dumps({"keys": n, "repeat": repeat, "per_replica": dict(sorted(counts.items()))}), flush=True)


async def open_avatar(ws, body):
    await ws.send(json.dumps({"op": "open", "avatar": 1, "garment": GARMENT, "betas": betas_of(body)}))
    m = json.loads(await asyncio.wait_for(ws.recv(), 30))
    check(m["op"] == "opened", f"open: {m}")
    return m["identity"]


async def next_frame(ws, seq):
    while True:
        m = json.loads(await asyncio.wait_for(ws.recv(), 30))
        check(m["op"] == "frame", f"expected a frame: {m}")
        if m["seq"] == seq:
            return m


async def cmd_stream(key, frames_after="30"):
    frames_after = int(frames_after)
    url = WS + "?identity=" + urllib.parse.quote(key)
    ws = await websockets.connect(url, max_size=64 << 20, ping_interval=None)
    first = instance_of(ws.response_headers)
    ident = await open_avatar(ws, 7)
    seq = 0
    print("streaming", first, flush=True)
    closed = None
    try:
        while True:  # until the test stops this replica
            await ws.send(json.dumps({"op": "pose", "avatar": 1, "seq": seq, "pose": pose(seq)}))
            await next_frame(ws, seq)
            seq += 1
            await asyncio.sleep(0.01)
    except websockets.exceptions.ConnectionClosed as e:
        closed = e.code
    before = seq
    check(closed == 1001, f"first replica closed with {closed}, expected 1001 (drain)")
    # reconnect with the same key: the router sends it to the next replica
    t0 = time.time()
    while True:
        try:
            ws = await websockets.connect(url, max_size=64 << 20, ping_interval=None)
            break
        except (OSError, websockets.exceptions.InvalidStatusCode) as e:
            check(time.time() - t0 < 15, f"could not reconnect: {e}")
            await asyncio.sleep(0.2)
    second = instance_of(ws.response_headers)
    check(second != first, f"reconnected to the replica that was stopped ({first})")
    ident2 = await open_avatar(ws, 7)
    check(ident2 == ident, f"identity changed across replicas: {ident} vs {ident2}")
    for _ in range(frames_after):  # the sequence goes on where it stopped
        await ws.send(json.dumps({"op": "pose", "avatar": 1, "seq": seq, "pose": pose(seq)}))
        await next_frame(ws, seq)
        seq += 1
    await ws.close()
    print(json.dumps({"before": first, "after": second, "frames_before": before, "frames_after": seq - before,
                      "reconnect_s": round(time.time() - t0, 3), "identity": ident}), flush=True)


async def one_stream(i, sem):
    async with sem:
        url = WS + "?identity=body-%d" % i
        ws = await websockets.connect(url, max_size=64 << 20, ping_interval=None)
        await open_avatar(ws, i)
        for s in range(3):
            await ws.send(json.dumps({"op": "pose", "avatar": 1, "seq": s, "pose": pose(s)}))
            await next_frame(ws, s)
        await ws.close()
        return instance_of(ws.response_headers)


async def cmd_streams(n, rnd):
    sem = asyncio.Semaphore(4)
    where = await asyncio.gather(*(one_stream(i, sem) for i in range(int(n))))
    counts = {}
    for v in where:
        counts[v] = counts.get(v, 0) + 1
    print(json.dumps({"round": int(rnd), "streams": int(n), "per_replica": dict(sorted(counts.items()))}), flush=True)


def main():
    cmd, args = sys.argv[2], sys.argv[3:]
    if cmd == "map":
        cmd_map(*args)
    elif cmd == "stream":
        asyncio.run(cmd_stream(*args))
    elif cmd == "streams":
        asyncio.run(cmd_streams(*args))
    else:
        fail("unknown command " + cmd)


if __name__ == "__main__":
    main()
