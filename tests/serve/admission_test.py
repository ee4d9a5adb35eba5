#!/usr/bin/python3
"""Admission and connection handling of one `perceive serve bevfusion` (no nginx needed).

  admission_test.py PERCEIVE_BIN SOURCE_DIR

- fairness: a greedy client (X-Perceive-Client: greedy, 8 connections firing without pause)
  gets 429 + Retry-After above --client-queue, and a polite client (one request at a time,
  honouring Retry-After) is never refused and waits for at most one greedy run per request
  (workers rotate between clients): counted from the order of answers, not from clock times;
- slow clients: PV_SLOW_CLIENTS (100; 300 measured once, see BENCHMARKS.md) connections that
  send headers and trickle a body byte a second do not keep /health and a /predict from being
  answered; a trickled body is cut off after --body-timeout-s (the connection closes);
- X-Perceive-Stream is the stream id when the query has none (meta.stream.id, started);
- drain: after SIGTERM a new connection is refused, /health on an open connection answers 503
  "draining", a /predict on an open connection is still answered 200 with Connection: close,
  and the process exits 0.
"""
import http.client
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import time

failures = []


def check(ok, msg):
    print(("ok  " if ok else "FAIL ") + msg, flush=True)
    if not ok:
        failures.append(msg)


def npy(n, seed):
    hdr = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, 4), }" % n
    hdr += " " * (63 - (len(hdr) + 10) % 64) + "\n"
    vals = [((i * 7919 + seed * 104729) % 4000) / 100.0 - 20.0 for i in range(4 * n)]
    for i in range(n):
        vals[4 * i + 2] = 0.0
        vals[4 * i + 3] = 0.5
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode() + struct.pack("<%df" % (4 * n), *vals)


BODY = npy(400, 1)
HDRS = {"Content-Type": "application/x-npy"}


def request(port, method, path, body=None, headers=None, timeout=300, conn=None):
    try:
        c = conn or http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        c.request(method, path, body=body, headers=headers or {})
        r = c.getresponse()
        out = (r.status, dict(r.getheaders()), r.read())
        if not conn:
            c.close()
        return out
    except (OSError, http.client.HTTPException) as e:
        return (-1, {}, str(e).encode())


