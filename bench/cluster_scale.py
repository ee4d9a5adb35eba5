#!/usr/bin/python3
"""Throughput of N `perceive serve` replicas behind nginx (deploy/local-cluster.sh), N in --replicas,
in alternating rounds (1, 2, 3, 1, 2, 3, ...) so that the machine's other load hits each N alike.

  bench/cluster_scale.py [--perceive build/perceive] [--replicas 1,2,3] [--rounds 3] [--seconds 20]
                         [--clients 6] [--threads 1] [--port 27400]

Load: --clients closed-loop clients POSTing one small point cloud (stateless, ?timing=0) through
nginx. Prints per round and N: answers/s, p50/p95 latency, non-200 answers; then the median
answers/s per N and its ratio to N=1.
"""
import argparse
import http.client
import os
import statistics
import struct
import subprocess
import sys
import threading
import time

here = os.path.dirname(os.path.abspath(__file__))
src = os.path.dirname(here)


def npy(n):
    hdr = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, 4), }" % n
    hdr += " " * (63 - (len(hdr) + 10) % 64) + "\n"
    vals = []
    for i in range(n):
        vals += [((i * 7919) % 4000) / 100.0 - 20.0, ((i * 104729) % 4000) / 100.0 - 20.0, 0.0, 0.5]
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode() + struct.pack("<%df" % (4 * n), *vals)


def load(port, clients, seconds, body):
    lat, bad, lock = [], [0], threading.Lock()
    end = time.time() + seconds

    def client():
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
        while time.time() < end:
            t0 = time.time()
            try:
                c.request("POST", "/predict?timing=0", body=body, headers={"Content-Type": "application/x-npy"})
                r = c.getresponse()
                r.read()
                ok = r.status == 200
            except (OSError, http.client.HTTPException):
                ok = False
                c.close()
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
            with lock:
                if ok:
                    lat.append(time.time() - t0)
                else:
                    bad[0] += 1
        c.close()

    t0 = time.time()
    ts = [threading.Thread(target=client) for _ in range(clients)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    wall = time.time() - t0
    lat.sort()
    q = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))] if lat else float("nan")
    return len(lat) / wall, q(0.5), q(0.95), bad[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--perceive", default=os.path.join(src, "build", "perceive"))
    ap.add_argument("--replicas", default="1,2,3")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--clients", type=int, default=6)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--port", type=int, default=27400)
    a = ap.parse_args()
    env = dict(os.environ, PERCEIVE=os.path.abspath(a.perceive), PERCEIVE_CLUSTER_DIR="/tmp/perceive-cluster-bench-%d" % a.port)
    script = os.path.join(src, "deploy", "local-cluster.sh")
    body = npy(2000)
    res = {}
    for rnd in range(a.rounds):
        for n in [int(x) for x in a.replicas.split(",")]:
            subprocess.run([script, "up", str(n), str(a.port), "bevfusion", "--", "--quiet", "--threads", str(a.threads),
                            "--client-queue", "16"], env=env, check=True, stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
            try:
                load(a.port, a.clients, 3, body)   # warm-up
                r = load(a.port, a.clients, a.seconds, body)
            finally:
                subprocess.run([script, "down"], env=env, stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
            res.setdefault(n, []).append(r[0])
            print("round %d, %d replica(s): %.2f answers/s, p50 %.2f s, p95 %.2f s, %d non-200" % (rnd + 1, n, *r), flush=True)
    base = statistics.median(res[min(res)])
    print("\n| replicas | answers/s (median of %d) | vs %d replica |" % (a.rounds, min(res)))
    print("|---|---|---|")
    for n in sorted(res):
        m = statistics.median(res[n])
        print("| %d | %.2f | %.2fx |" % (n, m, m / base))
    return 0


if __name__ == "__main__":
    sys.exit(main())
