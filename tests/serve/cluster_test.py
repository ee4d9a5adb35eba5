#!/usr/bin/python3
"""Scale-out over loopback: nginx + 3 `perceive serve bevfusion` replicas (deploy/local-cluster.sh).

  cluster_test.py PERCEIVE_BIN SOURCE_DIR

Phase 1, replica loss: 16 interleaved streams x 5 frames (half keyed by the X-Perceive-Stream
header, half by ?stream.id=) plus stateless requests; replica 2 is SIGKILLed once a third of the
frames are answered. A client retries a frame answered 502/503 (the replica died with it). Every
answered frame must equal a single-replica run of its stream from its (re)start frame: the first
frame a replica sees of a stream says meta.stream.started, and is densified against nothing.
No 5xx other than 502/503 inside the kill window.
Phase 2, rolling restart: replica 2 back, then each replica in turn gets SIGTERM (drain) and is
started again while 8 streams and stateless requests run: every request is answered 200 at the
first try, and every answer again equals its single-replica reference.
Phase 3, slow clients through nginx: connections from another loopback address that send
headers and trickle their body must not keep /health and a /predict from being answered.
Exit 77 (skip) without nginx or under PV_SANITIZED=1 (minutes of model runs under ASan).
"""
import http.client
import json
import os
import random
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

NSTREAMS, NFRAMES, NFAMILIES = 16, 5, 4
failures = []
lock = threading.Lock()


def fail(msg):
    with lock:
        failures.append(msg)
    print("FAIL", msg, flush=True)


def npy(rows):
    """A float32 [n, 4] .npy file (version 1.0 header)."""
    hdr = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, 4), }" % len(rows)
    hdr += " " * (63 - (len(hdr) + 10) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode() + b"".join(struct.pack("<4f", *r) for r in rows)


def family_frames(f):
    """NFRAMES clouds of family f: a few clusters that move, so frames differ and densify."""
    rng = random.Random(1000 + f)
    frames = []
    for k in range(NFRAMES):
        rows = []
        for c in range(6):
            cx, cy = rng.uniform(-30, 30), rng.uniform(-30, 30)
            for _ in range(150):
                rows.append((cx + rng.gauss(0, 0.8) + 0.3 * k, cy + rng.gauss(0, 0.8), rng.uniform(-1.5, 1.0), rng.uniform(0, 1)))
        frames.append(npy(rows))
    return frames


def request(port, path, body=None, headers=None, timeout=120, source=None):
    """(status, headers dict, body bytes); status -1 when the connection failed."""
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout, source_address=(source, 0) if source else None)
        c.request("POST" if body is not None else "GET", path, body=body, headers=headers or {})
        r = c.getresponse()
        out = (r.status, dict(r.getheaders()), r.read())
        c.close()
        return out
    except (OSError, http.client.HTTPException) as e:
        return (-1, {}, str(e).encode())


def frame_path(k, sid=None):
    pose = "1,0,0,%g,0,1,0,0,0,0,1,0,0,0,0,1" % (2.0 * k)
    p = "/predict?timing=0&stream.timestamp_s=%.1f&stream.T_world_from_ego=%s" % (100 + 0.1 * k, pose)
    return p + ("&stream.id=" + sid if sid else "")


def canon(body):
    """The answer without the stream's id (references run under their own ids)."""
    d = json.loads(body)
    st = d.get("meta", {}).get("stream")
    if st:
        st.pop("id", None)
    return json.dumps(d, sort_keys=True)


class Stream:
    def __init__(self, sid, family, by_header):
        self.sid, self.family, self.by_header = sid, family, by_header
        self.answers = [None] * NFRAMES   # (canonical answer, started)
        self.log = []                     # (time, frame, status)

    def send(self, port, frames, k):
        h = {"Content-Type": "application/x-npy"}
        if self.by_header:
            h["X-Perceive-Stream"] = self.sid
        return request(port, frame_path(k, None if self.by_header else self.sid), frames[self.family][k], h)

    def run(self, port, frames, retry):
        for k in range(NFRAMES):
            for attempt in range(40):
                code, hd, body = self.send(port, frames, k)
                self.log.append((time.time(), k, code))
                if code == 200:
                    d = json.loads(body)
                    self.answers[k] = (canon(body), d["meta"]["stream"]["started"])
                    break
                if code == 429 or (retry and code in (502, 503, 504, -1)):
                    pass   # refused before it was read (429: honour Retry-After), or its replica died
                else:
                    fail("stream %s frame %d: %d %s" % (self.sid, k, code, body[:200]))
                    return
                time.sleep(float(hd.get("Retry-After", "0.3")) if code in (429, 503) else 0.3)
            else:
                fail("stream %s frame %d: no answer after 40 tries" % (self.sid, k))
                return