def start(perceive, *args):
    p = subprocess.Popen([perceive, "serve", "bevfusion", "--port", "0", "--quiet", "--threads", "1"] + list(args),
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = p.stdout.readline()
    port = int(line.rsplit(":", 1)[1]) if "listening" in line else 0
    return p, port


def test_fairness(port, npolite):
    events, lock, stop = [], threading.Lock(), threading.Event()
    refused = {"greedy": 0, "polite": 0}
    retry_after = []

    def greedy():
        while not stop.is_set():
            code, hd, _ = request(port, "POST", "/predict?timing=0", BODY, dict(HDRS, **{"X-Perceive-Client": "greedy"}))
            with lock:
                if code == 200:
                    events.append("g")
                elif code == 429:
                    refused["greedy"] += 1
                    retry_after.append(hd.get("Retry-After"))
            if code != 200:
                time.sleep(0.1)   # greedy: ignores Retry-After

    ts = [threading.Thread(target=greedy) for _ in range(8)]
    for t in ts:
        t.start()
    time.sleep(1.0)
    waits = []
    for i in range(npolite):
        with lock:
            events.append("P>")   # polite sends
        while True:
            code, hd, _ = request(port, "POST", "/predict?timing=0", BODY, dict(HDRS, **{"X-Perceive-Client": "polite"}))
            if code in (429, 503):
                refused["polite"] += 1
                time.sleep(float(hd.get("Retry-After", "1")))
                continue
            break
        with lock:
            events.append("P" if code == 200 else "P!%d" % code)
            # greedy answers between the polite request's sending and its answer
            start = len(events) - 1 - events[::-1].index("P>")
            waits.append(events[start:].count("g"))
    stop.set()
    for t in ts:
        t.join()
    print("fairness: order of answers %s" % "".join(e[0] if e != "P>" else "|" for e in events))
    check(all(e in ("g", "P", "P>") for e in events), "every polite and greedy answer is 200 or a refusal")
    check(refused["polite"] == 0, "the polite client is never refused (%d)" % refused["polite"])
    check(refused["greedy"] > 0 and all(r == "1" for r in retry_after),
          "the greedy client gets 429 with Retry-After above --client-queue (%d)" % refused["greedy"])
    # one worker: a waiting polite request takes the next free worker (its client runs none),
    # so it waits for at most the greedy run in progress (+1 for the order the answers are logged)
    check(max(waits) <= 2, "polite requests waited for at most 2 greedy answers each: %s" % waits)


def test_slow(port, n, timeout_s):
    a = time.time()
    request(port, "POST", "/predict?timing=0", BODY, HDRS, timeout=120)
    t_normal = time.time() - a
    socks, stop = [], threading.Event()
    for _ in range(n):
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
            s.sendall(b"POST /predict HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-npy\r\nContent-Length: 100000\r\n\r\n")
            socks.append(s)
        except OSError:
            break
    check(len(socks) == n, "%d slow connections opened" % len(socks))
    closed = {}

    def trickle():
        while not stop.is_set():
            for i, s in enumerate(socks):
                if i in closed:
                    continue
                try:
                    s.send(b"x")
                except OSError:
                    closed[i] = time.time()
            stop.wait(1.0)

    t0 = time.time()
    t = threading.Thread(target=trickle)
    t.start()
    time.sleep(1.5)
    a = time.time()
    hc = request(port, "GET", "/health", timeout=30)[0]
    th = time.time() - a
    a = time.time()
    pc = request(port, "POST", "/predict?timing=0", BODY, HDRS, timeout=120)[0]
    tp = time.time() - a
    print("slow clients: %d trickling: /health %d in %.3f s, /predict %d in %.2f s (%.2f s before they came)" % (len(socks), hc, th, pc, tp, t_normal))
    check(hc == 200 and pc == 200, "/health and /predict answered beside %d slow clients" % len(socks))
    # the body deadline: every trickler is cut off a little after --body-timeout-s
    while len(closed) < len(socks) and time.time() - t0 < timeout_s + 20:
        time.sleep(0.5)
    stop.set()
    t.join()
    for s in socks:
        s.close()
    check(len(closed) == len(socks), "every trickled body was cut off (%d of %d, deadline %d s)" % (len(closed), len(socks), timeout_s))


def test_stream_header(port):
    path = "/predict?timing=0&stream.timestamp_s=%d&stream.T_world_from_ego=1,0,0,0,0,1,0,0,0,0,1,0,0,0,0,1"
    got = []
    for k in (1, 2):
        code, _, b = request(port, "POST", path % k, BODY, dict(HDRS, **{"X-Perceive-Stream": "hdr-stream"}))
        got.append(json.loads(b)["meta"].get("stream") if code == 200 else code)
    check(got[0] == {"id": "hdr-stream", "started": True, "reset": False} and got[1] and got[1].get("started") is False,
          "X-Perceive-Stream is the stream id (started, then continued): %s" % got)


def test_drain(perceive):
    p, port = start(perceive, "--drain-s", "30")
    check(port > 0, "drain server started")
    if not port:
        p.kill()
        return
    c1 = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    c2 = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    check(request(port, "GET", "/health", conn=c1)[0] == 200, "health before SIGTERM")
    check(request(port, "GET", "/health", conn=c2)[0] == 200, "second connection open")
    p.send_signal(signal.SIGTERM)
    time.sleep(0.5)
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
        refused = False
    except OSError:
        refused = True
    check(refused, "a new connection is refused while draining")
    code, hd, b = request(port, "GET", "/health", conn=c1)
    check(code == 503 and b"draining" in b and hd.get("Connection", "").lower() == "close",
          "/health on an open connection: %d %s Connection: %s" % (code, b, hd.get("Connection")))
    c1.close()
    code, hd, b = request(port, "POST", "/predict?timing=0", BODY, HDRS, conn=c2)
    check(code == 200 and hd.get("Connection", "").lower() == "close", "/predict on an open connection while draining: %d" % code)
    c2.close()
    try:
        rc = p.wait(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        rc = -1
    check(rc == 0, "exit status after the drain: %d" % rc)


def main():
    if len(sys.argv) != 3:
        print("usage: admission_test.py PERCEIVE_BIN SOURCE_DIR")
        return 2
    perceive = sys.argv[1]
    sanitized = os.environ.get("PV_SANITIZED") == "1"
    nslow = int(os.environ.get("PV_SLOW_CLIENTS", "40" if sanitized else "100"))
    p, port = start(perceive, "--workers", "1", "--queue", "8", "--client-queue", "4", "--body-timeout-s", "4")
    check(port > 0, "server started")
    if port:
        try:
            test_stream_header(port)
            test_fairness(port, 2)
            test_slow(port, nslow, 4)
        finally:
            p.send_signal(signal.SIGTERM)
            try:
                rc = p.wait(timeout=120)
            except subprocess.TimeoutExpired:
                p.kill()
                rc = -1
            check(rc == 0, "server exit status %d (a sanitizer report exits non-zero)" % rc)
    test_drain(perceive)
    print("%d failures" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
