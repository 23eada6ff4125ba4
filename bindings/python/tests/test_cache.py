"""Caches and shared loads through the binding."""

from __future__ import annotations

import sys
import threading
import time
from unittest import mock

import pytest
from conftest import WAIT, Jobs, Recorder

import loadstate
from loadstate import Status


def test_memory_cache_puts_gets_and_evicts_the_least_recently_used(rt):
    with rt.memory_cache("users", max_entries=2, codec=loadstate.JSON) as cache:
        cache["a"] = {"id": 1}
        cache[b"b"] = [2]
        assert cache["a"] == {"id": 1}     # a is now the most recently used
        cache["c"] = 3                      # evicts b
        assert "b" not in cache and cache.entry("c").value == 3
        entry = cache.entry("a")
        assert entry.expires_at_ms == 0 and not entry.stale and entry.stored_at_ms > 0
        assert cache.remove("a") and not cache.remove("a")
        with pytest.raises(KeyError):
            cache["a"]
        stats = cache.stats()
        assert (stats.evictions, stats.entries) == (1, 1)
        cache.clear()
        assert cache.stats().entries == 0
    with pytest.raises(loadstate.NotFound):
        cache.entry("c")


@pytest.mark.parametrize("kind", ["memory", "persistent"])
def test_get_many_gives_the_keys_found_with_their_values(rt, tmp_path, kind):
    cache = rt.memory_cache(codec=loadstate.JSON) if kind == "memory" else \
        rt.persistent_cache(tmp_path / "cache.db", codec=loadstate.JSON)
    with cache:
        cache["a"] = {"id": 1}
        cache[b"b"] = [2]
        cache[""] = None
        assert cache.get_many(["a", b"b", "missing", "", "a"]) == {"a": {"id": 1}, b"b": [2], "": None}
        assert cache.get_many([]) == {}
        stats = cache.stats()
        assert (stats.hits, stats.misses) == (4, 1)
        # More keys than one call takes: asked in batches of CACHE_GET_MANY_MAX.
        many = [f"k{i}" for i in range(loadstate.CACHE_GET_MANY_MAX * 2 + 5)]
        for key in many[::3]:
            cache[key] = key
        assert cache.get_many(many) == {key: key for key in many[::3]}
        with pytest.raises(TypeError):
            cache.get_many([1])
    with pytest.raises(loadstate.NotFound):
        cache.get_many(["a"])