def references(port, frames, needed, nonce):
    """{(family, start): [canonical answers of frames start..]} from one stream each (one replica)."""
    out = {}

    def one(f, j):
        s = Stream("ref-%s-%d-%d" % (nonce, f, j), f, False)
        ans = []
        for k in range(j, NFRAMES):
            code, _, body = s.send(port, frames, k)
            if code != 200:
                fail("reference %d/%d frame %d: %d %s" % (f, j, k, code, body[:200]))
                return
            ans.append(canon(body))
        out[(f, j)] = ans

    ts = [threading.Thread(target=one, args=fj) for fj in sorted(needed)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return out


def check_streams(streams, refs, what):
    n = 0
    for s in streams:
        start = None
        for k, a in enumerate(s.answers):
            if a is None:
                continue
            body, started = a
            if k == 0 and not started:
                fail("%s: stream %s frame 0 does not say started" % (what, s.sid))
            if started:
                start = k
            ref = refs.get((s.family, start))
            if start is None or ref is None:
                fail("%s: stream %s frame %d has no (re)start before it" % (what, s.sid, k))
            elif body != ref[k - start]:
                fail("%s: stream %s frame %d differs from a single-replica run from frame %d" % (what, s.sid, k, start))
            n += 1
    return n


def needed_refs(streams):
    need = set()
    for s in streams:
        for k, a in enumerate(s.answers):
            if a and a[1]:
                need.add((s.family, k))
    return need


def stateless(port, body, count, retry, log):
    for _ in range(count):
        for attempt in range(40):
            code, _, b = request(port, "/predict?timing=0", body, {"Content-Type": "application/x-npy"})
            log.append((time.time(), code, b if code == 200 else None))
            if code == 200 or not retry or code not in (502, 503, 504):
                break
            time.sleep(0.3)


def cluster(script, env, *args):
    # output through a file: the replicas and nginx it starts outlive it
    with tempfile.TemporaryFile(mode="w+") as f:
        r = subprocess.run([script] + list(args), env=env, stdin=subprocess.DEVNULL, stdout=f, stderr=subprocess.STDOUT, timeout=900)
        f.seek(0)
        out = f.read()
    if r.returncode:
        fail("local-cluster.sh %s: %s" % (" ".join(args), out))
    return out


def free_base():
    for _ in range(50):
        base = random.randint(20000, 32000)   # below the ephemeral range
        try:
            socks = []
            for p in range(base, base + 4):
                s = socket.socket()
                s.bind(("127.0.0.1", p))
                socks.append(s)
            for s in socks:
                s.close()
            return base
        except OSError:
            for s in socks:
                s.close()
    return 23456


def slow_clients(port, n, body):
    """n connections from 127.0.0.2 send headers and trickle a body byte a second; meanwhile
    /health and one /predict from 127.0.0.1 are timed (returned: seconds each, or None)."""
    socks, stop = [], threading.Event()
    for _ in range(n):
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=5, source_address=("127.0.0.2", 0))
            s.sendall(b"POST /predict HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-npy\r\nContent-Length: 100000\r\n\r\n")
            socks.append(s)
        except OSError:
            break

    def trickle():
        while not stop.is_set():
            for s in socks:
                try:
                    s.send(b"x")
                except OSError:
                    pass
            stop.wait(1.0)

    t = threading.Thread(target=trickle)
    t.start()
    time.sleep(2)
    t0 = time.time()
    hc = request(port, "/health", timeout=30)[0]
    t_health = time.time() - t0
    t0 = time.time()
    pc = request(port, "/predict?timing=0", body, {"Content-Type": "application/x-npy"}, timeout=60)[0]
    t_predict = time.time() - t0
    stop.set()
    t.join()
    for s in socks:
        s.close()
    return len(socks), hc, t_health, pc, t_predict


