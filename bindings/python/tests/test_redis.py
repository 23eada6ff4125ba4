"""The Redis cache through the binding, against a real redis-server on 127.0.0.1 and a free port.

Two runtimes, each with its own RedisCache of one server and key prefix, stand for two processes.
"""

from __future__ import annotations

import asyncio
import pickle
import threading
import time
from typing import Callable, Iterator, List

import pytest
from conftest import WAIT, Jobs, Recorder
from redis_server import RedisServer, entry_names, redis_name

import loadstate
from loadstate import CachePolicy, Domain, Flags, RedisCode, Status

# Short enough that a test waits little for the cache to notice a restart.
RECONNECT_MAX = 0.2


@pytest.fixture
def server() -> Iterator[RedisServer]:
    with RedisServer() as running:
        yield running


def wait_for(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: not within {WAIT} s")
        time.sleep(0.01)


def connected(cache: loadstate.RedisCache) -> bool:
    status = cache.status()
    return status.connected and status.subscribed


def open_cache(rt: loadstate.Runtime, server: RedisServer, **options) -> loadstate.RedisCache:
    """A Redis cache of the test's server under the prefix "test:", connected."""
    options.setdefault("key_prefix", "test:")
    options.setdefault("reconnect_max", RECONNECT_MAX)
    cache = rt.redis_cache(server.url, **options)
    wait_for(lambda: connected(cache), "the cache connects")
    return cache


class Counting:
    """A loader that counts its calls and returns ``prefix`` + the request."""

    def __init__(self, rt: loadstate.Runtime, prefix: bytes) -> None:
        self.calls: List[bytes] = []
        self.prefix = prefix
        self.loader = rt.loader(self._load)

    def _load(self, job: loadstate.Job) -> bytes:
        self.calls.append(job.request)
        return self.prefix + job.request


@pytest.fixture
def other_rt():
    """A second runtime: another process of the same application."""
    with loadstate.Runtime() as runtime:
        yield runtime


def test_a_redis_cache_is_a_mutable_mapping_stored_under_its_prefix(rt, server):
    with open_cache(rt, server, codec=loadstate.JSON) as cache:
        assert isinstance(cache, loadstate.Cache) and repr(cache) == f"<loadstate.RedisCache {cache.id}>"
        cache["user/1"] = {"name": "Ada"}
        cache[b"user/2"] = {"name": "Bob"}
        assert cache["user/1"] == {"name": "Ada"} and cache.get("user/3") is None
        assert "user/2" in cache and "user/3" not in cache and 7 not in cache
        assert sorted(cache) == [b"user/1", b"user/2"] and len(cache) == 2
        assert cache.keys_with_prefix("user/1") == [b"user/1"]
        assert dict(cache.items()) == {b"user/1": {"name": "Ada"}, b"user/2": {"name": "Bob"}}
        entry = cache.entry("user/1")
        assert entry is not None and entry.value == {"name": "Ada"} and not entry.stale
        assert abs(entry.stored_at_ms - time.time() * 1000) < 60_000
        assert entry_names(server) == sorted([redis_name("test:", "v:", "user/1"), redis_name("test:", "v:", "user/2")])
        assert cache.pop("user/2") == {"name": "Bob"} and not cache.remove("user/2")
        with pytest.raises(KeyError):
            del cache["user/2"]
        big = "x" * 100_000  # larger than the binding's read buffer
        cache["big"] = big
        assert cache["big"] == big
        cache.clear()
        assert len(cache) == 0 and entry_names(server, "test:") == []
        stats = cache.stats()
        assert stats.hits >= 4 and stats.misses >= 1


def test_another_runtime_reads_what_one_stored(rt, other_rt, server):
    writer, reader = open_cache(rt, server), open_cache(other_rt, server)
    assert not reader and len(reader) == 0 and reader == {}
    writer["shared"] = b"from the writer"
    # The reader holds nothing in this process (no front tier): len, bool and == count what Redis holds.
    assert reader.stats().entries == 0
    assert reader and len(reader) == 1 and reader == {b"shared": b"from the writer"}
    assert reader["shared"] == b"from the writer"
    with pytest.raises(KeyError):
        reader["missing"]
    assert reader.popitem() == (b"shared", b"from the writer") and not writer
    other = open_cache(other_rt, server, key_prefix="other-app:")
    assert other.get("shared") is None


def test_entries_live_in_redis_for_the_cache_ttl(rt, server):
    cache = open_cache(rt, server, ttl=30)
    cache["k"] = b"v"
    assert 0 < server.command("PTTL", redis_name("test:", "v:", "k")) <= 30_000
    capped = open_cache(rt, server, key_prefix="capped:", ttl=3600, max_ttl=10)
    capped["k"] = b"v"
    assert 0 < server.command("PTTL", redis_name("capped:", "v:", "k")) <= 10_000


def test_a_cached_load_fills_redis_and_another_runtime_loads_nothing(rt, other_rt, server):
    first, second = Counting(rt, b"loaded by the first: "), Counting(other_rt, b"loaded by the second: ")
    cache, other_cache = open_cache(rt, server), open_cache(other_rt, server)
    state = rt.loadable(first.loader).load(b"k", cache=cache, policy=CachePolicy.CACHE_FIRST, fresh=60).state(WAIT)
    assert state.value == b"loaded by the first: k" and not state.from_cache
    # The result is stored in Redis after the LOADED event (a library gap, reported): wait for it.
    wait_for(lambda: server.command("EXISTS", redis_name("test:", "v:", "k")) == 1, "the first runtime stores its result")
    state = other_rt.loadable(second.loader).load(b"k", cache=other_cache, policy=CachePolicy.CACHE_FIRST,
                                                  fresh=60).state(WAIT)
    assert (state.status, state.value, state.from_cache) == (Status.LOADED, b"loaded by the first: k", True)
    assert (first.calls, second.calls) == ([b"k"], [])


def test_a_shared_load_calls_one_loader_among_two_runtimes(rt, other_rt, server):
    holder_jobs = Jobs(rt)
    waiter = Counting(other_rt, b"loaded by the waiter: ")
    cache, other_cache = open_cache(rt, server), open_cache(other_rt, server)
    holder = rt.loadable(holder_jobs.loader)
    holder.load(b"k", share=True, cache=cache)
    job = holder_jobs.next()  # the holder has the lease
    waiting = other_rt.loadable(waiter.loader)
    log = Recorder(waiting)
    load = waiting.load(b"k", share=True, cache=other_cache)
    assert log.next().status is Status.LOADING
    wait_for(lambda: other_cache.status().leases_waited == 1, "the second runtime waits for the lease")
    job.succeed(b"loaded by the holder")
    assert load.value(WAIT) == b"loaded by the holder"
    assert waiter.calls == []
    # The holder counts its result published when Redis answers, which may come after the waiter has it.
    wait_for(lambda: cache.status().published == 1, "the holder counts its result published")
    assert cache.status().leases_taken == 1
    waiter_status = other_cache.status()
    assert (waiter_status.leases_taken, waiter_status.results_received) == (0, 1)


def test_a_lease_released_by_a_cancelled_load_is_taken_over(rt, other_rt, server):
    holder_jobs = Jobs(rt)
    waiter = Counting(other_rt, b"loaded by the waiter: ")
    cache, other_cache = open_cache(rt, server), open_cache(other_rt, server)
    holder = rt.loadable(holder_jobs.loader)
    holder.load(b"k", share=True, cache=cache)
    holder_jobs.next()
    assert [k for k in server.command("KEYS", "test:*") if b"}l:" in k] == [redis_name("test:", "l:", "k")]
    load = other_rt.loadable(waiter.loader).load(b"k", share=True, cache=other_cache)
    wait_for(lambda: other_cache.status().leases_waited == 1, "the second runtime waits for the lease")
    holder.cancel()
    assert load.value(WAIT) == b"loaded by the waiter: k"
    assert waiter.calls == [b"k"] and other_cache.status().takeovers == 1


def test_a_lease_of_a_closed_runtime_is_released(server, other_rt):
    waiter = Counting(other_rt, b"loaded by the waiter: ")
    other_cache = open_cache(other_rt, server)
    with loadstate.Runtime() as rt:
        holder_jobs = Jobs(rt)
        cache = open_cache(rt, server, lease=5)
        rt.loadable(holder_jobs.loader).load(b"k", share=True, cache=cache)
        holder_jobs.next()
        load = other_rt.loadable(waiter.loader).load(b"k", share=True, cache=other_cache)
        wait_for(lambda: other_cache.status().leases_waited == 1, "the second runtime waits for the lease")
    # Closing the holder's runtime cancels its job, which releases the lease: the waiter takes over at once,
    # well before the lease's 5 s have passed.
    assert load.value(2) == b"loaded by the waiter: k"
    assert waiter.calls == [b"k"] and other_cache.status().takeovers == 1


def test_a_load_waiting_for_a_lease_calls_its_loader_when_redis_goes_down(rt, other_rt, server):
    holder_jobs = Jobs(rt)
    waiter = Counting(other_rt, b"loaded by the waiter: ")
    cache, other_cache = open_cache(rt, server, lease=5), open_cache(other_rt, server, lease=5)
    rt.loadable(holder_jobs.loader).load(b"k", share=True, cache=cache)
    job = holder_jobs.next()
    load = other_rt.loadable(waiter.loader).load(b"k", share=True, cache=other_cache)
    wait_for(lambda: other_cache.status().leases_waited == 1, "the second runtime waits for the lease")
    server.kill()
    try:
        # Redis is unreachable: the waiting load calls its loader, well before the lease's 5 s have passed.
        assert load.value(2) == b"loaded by the waiter: k"
    finally:
        job.succeed(b"loaded by the holder")


def test_invalidating_in_one_runtime_reloads_the_cells_of_another(rt, other_rt, server):
    first, second = Counting(rt, b"first "), Counting(other_rt, b"second ")
    cache, other_cache = open_cache(rt, server), open_cache(other_rt, server)
    cell = other_rt.loadable(second.loader)
    log = Recorder(cell)
    assert cell.load(b"user/1", cache=other_cache).value(WAIT) == b"second user/1"
    log.until(lambda e: e.status is Status.LOADED)
    cache.invalidate("user/")
    reloading = log.next()
    assert reloading.status is Status.LOADED and reloading.flags & (Flags.STALE | Flags.REFRESHING) == (
        Flags.STALE | Flags.REFRESHING)
    reloaded = log.until(lambda e: not e.flags & Flags.REFRESHING)[-1]
    assert (reloaded.status, reloaded.value) == (Status.LOADED, b"second user/1")
    assert second.calls == [b"user/1", b"user/1"] and first.calls == []
    assert other_cache.status().invalidations == 1
    entry = cache.entry("user/1")
    assert entry is not None


def test_redis_stopped_fails_cache_calls_but_not_loads_and_restarted_works_again(rt, server):
    counting = Counting(rt, b"loaded ")
    cache = open_cache(rt, server, command_timeout=1, connect_timeout=1)
    cache["k"] = b"cached"
    server.stop()
    with pytest.raises(loadstate.RedisError) as failed:
        cache["k"] = b"while down"
    error = failed.value
    assert isinstance(error, loadstate.Error) and error.code == loadstate.Code.EREDIS == -11
    assert error.redis_code in (RedisCode.ECONNECT, RedisCode.EDOWN, RedisCode.ETIMEDOUT, RedisCode.EREFUSED), error
    assert error.redis_message and error.redis_message in str(error)
    with pytest.raises(loadstate.RedisError):
        cache.get("k")
    assert not cache.status().connected and cache.status().last_error_code is not None
    cell = rt.loadable(counting.loader)
    for options in ({"policy": CachePolicy.CACHE_FIRST, "fresh": 60}, {"share": True},
                    {"policy": CachePolicy.CACHE_THEN_LOAD}):
        assert cell.load(b"k", cache=cache, **options).value(WAIT) == b"loaded k"
    assert len(counting.calls) == 3
    state = cell.load(b"k", cache=cache, policy=CachePolicy.CACHE_ONLY).state(WAIT)
    assert (state.status, state.error_domain) == (Status.ERROR, Domain.REDIS)
    assert state.error_code in tuple(RedisCode)
    server.start()
    wait_for(lambda: connected(cache), "the cache reconnects")
    cache["k"] = b"after the restart"
    assert cache["k"] == b"after the restart"
    assert cell.load(b"k", cache=cache, policy=CachePolicy.CACHE_FIRST, fresh=60).value(WAIT) == b"after the restart"
    assert len(counting.calls) == 3 and cache.status().connects >= 4


def test_get_many_reads_a_batch_and_raises_when_redis_cannot_answer(rt, server):
    cache = open_cache(rt, server, codec=loadstate.TEXT, command_timeout=1, connect_timeout=1, memory_max_entries=10)
    keys = [f"key:{i}" for i in range(1000)]
    for key in keys[:500]:
        cache[key] = key.upper()
    assert cache.get_many(keys) == {key: key.upper() for key in keys[:500]}
    stats = cache.stats()
    assert (stats.hits, stats.misses) == (500, 500)
    # The front tier holds the last key read: it still answers while Redis is down; a key it does not
    # hold raises the Redis error.
    assert cache["key:499"] == "KEY:499"
    server.stop()
    assert cache.get_many(["key:499"]) == {"key:499": "KEY:499"}
    with pytest.raises(loadstate.RedisError) as failed:
        cache.get_many(["key:499", "key:0"])
    assert failed.value.redis_code in (RedisCode.ECONNECT, RedisCode.EDOWN, RedisCode.ETIMEDOUT, RedisCode.EREFUSED)


def test_a_cache_made_while_redis_is_down_connects_when_it_starts(rt, server):
    server.stop()
    cache = rt.redis_cache(server.url, reconnect_max=RECONNECT_MAX, connect_timeout=1)
    with pytest.raises(loadstate.RedisError):
        cache.put("k", b"v")
    server.start()
    wait_for(lambda: connected(cache), "the cache connects")
    cache.put("k", b"v")
    assert cache["k"] == b"v"


def test_a_value_over_max_value_bytes_is_not_stored(rt, server):
    counting = Counting(rt, b"")
    cache = open_cache(rt, server, max_value_bytes=16)
    with pytest.raises(loadstate.RedisError) as failed:
        cache.put("k", b"x" * 17)
    assert failed.value.redis_code == RedisCode.ETOOBIG
    assert cache.get("k") is None
    assert rt.loadable(counting.loader).load(b"y" * 17, cache=cache).value(WAIT) == b"y" * 17
    assert entry_names(server) == []


def test_a_front_memory_tier_serves_reads_and_drops_invalidated_entries(rt, other_rt, server):
    cache = open_cache(rt, server, memory_max_entries=100, memory_ttl=60)
    other_cache = open_cache(other_rt, server)
    cache["k"] = b"v"
    assert cache["k"] == b"v"
    assert cache.stats().entries == 1
    other_cache.invalidate("k")
    wait_for(lambda: cache.status().invalidations == 1, "the invalidation reaches the first runtime")
    entry = cache.entry("k")
    assert entry is not None and entry.stale


def test_threads_read_and_write_a_redis_cache_at_once(rt, server):
    cache = open_cache(rt, server, codec=loadstate.TEXT)
    cache["shared"] = "v"
    failures: List[BaseException] = []

    def work(number: int) -> None:
        try:
            for i in range(50):
                cache[f"{number}/{i}"] = str(i)
                assert cache["shared"] == "v" and cache[f"{number}/{i}"] == str(i)
        except BaseException as exc:  # reported by the test thread
            failures.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT)
    assert failures == [] and len(cache) == 8 * 50 + 1