@pytest.mark.parametrize("kind", ["memory", "persistent"])
def test_reads_and_puts_take_every_key_form_and_value_size(rt, tmp_path, kind):
    # Reads and puts call the library without ctypes' argument conversion: what
    # they pass must still arrive whole, and what is too big must be refused
    # before the call.
    cache = rt.memory_cache() if kind == "memory" else rt.persistent_cache(tmp_path / "cache.db")
    buffer = 16 * 1024  # the cache's read buffer: larger values take a second read
    with cache:
        for size in (0, 1, buffer - 1, buffer, buffer + 1, 1 << 20):
            value = bytes(range(256)) * (size // 256) + bytes(size % 256)
            for key in (f"k{size}", f"b{size}".encode(), bytearray(f"a{size}", "ascii"),
                        memoryview(f"m{size}".encode())):
                cache[key] = value
                assert cache[key] == value and cache.get(key) == value and key in cache
        cache[""] = b"empty key"
        assert cache[b""] == b"empty key"
        hits, misses = cache.stats().hits, cache.stats().misses
        # 'in' copies no value out: not even one larger than the read buffer.
        with mock.patch.object(cache, "_read_large", side_effect=AssertionError("'in' read the value")):
            assert f"k{1 << 20}" in cache and "absent" not in cache and 7 not in cache  # type: ignore[operator]
        assert (cache.stats().hits, cache.stats().misses) == (hits + 1, misses + 1)
        # A value over 64 KiB is put through the call that releases the GIL.
        with mock.patch.object(cache, "_put_value", side_effect=AssertionError("a large put kept the GIL")):
            cache["large"] = bytes(64 * 1024 + 1)
        assert cache["large"] == bytes(64 * 1024 + 1)
        with pytest.raises(TypeError, match="key"):
            cache[1] = b"x"  # type: ignore[index]
        too_big = bytes(loadstate.VALUE_MAX + 1)
        with pytest.raises(loadstate.TooBig):
            cache[too_big]
        with pytest.raises(loadstate.TooBig):
            cache[too_big] = b"x"
        with pytest.raises(loadstate.TooBig):
            cache["big"] = too_big
        del too_big
        assert "big" not in cache
    with pytest.raises(loadstate.NotFound):
        cache["k0"]
    with pytest.raises(loadstate.NotFound):
        cache["k0"] = b"x"


def test_a_put_or_a_read_of_bytes_is_one_python_call(rt):
    # cache[key] = value and cache[key] are the hot paths: one Python frame each, with no codec call
    # for a bytes value through BYTES (ctypes' and Python's costs per call are those of the put).
    with rt.memory_cache() as cache:
        calls = []

        def profile(frame, event, arg):
            if event == "call":
                calls.append(frame.f_code.co_name)

        sys.setprofile(profile)
        try:
            cache[b"k"] = b"v"
            cache["s"] = b"w"
            value = cache[b"k"]
            text = cache["s"]
        finally:
            sys.setprofile(None)
        assert (value, text) == (b"v", b"w")
        assert calls == ["put", "put", "read", "read"]


@pytest.mark.parametrize("kind", ["memory", "persistent"])
def test_puts_refuse_what_they_cannot_store_naming_the_parameter(rt, tmp_path, kind):
    cache = rt.memory_cache() if kind == "memory" else rt.persistent_cache(tmp_path / "cache.db")
    with cache, rt.memory_cache(codec=loadstate.TEXT) as text:
        for put in (cache.put, cache.__setitem__):
            with pytest.raises(TypeError, match="^key must be bytes or str, not int$"):
                put(1, b"x")  # type: ignore[arg-type]
            with pytest.raises(TypeError, match="^value: the bytes codec takes bytes.* not str"):
                put("k", "a str")  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="^value: the text codec takes str or None, not bytes$"):
            text["k"] = b"bytes"  # type: ignore[assignment]
        cache["k"] = None  # type: ignore[assignment]
        cache.put("b", bytearray(b"ba"))  # type: ignore[arg-type]
        text["t"] = "\u00e9"
        assert (cache["k"], cache["b"], text["t"], len(cache), len(text)) == (b"", b"ba", "\u00e9", 2, 1)


@pytest.mark.parametrize("kind", ["memory", "persistent"])
def test_len_bool_and_iteration_count_only_live_entries(rt, tmp_path, kind):
    ttl = 0.05
    cache = rt.memory_cache(ttl=ttl) if kind == "memory" else rt.persistent_cache(tmp_path / "c.db", ttl=ttl)
    with cache:
        assert (len(cache), bool(cache)) == (0, False)
        cache["a"] = b"1"
        cache["b"] = b"2"
        assert (len(cache), bool(cache), sorted(cache)) == (2, True, [b"a", b"b"])
        time.sleep(ttl * 3)  # expiry is the clock itself: there is no event to wait on
        assert cache.stats().entries == 2  # still held: no get has dropped them
        assert (len(cache), bool(cache), list(cache), dict(cache), cache == {}) == (0, False, [], {}, True)
        with pytest.raises(KeyError):
            cache.popitem()
        cache["c"] = b"3"
        assert (len(cache), bool(cache), list(cache)) == (1, True, [b"c"])
        assert cache.popitem() == (b"c", b"3")
        assert (len(cache), bool(cache)) == (0, False)