def main():
    if len(sys.argv) != 3:
        print("usage: cluster_test.py PERCEIVE_BIN SOURCE_DIR")
        return 2
    perceive, src = sys.argv[1], sys.argv[2]
    if os.environ.get("PV_SANITIZED") == "1":
        print("SKIP: the cluster test runs in the Release pass only (minutes of model runs under ASan)")
        return 77
    nginx = next((p for p in ("/usr/sbin/nginx", "/usr/bin/nginx") if os.access(p, os.X_OK)), None)
    if not nginx:
        print("SKIP: nginx is not installed (tools/deps.sh installs nginx-light)")
        return 77
    run = tempfile.mkdtemp(prefix="perceive-cluster-test-")
    env = dict(os.environ, PERCEIVE=perceive, PERCEIVE_CLUSTER_DIR=run, PERCEIVE_NGINX=nginx)
    script = os.path.join(src, "deploy", "local-cluster.sh")
    base = free_base()
    nonce = "%d%d" % (os.getpid(), random.randint(0, 9999))
    frames = [family_frames(f) for f in range(NFAMILIES)]
    t_start = time.time()
    out = cluster(script, env, "up", "3", str(base), "bevfusion", "--", "--quiet", "--threads", "1", "--drain-s", "30",
                  "--client-queue", "16")   # all of the test's traffic is one client (127.0.0.1)
    print(out.strip(), "(%.1f s)" % (time.time() - t_start), flush=True)
    if failures:
        return 1
    try:
        # ---- phase 1: replica loss
        streams = [Stream("s%s-%02d" % (nonce, i), i % NFAMILIES, i % 2 == 0) for i in range(NSTREAMS)]
        slog = []
        ts = [threading.Thread(target=s.run, args=(base, frames, True)) for s in streams]
        ts.append(threading.Thread(target=stateless, args=(base, frames[0][0], 6, True, slog)))
        for t in ts:
            t.start()
        t_kill = None
        while any(t.is_alive() for t in ts):
            if t_kill is None and sum(a is not None for s in streams for a in s.answers) >= NSTREAMS * NFRAMES // 3:
                cluster(script, env, "kill", "2")
                t_kill = time.time()
                print("replica 2 SIGKILLed after %.1f s" % (t_kill - t_start), flush=True)
            time.sleep(0.05)
        for t in ts:
            t.join()
        window = (t_kill or 0, (t_kill or 0) + 10)
        codes = {}
        for s in streams:
            for (t, k, code) in s.log:
                codes[code] = codes.get(code, 0) + 1
                if code != 200 and not (code in (502, 503) and window[0] <= t <= window[1]):
                    fail("phase 1: stream %s frame %d answered %d outside the kill window" % (s.sid, k, code))
        for (t, code, _) in slog:
            codes[code] = codes.get(code, 0) + 1
            if code != 200 and not (code in (502, 503) and window[0] <= t <= window[1]):
                fail("phase 1: stateless request answered %d outside the kill window" % code)
        ok_bodies = {b for (_, c, b) in slog if c == 200}
        if len(ok_bodies) != 1:
            fail("phase 1: %d different stateless answers for one input" % len(ok_bodies))
        restarts = sum(1 for s in streams for k, a in enumerate(s.answers) if a and a[1] and k > 0)
        print("phase 1: answers by status %s; %d stream restarts (re-homed); %.1f s" % (codes, restarts, time.time() - t_start), flush=True)
        need = needed_refs(streams)
        refs = references(base, frames, need, nonce)
        n = check_streams(streams, refs, "phase 1")
        print("phase 1: %d frames checked against %d single-replica references; %.1f s" % (n, len(refs), time.time() - t_start), flush=True)

        # ---- phase 2: rolling restart with SIGTERM
        cluster(script, env, "start", "2")
        streams2 = [Stream("r%s-%02d" % (nonce, i), i % NFAMILIES, i % 2 == 1) for i in range(8)]
        slog2 = []
        ts = [threading.Thread(target=s.run, args=(base, frames, False)) for s in streams2]
        ts.append(threading.Thread(target=stateless, args=(base, frames[1][0], 4, False, slog2)))
        for t in ts:
            t.start()
        for i in (1, 2, 3):
            if not any(t.is_alive() for t in ts):
                break
            cluster(script, env, "restart", str(i))
            print("replica %d restarted (SIGTERM, drained) at %.1f s" % (i, time.time() - t_start), flush=True)
        for t in ts:
            t.join()
        bad = [(s.sid, k, c) for s in streams2 for (_, k, c) in s.log if c != 200] + [("stateless", 0, c) for (_, c, _) in slog2 if c != 200]
        if bad:
            fail("phase 2: requests not answered 200 across the rolling restart: %s" % bad[:10])
        need2 = needed_refs(streams2) - set(refs)
        refs.update(references(base, frames, need2, nonce + "b"))
        n2 = check_streams(streams2, refs, "phase 2")
        restarts2 = sum(1 for s in streams2 for k, a in enumerate(s.answers) if a and a[1] and k > 0)
        print("phase 2: %d frames + %d stateless answered 200 across 3 rolling restarts, %d re-homed; %.1f s"
              % (n2, len(slog2), restarts2, time.time() - t_start), flush=True)

        # ---- phase 3: slow clients through nginx
        nslow = int(os.environ.get("PV_SLOW_CLIENTS", "100"))
        got, hc, th, pc, tp = slow_clients(base, nslow, frames[2][0])
        print("phase 3: %d trickling connections via nginx: /health %d in %.2f s, /predict %d in %.2f s" % (got, hc, th, pc, tp), flush=True)
        if hc != 200 or pc != 200:
            fail("phase 3: with %d slow clients /health %d, /predict %d" % (got, hc, pc))
        print(cluster(script, env, "status").strip())
    finally:
        cluster(script, env, "down")
    print("%.1f s; %d failures" % (time.time() - t_start, len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
