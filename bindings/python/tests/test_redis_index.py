"""Invalidation of a Redis cache by its key index, against a real redis-server on 127.0.0.1.

Redis's slow log, set to keep every command that ran longer than a bound, is the witness that no
step of an invalidation held Redis longer than that: a scan of the database (what an invalidation
did before the index) over 200,000 keys takes far longer.
"""

from __future__ import annotations

from typing import Iterator, List

import pytest
from redis_server import RedisServer, redis_name
from test_redis import open_cache, wait_for

import loadstate


@pytest.fixture
def server() -> Iterator[RedisServer]:
    with RedisServer() as running:
        yield running


@pytest.fixture
def other_rt():
    with loadstate.Runtime() as runtime:
        yield runtime


def fill_unrelated(server: RedisServer, count: int) -> None:
    """``count`` keys of another application in the same database, in one script."""
    server.command("EVAL", "for i = 1, tonumber(ARGV[1]) do redis.call('SET', 'other:' .. i, 'x') end return 1",
                   0, count)
    assert server.command("DBSIZE") >= count


def watch_slow_commands(server: RedisServer, over_us: int) -> None:
    server.command("CONFIG", "SET", "slowlog-log-slower-than", str(over_us))
    server.command("SLOWLOG", "RESET")


def slow_commands(server: RedisServer) -> List[object]:
    return server.command("SLOWLOG", "GET", "100")  # type: ignore[return-value]


def calls_of(server: RedisServer, command: str) -> int:
    stats = server.command("INFO", "commandstats")
    assert isinstance(stats, bytes)
    for line in stats.decode().splitlines():
        if line.startswith(f"cmdstat_{command}:"):
            return int(line.split("calls=")[1].split(",")[0])
    return 0


def indexed(server: RedisServer, prefix: str = "test:") -> List[bytes]:
    return server.command("ZRANGE", f"{prefix}{{i}}keys", 0, -1)  # type: ignore[return-value]


def test_invalidating_a_few_keys_among_many_holds_redis_less_than_5_ms(rt, server):
    cache = open_cache(rt, server)
    for i in range(2_000):
        cache.put(f"item/{i}", b"x")
    for i in range(10):
        cache.put(f"page/{i}", b"p")
    fill_unrelated(server, 200_000)
    watch_slow_commands(server, 5_000)
    cache.invalidate("page/")
    assert slow_commands(server) == []
    assert all(cache.entry(f"page/{i}").stale for i in range(10))  # type: ignore[union-attr]
    assert not any(cache.entry(f"item/{i}").stale for i in range(0, 2_000, 97))  # type: ignore[union-attr]


def test_invalidating_many_keys_goes_in_batches_and_reaches_every_process(rt, other_rt, server):
    cache, other = open_cache(rt, server), open_cache(other_rt, server, memory_max_entries=10_000)
    keys = [f"user/{i:05}" for i in range(3_000)]
    for key in keys:
        cache.put(key, b"v")
    cache.put("users", b"not under the prefix user/")
    assert other.get(keys[0]) == b"v"
    batches = calls_of(server, "zrangebylex")
    watch_slow_commands(server, 10_000)
    cache.invalidate("user/")
    assert slow_commands(server) == []
    assert calls_of(server, "zrangebylex") - batches >= 3_000 // 500
    wait_for(lambda: other.status().invalidations == 1, "the other process hears of the invalidation")
    entries = [other.entry(key) for key in keys]
    assert all(e is not None and e.stale for e in entries)
    assert not other.entry("users").stale  # type: ignore[union-attr]


def test_prefixes_of_any_bytes_select_exactly_their_keys(rt, server):
    cache = open_cache(rt, server)
    keys = [b"\xff", b"\xff\x00", b"\xff\xff\x01", b"\xfe\xff", b"", b"a", b"a\xff", b"b"]
    for key in keys:
        cache.put(key, b"v")
    assert sorted(cache.keys_with_prefix(b"\xff")) == [b"\xff", b"\xff\x00", b"\xff\xff\x01"]
    assert sorted(cache.keys_with_prefix(b"a")) == [b"a", b"a\xff"]
    assert sorted(cache.keys_with_prefix(b"")) == sorted(keys)
    cache.invalidate(b"\xff\xff")
    assert [k for k in keys if cache.entry(k).stale] == [b"\xff\xff\x01"]  # type: ignore[union-attr]
    cache.invalidate(b"a")
    assert [k for k in keys if cache.entry(k).stale] == [b"\xff\xff\x01", b"a", b"a\xff"]  # type: ignore[union-attr]
    cache.clear()
    assert cache.keys_with_prefix(b"") == [] and indexed(server) == []


def test_the_index_follows_removals_and_drops_keys_expired_over_a_minute_ago(rt, server):
    cache = open_cache(rt, server)
    cache.put("a", b"1")
    cache.put("b", b"2")
    assert indexed(server) == [b"a", b"b"]
    cache.remove("b")
    assert indexed(server) == [b"a"]
    # "a" as if its entry had expired two minutes ago: the next write drops it from the index.
    server.command("DEL", redis_name("test:", "v:", "a"))
    server.command("ZADD", "test:{i}expiry", "1", "a")
    cache.put("c", b"3")
    assert indexed(server) == [b"c"]
    assert server.command("ZRANGE", "test:{i}expiry", 0, -1) == [b"c"]


def test_keys_whose_entries_expired_are_not_listed_though_still_indexed(rt, server):
    cache = open_cache(rt, server)
    short = open_cache(rt, server, ttl=0.05)
    cache.put("kept", b"1")
    short.put("gone", b"2")
    gone = redis_name("test:", "v:", "gone")
    wait_for(lambda: server.command("EXISTS", gone) == 0, "the short entry expires in Redis")
    assert indexed(server) == [b"gone", b"kept"]
    assert cache.keys_with_prefix("") == [b"kept"]
    cache.invalidate("")
    assert indexed(server) == [b"kept"], "an invalidation drops the keys whose entries are gone"