def test_len_counts_without_a_walk_when_nothing_can_expire_and_bool_stops_at_the_first_entry(rt):
    with rt.memory_cache() as forever, rt.memory_cache(ttl=60) as expiring:
        with mock.patch.object(forever, "_live_count", side_effect=AssertionError("walked")):
            assert len(forever) == 0
            forever["k"] = b"v"
            assert len(forever) == 1
        counted = []
        real = expiring._live_count
        with mock.patch.object(expiring, "_live_count", side_effect=lambda limit: counted.append(limit) or real(limit)):
            assert (len(expiring), bool(expiring)) == (0, False)
            expiring["k"] = b"v"
            expiring["j"] = b"v"
            assert (len(expiring), bool(expiring), bool(forever)) == (2, True, True)
        assert counted == [0, 1, 0, 1]


def test_a_codec_may_encode_to_any_bytes_like_value(rt):
    codec = loadstate.Codec("bytearray text", lambda value: bytearray(value, "utf-8"), lambda data: data.decode())
    with rt.memory_cache(codec=codec) as cache:
        cache["greeting"] = "hello"
        assert cache["greeting"] == "hello"


def test_persistent_cache_keeps_entries_across_runtimes(tmp_path):
    path = tmp_path / "cache.db"
    with loadstate.Runtime() as rt:
        rt.persistent_cache(path, codec=loadstate.TEXT).put("greeting", "hello")
    with loadstate.Runtime() as rt:
        assert rt.persistent_cache(path, codec=loadstate.TEXT)["greeting"] == "hello"
    assert path.stat().st_mode & 0o777 == 0o600


def test_a_damaged_persistent_cache_is_refused_unless_replaced(tmp_path, rt):
    path = tmp_path / "not-a-cache.db"
    path.write_bytes(b"this is no database" * 100)
    with pytest.raises(loadstate.IOFailure):
        rt.persistent_cache(path)
    with rt.persistent_cache(path, replace_damaged=True) as cache:
        assert cache.get("anything") is None


def test_shared_loads_run_the_loader_once_for_every_cell(rt):
    runs = []
    release = threading.Event()

    @rt.loader
    def slow(job):
        runs.append(job.request)
        release.wait(WAIT)
        return b"result of " + job.request

    cells = [rt.loadable(slow) for _ in range(3)]
    logs = [Recorder(cell) for cell in cells]
    loads = [cell.load(b"same", share=True) for cell in cells]
    for log in logs:
        assert log.next().status is Status.LOADING
    release.set()
    assert [load.state(WAIT).value for load in loads] == [b"result of same"] * 3
    assert runs == [b"same"]


def test_a_shared_job_is_cancelled_only_when_its_last_cell_leaves(rt):
    jobs = Jobs(rt)
    first, second = rt.loadable(jobs.loader), rt.loadable(jobs.loader)
    first_log, second_log = Recorder(first), Recorder(second)
    first.load(b"key", share=True)
    job = jobs.next()
    first_log.next()
    second.load(b"key", share=True)
    second_log.next()
    first.cancel()
    assert first_log.next().cancelled
    assert not job.cancelled and jobs.cancelled == []
    job.succeed(b"for the one left")
    assert second_log.next(timeout=2).value == b"for the one left"
    assert jobs.empty()


@pytest.fixture
def counted(rt):
    """A loader that counts its runs and answers with the request and the run number."""
    runs = []

    def answer(job):
        runs.append(job.raw_request)
        return job.raw_request + b"#%d" % len(runs)

    return rt.loader(answer), runs