def test_a_redis_cache_of_a_poll_mode_runtime_works_from_the_dispatching_thread(poll_rt, server):
    cache = poll_rt.redis_cache(server.url, key_prefix="test:")
    cache["k"] = b"v"  # waits for the runtime's loop thread, not for a dispatch
    assert cache["k"] == b"v"
    counting = Counting(poll_rt, b"loaded ")
    load = poll_rt.loadable(counting.loader).load(b"k2", cache=cache, policy=CachePolicy.CACHE_FIRST, fresh=60)
    assert load.value(WAIT) == b"loaded k2"
    wait_for(lambda: cache.get("k2") == b"loaded k2", "the result is stored")


def test_a_redis_cache_under_asyncio(server):
    async def main() -> None:
        async with loadstate.Runtime(loadstate.Delivery.POLL) as rt:
            cache = rt.redis_cache(server.url, key_prefix="test:", codec=loadstate.JSON)

            async def fetch(job: loadstate.Job) -> dict:
                await asyncio.sleep(0)
                return {"id": job.request}

            users = rt.loadable(rt.loader(fetch, codec=loadstate.JSON))
            assert await users.get(7, cache=cache, cache_key="user:7", share=True) == {"id": 7}
            wait_for(lambda: cache.get("user:7") == {"id": 7}, "the result is stored")
            state = await users.load(7, cache=cache, cache_key="user:7", policy=CachePolicy.CACHE_FIRST, fresh=60)
            assert state.from_cache and state.value == {"id": 7}

    asyncio.run(main())


