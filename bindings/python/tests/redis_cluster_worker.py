"""One process of the Redis Cluster sharing test: ``python3 redis_cluster_worker.py URL PREFIX KEYS``.

It opens a Redis cache on the cluster, prints ``ready`` once connected, waits for a line on stdin, then makes
one shared, cache-first load of each of ``KEYS`` keys (256 cells, a window of loads at a time) and prints
``calls=N wrong=N seconds=S``: how many times its loader ran, how many loads ended with another value than
their key's, and how long the loads took.
"""

from __future__ import annotations

import sys
import threading
import time

import loadstate
from loadstate import CachePolicy

WAIT = 60.0


def main() -> int:
    url, prefix, keys = sys.argv[1], sys.argv[2], int(sys.argv[3])
    calls = 0
    lock = threading.Lock()

    def load(job: loadstate.Job) -> bytes:
        nonlocal calls
        with lock:
            calls += 1
        return b"value of " + job.request

    with loadstate.Runtime() as rt:
        cache = rt.redis_cache(url, key_prefix=prefix)
        deadline = time.monotonic() + WAIT
        while not (cache.status().connected and cache.status().subscribed):
            if time.monotonic() > deadline:
                print(f"not connected: {cache.status()}", flush=True)
                return 1
            time.sleep(0.01)
        print("ready", flush=True)
        sys.stdin.readline()
        loader = rt.loader(load)
        cells = [rt.loadable(loader) for _ in range(256)]
        wrong = 0
        started = time.monotonic()
        for first in range(0, keys, len(cells)):
            batch = [f"key/{i}".encode() for i in range(first, min(first + len(cells), keys))]
            loads = [cell.load(key, share=True, cache=cache, policy=CachePolicy.CACHE_FIRST, fresh=3600)
                     for cell, key in zip(cells, batch)]
            for key, one in zip(batch, loads):
                if one.value(WAIT) != b"value of " + key:
                    wrong += 1
        seconds = time.monotonic() - started
        with lock:
            print(f"calls={calls} wrong={wrong} seconds={seconds:.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