def test_load_only_stores_and_cache_first_serves_a_fresh_entry_without_loading(rt, counted):
    loader, runs = counted
    cache = rt.memory_cache()
    cell = rt.loadable(loader)
    assert cell.load(b"k", cache=cache).state(WAIT).value == b"k#1"
    assert cache.entry(b"k").value == b"k#1"
    log = Recorder(cell)
    state = cell.load(b"k", cache=cache, policy=loadstate.CachePolicy.CACHE_FIRST, fresh=60).state(WAIT)
    assert (state.value, state.from_cache, state.stale, state.attempt) == (b"k#1", True, False, 0)
    assert [e.seq for e in log.take(1)] == [state.seq] and runs == [b"k"]
    # With no fresh time nothing is fresh: cache-first loads again.
    assert cell.load(b"k", cache=cache, policy=loadstate.CachePolicy.CACHE_FIRST).state(WAIT).value == b"k#2"


def test_cache_then_load_shows_the_entry_then_revalidates(rt, counted):
    loader, runs = counted
    cache = rt.memory_cache()
    cache.put(b"k", b"cached")
    cell = rt.loadable(loader)
    log = Recorder(cell)
    final = cell.load(b"k", cache=cache, policy=loadstate.CachePolicy.CACHE_THEN_LOAD).state(WAIT)
    events = log.until(lambda e: e.seq == final.seq)
    assert (events[0].status, events[0].value, events[0].from_cache) == (Status.LOADED, b"cached", True)
    assert any(e.refreshing and e.value == b"cached" for e in events[:-1])  # revalidating over it
    assert (final.value, final.from_cache, final.refreshing) == (b"k#1", False, False)
    assert cache.entry(b"k").value == b"k#1"


def test_a_failed_revalidation_keeps_the_cached_value_with_the_error(rt):
    @rt.loader
    def down(job):
        raise loadstate.LoadFailed(503, "down")

    cache = rt.memory_cache()
    cache.put(b"k", b"cached")
    state = rt.loadable(down).load(b"k", cache=cache, policy=loadstate.CachePolicy.CACHE_THEN_LOAD).state(WAIT)
    assert (state.status, state.value, state.from_cache) == (Status.LOADED, b"cached", True)
    assert (state.error_domain, state.error_code, state.error_message) == (loadstate.Domain.HOST, 503, "down")
    assert state.error.code == 503


def test_cache_only_serves_the_entry_or_fails_not_found(rt, counted):
    loader, runs = counted
    cache = rt.memory_cache(codec=loadstate.BYTES)
    cell = rt.loadable(loader)
    missing = cell.load(b"k", cache=cache, policy=loadstate.CachePolicy.CACHE_ONLY).state(WAIT)
    assert (missing.status, missing.error_domain, missing.error_code) == (
        Status.ERROR, loadstate.Domain.LOADSTATE, loadstate.NotFound.code)
    cache.put(b"other key", b"v")
    hit = cell.load(b"ignored", cache=cache, cache_key="other key", policy=loadstate.CachePolicy.CACHE_ONLY)
    assert (hit.state(WAIT).value, hit.state(WAIT).from_cache) == (b"v", True)
    assert runs == []


def test_invalidation_reloads_the_cells_showing_the_entries(rt, counted):
    loader, runs = counted
    cache = rt.memory_cache()
    users, posts = rt.loadable(loader), rt.loadable(loader)
    users.load(b"user:1", cache=cache).state(WAIT)
    posts.load(b"post:1", cache=cache).state(WAIT)
    user_log, post_log = Recorder(users), Recorder(posts)
    cache.invalidate("user:")
    reloading, reloaded = user_log.take(2)
    assert (reloading.value, reloading.stale, reloading.refreshing) == (b"user:1#1", True, True)
    assert (reloaded.value, reloaded.stale, reloaded.refreshing) == (b"user:1#3", False, False)
    assert runs == [b"user:1", b"post:1", b"user:1"]
    posts.set_loaded(b"marker")           # posts saw nothing before this
    assert post_log.next().value == b"marker"


def test_a_cache_of_another_runtime_is_refused(rt, counted):
    loader, _ = counted
    with loadstate.Runtime() as other, pytest.raises(loadstate.InvalidArgument):
        rt.loadable(loader).load(b"k", cache=other.memory_cache())
