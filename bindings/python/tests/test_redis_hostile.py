"""A Redis cache against a hostile server: whatever a server declares or streams, the host's memory
stays bounded and the connection is dropped with ``RedisCode.EPROTO`` (replies over the cache's bound,
replies that stall). The server here is a socket of the test's own that answers every command with an
attack; no real Redis is needed for that."""

from __future__ import annotations

import socket
import time
from typing import Callable, Dict, Iterator, List

import pytest

from conftest import RawServer

import loadstate
from loadstate import RedisCode

MiB = 1 << 20


def _peak_rss() -> int:
    """The process's peak resident set (VmHWM), in bytes."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


def _rss() -> int:
    """The process's resident set now (VmRSS), in bytes."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def _nested(conn: socket.socket, stats: Dict[str, int]) -> None:
    """Arrays of one array, ever deeper."""
    while True:
        conn.sendall(b"*1\r\n" * 65536)
        stats["sent"] = stats.get("sent", 0) + 4 * 65536


def _stream_bulk(conn: socket.socket, declared: int, stats: Dict[str, int]) -> None:
    conn.sendall(f"${declared}\r\n".encode())
    chunk = b"x" * (256 << 10)
    while True:
        conn.sendall(chunk)
        stats["sent"] = stats.get("sent", 0) + len(chunk)


def _stall(conn: socket.socket, declared: int, stats: Dict[str, int]) -> None:
    conn.sendall(f"${declared}\r\n".encode() + b"x" * 1000)
    while conn.recv(4096):
        pass


def _endless_array(conn: socket.socket, stats: Dict[str, int]) -> None:
    conn.sendall(b"*1000000\r\n")
    chunk = b"*1000000\r\n" + b":1\r\n" * 65536
    while True:
        conn.sendall(chunk)
        stats["sent"] = stats.get("sent", 0) + len(chunk)


class _Hostile:
    """A server on 127.0.0.1 that answers a connection's first bytes with `attack(conn, stats)`."""

    def __init__(self, attack: Callable[[socket.socket, Dict[str, int]], None]) -> None:
        self.attack = attack
        self.stats: Dict[str, int] = {}
        self.raw = RawServer(self._serve)
        self.url = f"redis://127.0.0.1:{self.raw.port}"

    @property
    def connections(self) -> int:
        return self.raw.connections

    def _serve(self, conn: socket.socket, number: int) -> None:
        conn.recv(65536)
        self.attack(conn, self.stats)

    def close(self) -> None:
        self.raw.close()


@pytest.fixture
def hostile() -> Iterator[Callable[..., _Hostile]]:
    made: List[_Hostile] = []

    def make(attack: Callable[[socket.socket, Dict[str, int]], None]) -> _Hostile:
        server = _Hostile(attack)
        made.append(server)
        return server

    yield make
    for server in made:
        server.close()


def _attacked(rt: loadstate.Runtime, server: _Hostile, seconds: float, **options: object) -> Dict[object, str]:
    """Asks the cache for keys for `seconds` while `server` attacks; returns the reasons the gets failed
    with, each with its message."""
    cache = rt.redis_cache(server.url, command_timeout=0.5, connect_timeout=0.5, reconnect_max=0.2, **options)
    reasons: Dict[object, str] = {}
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with pytest.raises(loadstate.RedisError) as failure:
            cache.get("k")
        reasons.setdefault(failure.value.redis_code, failure.value.redis_message)
        if failure.value.redis_code == RedisCode.EDOWN:
            time.sleep(0.01)  # reconnecting: no need to spin
    cache.close()
    return reasons


@pytest.mark.parametrize("declared", [1 << 30, 4 << 30])
def test_a_declared_huge_bulk_string_streamed_is_cut_off_at_the_reply_bound(rt, hostile, declared):
    before = _peak_rss()
    server = hostile(lambda conn, stats: _stream_bulk(conn, declared, stats))
    reasons = _attacked(rt, server, 3.0)
    assert RedisCode.EPROTO in reasons, reasons
    assert "over" in reasons[RedisCode.EPROTO]
    # Each connection was dropped after about the bound (8 MiB values + 1 MiB), not the declared size;
    # the back-off let it reconnect a few times.
    assert server.connections >= 2
    assert server.stats["sent"] / server.connections < 64 * MiB
    assert _peak_rss() - before < 128 * MiB