def test_a_unix_socket_url_reaches_the_same_server(rt, server):
    cache = rt.redis_cache(f"unix://{server.socket}", key_prefix="test:")
    cache["k"] = b"through the socket"
    assert server.command("GET", redis_name("test:", "v:", "k")) is not None
    assert open_cache(rt, server)["k"] == b"through the socket"


def test_a_password_in_the_url_is_sent_and_a_wrong_one_is_a_redis_error(rt):
    with RedisServer(password="s3cret") as server:
        good = rt.redis_cache(server.url.replace("redis://", "redis://:s3cret@"), key_prefix="test:")
        good["k"] = b"v"
        assert good["k"] == b"v"
        bad = rt.redis_cache(server.url.replace("redis://", "redis://:wrong@"), key_prefix="test:",
                             reconnect_max=RECONNECT_MAX)
        with pytest.raises(loadstate.RedisError) as failed:
            bad["k"] = b"v"
        assert failed.value.redis_code == RedisCode.EAUTH, failed.value


def test_redis_cache_options_are_checked(rt, server):
    for url in ("http://127.0.0.1/", "redis://127.0.0.1:notaport/"):
        with pytest.raises(loadstate.InvalidArgument):
            rt.redis_cache(url)
    with pytest.raises(loadstate.NotSupported, match="TLS"):
        rt.redis_cache("rediss://127.0.0.1:6380/")
    with pytest.raises(loadstate.InvalidArgument):
        rt.redis_cache(server.url, max_value_bytes=loadstate.VALUE_MAX + 1)
    with pytest.raises(loadstate.InvalidArgument):
        rt.redis_cache(server.url, key_prefix="a\0b")
    with pytest.raises(loadstate.InvalidArgument):
        rt.redis_cache(server.url, lease=-1)
    with pytest.raises(loadstate.InvalidArgument):
        rt.redis_cache(server.url, memory_max_entries=-1)
    with pytest.raises(TypeError):
        rt.redis_cache(server.url, ttl="1s")  # type: ignore[arg-type]
    cache = loadstate.RedisCache(rt, server.url, key_prefix=b"bytes:", codec=loadstate.TEXT)
    cache["k"] = "v"
    assert entry_names(server) == [redis_name("bytes:", "v:", "k")]


