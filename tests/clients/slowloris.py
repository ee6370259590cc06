#!/usr/bin/python3
"""Slowloris against a running draped: while N connections trickle header
bytes, a new client must still get /healthz and a WebSocket stream.

    slowloris.py HOST:PORT N SRC_ADDR BUDGET_S [HOLD_S]

N connections from SRC_ADDR (a loopback address: 127.0.0.1 is the probing
client's own, 127.0.0.2 another one) send a request line and then one header
byte per second each, never ending the headers; one the server closes is
opened again on the next second, as a persistent attacker would. Meanwhile
a client from 127.0.0.1 asks for /healthz, then opens a stream, opens an
avatar and waits for a frame: each must take at most BUDGET_S seconds. The
stream then waits HOLD_S seconds (0: none) and must still serve a frame (a
stream has no header deadline); the slow connections trickle on until then.
Prints the times as JSON and exits 0, or prints why it failed and exits 1."""
import asyncio
import http.client
import json
import os
import select
import socket
import sys
import threading
import time

import websockets

HOST, PORT = sys.argv[1].split(":")
PORT = int(PORT)
N, SRC, BUDGET = int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
HOLD = float(sys.argv[5]) if len(sys.argv) > 5 else 0.0
GARMENT = os.environ.get("DRAPE_TEST_GARMENT", "skirt")


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


class Slow:
    """The trickling connections, on a thread of their own."""

    def __init__(self):
        self.socks, self.opened = [None] * N, [0.0] * N
        self.cut_after = []  # seconds from open to the server's close, per close
        self.stop = False
        self.ready = threading.Event()
        self.err = None

    def open_one(self, i):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.bind((SRC, 0))
        s.settimeout(5)
        s.connect((HOST, PORT))  # the kernel completes it even while draped accepts no more
        s.setblocking(False)
        s.send(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        self.socks[i], self.opened[i] = s, time.monotonic()

    def closed(self, i):
        self.cut_after.append(time.monotonic() - self.opened[i])
        self.socks[i].close()
        self.socks[i] = None

    def run(self):
        try:
            for i in range(N):
                self.open_one(i)
            self.ready.set()
            while not self.stop:
                time.sleep(1)
                p, at = select.poll(), {}
                for i, s in enumerate(self.socks):
                    if s:
                        p.register(s, select.POLLIN)
                        at[s.fileno()] = i
                gone = {at[fd] for fd, ev in p.poll(0)}  # readable: the server closed it (or answered: the same)
                for i, s in enumerate(self.socks):
                    if s is None:
                        self.open_one(i)
                        continue
                    if i in gone:
                        self.closed(i)
                        continue
                    try:
                        s.send(b"a")
                    except OSError:
                        self.closed(i)
        except Exception as e:  # noqa: BLE001 - reported by the main thread
            self.err = repr(e)
            self.ready.set()


def time_left(t0, what):
    """What is left of BUDGET since t0; fails once it is spent."""
    left = BUDGET - (time.monotonic() - t0)
    if left <= 0:
        fail(f"{what} not served within {BUDGET} s")
    return left


def healthz():
    """GET /healthz from 127.0.0.1, retried while the connection is refused or cut."""
    t0 = time.monotonic()
    while True:
        left = time_left(t0, "/healthz")
        try:
            c = http.client.HTTPConnection(HOST, PORT, timeout=left)
            c.request("GET", "/healthz")
            r = c.getresponse()
            body = r.read()
            c.close()
            if r.status != 200:
                fail(f"/healthz answered {r.status} {body!r}")
            return time.monotonic() - t0
        except (ConnectionError, http.client.RemoteDisconnected, socket.timeout):
            time.sleep(0.1)


async def stream():
    """A new stream from 127.0.0.1: opened, one avatar, one frame; another
    one HOLD seconds later."""
    t0 = time.monotonic()
    while True:
        left = time_left(t0, "a new stream")
        try:
            ws = await websockets.connect(f"ws://{HOST}:{PORT}/v1/stream", open_timeout=left, ping_interval=None,
                                          max_size=64 << 20)
            break
        except (OSError, asyncio.TimeoutError, websockets.exceptions.InvalidHandshake) as e:
            if isinstance(e, asyncio.TimeoutError):
                fail(f"stream handshake not answered within {BUDGET} s")
            await asyncio.sleep(0.1)
    await ws.send(json.dumps({"op": "open", "avatar": 1, "garment": GARMENT, "betas": [0.0]}))
    await ws.send(json.dumps({"op": "pose", "avatar": 1, "seq": 0, "pose": [0.0] * 72, "trans": [0, 0, 0]}))
    end = t0 + BUDGET
    while True:
        m = json.loads(await asyncio.wait_for(ws.recv(), max(0.1, end - time.monotonic())))
        if m["op"] == "error":
            fail(f"stream error {m}")
        if m["op"] == "frame":
            break
    first = time.monotonic() - t0
    await asyncio.sleep(HOLD)
    await ws.send(json.dumps({"op": "pose", "avatar": 1, "seq": 1, "pose": [0.0] * 72, "trans": [0, 0, 0]}))
    try:
        while (m := json.loads(await asyncio.wait_for(ws.recv(), 10)))["op"] != "frame":
            pass
    except websockets.exceptions.ConnectionClosed as e:
        fail(f"the stream was closed while it waited ({e})")
    await ws.close()
    return first


def main():
    slow = Slow()
    th = threading.Thread(target=slow.run, daemon=True)
    th.start()
    slow.ready.wait(60)
    if slow.err:
        fail(f"could not open the slow connections from {SRC}: {slow.err}")
    time.sleep(0.5)  # draped has taken what it takes
    h = healthz()
    try:
        s = asyncio.run(asyncio.wait_for(stream(), BUDGET + HOLD + 10))
    except asyncio.TimeoutError:
        fail(f"no frame on a new stream within {BUDGET} s")
    slow.stop = True
    th.join(5)
    if slow.err:
        fail(f"the slow connections failed: {slow.err}")
    cuts = slow.cut_after
    print(json.dumps({"slow": N, "from": SRC, "healthz_s": round(h, 3), "stream_s": round(s, 3), "cut": len(cuts),
                      "cut_after_max_s": round(max(cuts), 3) if cuts else None}))


if __name__ == "__main__":
    main()