def test_a_stalled_partial_reply_is_dropped_after_the_command_timeout(rt, hostile):
    server = hostile(lambda conn, stats: _stall(conn, 4 << 30, stats))
    started = time.monotonic()
    cache = rt.redis_cache(server.url, command_timeout=0.3, connect_timeout=0.5, reconnect_max=0.2)
    with pytest.raises(loadstate.RedisError) as failure:
        cache.get("k")
    assert failure.value.redis_code in (RedisCode.EPROTO, RedisCode.ETIMEDOUT), failure.value
    assert time.monotonic() - started < 2.0
    cache.close()


def test_endless_arrays_are_bounded_by_what_the_reply_holds(rt, hostile):
    before = _peak_rss()
    server = hostile(_endless_array)
    reasons = _attacked(rt, server, 2.0)
    assert RedisCode.EPROTO in reasons or RedisCode.EREPLY in reasons, reasons
    assert _peak_rss() - before < 128 * MiB


def test_nesting_without_end_is_refused_and_memory_stays_flat_while_the_attack_lasts(rt, hostile):
    before = _peak_rss()
    server = hostile(_nested)
    reasons = _attacked(rt, server, 1.0)
    assert RedisCode.EPROTO in reasons or RedisCode.EREPLY in reasons, reasons
    # The attacks go on (every attack above, one after the other): the resident set does not grow with them.
    attacks = [_nested, _endless_array, lambda conn, stats: _stream_bulk(conn, 4 << 30, stats)]
    servers = [hostile(attack) for attack in attacks]
    for one in servers:
        _attacked(rt, one, 0.5)
    settled = _rss()
    for one in servers:
        _attacked(rt, one, 1.0)
    assert _rss() - settled < 32 * MiB
    assert _peak_rss() - before < 128 * MiB


_CLIENT = """
import sys, time
import loadstate
with loadstate.Runtime() as rt:
    for url in sys.argv[1:]:
        cache = rt.redis_cache(url, command_timeout=0.5, connect_timeout=0.5, reconnect_max=0.2)
        deadline = time.monotonic() + 1.5
        while time.monotonic() < deadline:
            try:
                cache.get("k")
            except loadstate.RedisError:
                time.sleep(0.005)
        cache.close()
with open("/proc/self/status") as status:
    print(next(line.split()[1] for line in status if line.startswith("VmHWM:")))
"""


def test_a_fresh_process_under_every_attack_peaks_under_256_mib(hostile):
    import os
    import subprocess
    import sys

    attacks = [_nested, _endless_array, lambda conn, stats: _stream_bulk(conn, 1 << 30, stats),
               lambda conn, stats: _stream_bulk(conn, 4 << 30, stats),
               lambda conn, stats: _stall(conn, 4 << 30, stats)]
    urls = [hostile(attack).url for attack in attacks]
    package = os.path.dirname(os.path.dirname(os.path.abspath(loadstate.__file__)))
    env = dict(os.environ, PYTHONPATH=package + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, "-c", _CLIENT] + urls, capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    peak = int(done.stdout.split()[-1]) * 1024
    print(f"a fresh process under 5 attacks of 1.5 s each: peak resident set {peak / MiB:.0f} MiB")
    assert peak < 256 * MiB, f"peak resident set {peak / MiB:.0f} MiB"


def test_a_smaller_value_bound_makes_a_smaller_reply_bound(rt, hostile):
    server = hostile(lambda conn, stats: _stream_bulk(conn, 1 << 30, stats))
    reasons = _attacked(rt, server, 1.0, max_value_bytes=1 << 20)
    assert RedisCode.EPROTO in reasons, reasons
    assert server.stats["sent"] / server.connections < 16 * MiB


def test_the_subscription_connection_also_drops_a_reply_that_stalls(rt, hostile):
    # The cache subscribes at once; its command connection stays idle (nothing is asked). A subscription
    # answered by a reply that never ends is dropped after the command timeout, and the cache connects
    # again: the server sees new connections.
    server = hostile(lambda conn, stats: _stall(conn, 1 << 20, stats))
    cache = rt.redis_cache(server.url, command_timeout=0.2, connect_timeout=0.5, reconnect_max=0.1)
    deadline = time.monotonic() + 10
    while server.connections < 5 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.connections >= 5
    assert not cache.status().subscribed
    cache.close()