def test_cache_calls_from_a_loop_callback_are_refused(rt, server):
    cache = open_cache(rt, server)
    seen: List[BaseException] = []
    done = threading.Event()

    def on_loop(job: loadstate.Job) -> bytes:
        for call in (lambda: cache.get("k"), lambda: cache.get_many(["k"])):
            try:
                call()
            except loadstate.Error as exc:
                seen.append(exc)
        done.set()
        return b""

    rt.loadable(rt.loader(on_loop, inline=True)).load(b"").value(WAIT)
    assert done.is_set() and len(seen) == 2 and all(isinstance(exc, loadstate.WrongState) for exc in seen)


def test_a_closed_redis_cache_and_its_status(rt, server):
    cache = open_cache(rt, server)
    status = cache.status()
    assert status.connected and status.subscribed and status.connects >= 2 and status.last_error_code is None
    assert status.last_error == ""
    cache.close()
    cache.close()
    with pytest.raises(loadstate.NotFound):
        cache.status()


def test_redis_errors_pickle_and_are_made_for_their_code():
    error = loadstate.RedisError(-11, "redis failed", "cache put", RedisCode.EDOWN, "not connected")
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.code, copy.redis_code, copy.redis_message, str(copy)) == (
        -11, RedisCode.EDOWN, "not connected", str(error))
    assert "EDOWN" in str(error) and "not connected" in str(error)
    assert "RedisCode.EDOWN" in repr(error)
    assert isinstance(loadstate.error_for_code(-11, "m"), loadstate.RedisError)
    assert loadstate.error_for_code(-11, "m").redis_code is None
    assert loadstate.Domain.REDIS == 6 and loadstate.Code.EREDIS == -11 and RedisCode.EQUEUE == 8
