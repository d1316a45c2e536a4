#!/usr/bin/env python3
"""fsync_probe.py DIR SECONDS [INTERVAL_MS] -- what a durable COMMIT
costs on this disk while a benchmark runs (the fleet load).

Every INTERVAL_MS (50) it writes 8 KiB into a 1 MiB file in DIR and
fdatasyncs it, as PostgreSQL does with a WAL page at COMMIT, for SECONDS
or until SIGTERM, then prints one JSON object: n, p50_ms, p99_ms, max_ms,
over_100_ms (how many took longer), and the slowest ten with their wall
times (worst), to line up with the benchmark's slow Acks. An Ack follows
its COMMIT, so this is the floor under the Ack latency on the machine.
"""
import json
import os
import signal
import sys
import time


def main():
    if len(sys.argv) < 3:
        sys.stderr.write(__doc__)
        return 2
    path = os.path.join(sys.argv[1], "fsync_probe.dat")
    seconds = float(sys.argv[2])
    interval = (float(sys.argv[3]) if len(sys.argv) > 3 else 50.0) / 1000
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    os.ftruncate(fd, 1 << 20)
    page = b"p" * 8192
    lat = []
    end = time.monotonic() + seconds
    i = 0
    while not stop and time.monotonic() < end:
        t0 = time.monotonic()
        os.pwrite(fd, page, (i % 128) * 8192)
        os.fdatasync(fd)
        lat.append(((time.monotonic() - t0) * 1000, time.time()))
        i += 1
        time.sleep(interval)
    os.close(fd)
    os.unlink(path)
    ms = sorted(x[0] for x in lat)
    n = len(ms)

    def q(p):
        return round(ms[min(n - 1, int(p * n))], 1) if n else None
    worst = sorted(lat, reverse=True)[:10]
    print(json.dumps({"n": n, "p50_ms": q(0.5), "p99_ms": q(0.99),
                      "max_ms": round(ms[-1], 1) if n else None,
                      "over_100_ms": sum(1 for x in ms if x > 100),
                      "worst": [[round(a, 1), round(b, 3)] for a, b in worst]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
