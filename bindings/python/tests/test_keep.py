"""Keeping the previous value while another request loads, placeholders, and the grace of memory
cache entries no cell observes."""

from __future__ import annotations

import asyncio
import time

import pytest
from conftest import WAIT, Jobs, Recorder

import loadstate
from loadstate import Flags, Status

KEPT = Flags.PREVIOUS | Flags.REFRESHING
SHOWN = Flags.PLACEHOLDER | Flags.REFRESHING
GRACE = 0.15


def loaded_a(rt, jobs):
    cell = rt.loadable(jobs.loader)
    log = Recorder(cell)
    first = cell.load(b"a")
    jobs.next().succeed(b"A")
    assert first.state(WAIT).value == b"A"
    log.until(lambda e: e.status == Status.LOADED)
    return cell, log


def test_keep_previous_across_a_request_change(rt, jobs):
    cell, log = loaded_a(rt, jobs)
    load = cell.load(b"b", keep_previous=True)
    job = jobs.next()
    kept = log.next()
    assert (kept.status, kept.flags, kept.value, kept.request) == (Status.LOADED, KEPT, b"A", b"a")
    assert kept.previous and kept.refreshing and not kept.placeholder and not kept.settled
    assert cell.snapshot().previous
    assert not load.done()
    job.succeed(b"B")
    state = load.state(WAIT)
    assert (state.status, state.flags, state.value, state.request) == (Status.LOADED, Flags.NONE, b"B", b"b")
    assert not state.previous


def test_keep_previous_failure_and_cancel(rt, jobs):
    cell, log = loaded_a(rt, jobs)
    load = cell.load(b"b", keep_previous=True)
    jobs.next().fail(7, "no")
    failed = load.state(WAIT)
    assert (failed.status, failed.value, failed.request, failed.error_code) == (Status.ERROR, None, b"b", 7)
    with pytest.raises(loadstate.LoadFailed):
        load.value()
    reload = cell.load(b"a")
    jobs.next().succeed(b"A")
    assert reload.value(WAIT) == b"A"
    log.until(lambda e: e.status == Status.LOADED and e.value == b"A")
    cancelled = cell.load(b"c", keep_previous=True)
    jobs.next()
    assert log.until(lambda e: e.previous)[-1].value == b"A"
    cell.cancel()
    restored = log.until(lambda e: e.cancelled)[-1]
    assert (restored.status, restored.value, restored.request) == (Status.LOADED, b"A", b"a")
    assert not restored.previous and not restored.refreshing
    with pytest.raises(loadstate.Cancelled):
        cancelled.value(WAIT)


def test_awaited_keep_previous_load_answers_its_own_request(rt, jobs):
    cell, log = loaded_a(rt, jobs)

    async def main():
        load = cell.load(b"b", keep_previous=True)
        job = await asyncio.to_thread(jobs.next)
        kept = (await asyncio.to_thread(lambda: log.until(lambda e: e.previous)))[-1]
        assert not load.done()
        job.succeed(b"B")
        state = await load
        getting = asyncio.ensure_future(cell.get(b"c", keep_previous=True))
        job = await asyncio.to_thread(jobs.next)
        await asyncio.to_thread(lambda: log.until(lambda e: e.previous and e.request == b"b"))
        assert not getting.done()
        job.succeed(b"C")
        return kept, state, await getting

    kept, state, value = asyncio.run(main())
    assert (kept.value, kept.request) == (b"A", b"a")
    assert (state.value, state.request, state.flags) == (b"B", b"b", Flags.NONE)
    assert value == b"C"


def test_placeholder_shown_then_replaced_and_never_cached(rt, jobs):
    cache = rt.memory_cache(codec=loadstate.JSON)
    cell = rt.loadable(jobs.loader, codec=loadstate.JSON)
    log = Recorder(cell)
    load = cell.load(b"k", cache=cache, share=True, placeholder={"name": "..."})
    job = jobs.next()
    shown = log.next()
    assert (shown.status, shown.flags, shown.value, shown.request) == (Status.LOADED, SHOWN, {"name": "..."}, b"k")
    assert shown.placeholder and not shown.previous
    other = rt.loadable(jobs.loader, codec=loadstate.JSON)
    other_log = Recorder(other)
    other.load(b"k", cache=cache, share=True)
    assert other_log.next().status == Status.LOADING
    assert "k" not in cache
    job.fail(3, "down")
    assert load.state(WAIT).status == Status.ERROR
    assert other_log.next().status == Status.ERROR
    assert jobs.empty()
    assert "k" not in cache
    again = cell.load(b"k", cache=cache, placeholder={"name": "..."})
    assert log.until(lambda e: e.placeholder)[-1].value == {"name": "..."}
    jobs.next().succeed(b'{"name":"Ada"}')
    done = again.state(WAIT)
    assert (done.flags, done.value) == (Flags.NONE, {"name": "Ada"})
    assert cache["k"] == {"name": "Ada"}


def test_placeholder_is_checked_against_the_codec(rt, jobs):
    cell = rt.loadable(jobs.loader, codec=loadstate.TEXT)
    with pytest.raises(TypeError, match="placeholder"):
        cell.load(b"k", placeholder=b"not text")
    with pytest.raises(TypeError, match="keep_previous"):
        cell.load(b"k", keep_previous=1)
    assert loadstate.LoadOptions(keep_previous=True) != loadstate.LoadOptions()


def gone(cache, key):
    """Waits until ``key`` is gone from ``cache`` (no event tells: asked every few ms); when it went."""
    deadline = time.monotonic() + WAIT
    while key in cache:
        assert time.monotonic() < deadline, f"{key!r} still cached"
        time.sleep(0.005)
    return time.monotonic()


def test_unwatched_entry_dropped_after_its_grace(rt):
    cache = rt.memory_cache(unobserved=GRACE)
    put_at = time.monotonic()
    cache["k"] = b"v"
    assert gone(cache, "k") - put_at >= GRACE - 0.002
    stats = cache.stats()
    assert (stats.expirations, stats.entries) == (1, 0)
    with pytest.raises(loadstate.InvalidArgument):
        rt.memory_cache(unobserved=-1)


def test_watched_entry_stays_until_its_cell_is_closed(rt):
    cache = rt.memory_cache(unobserved=GRACE)
    loader = rt.loader(lambda job: job.succeed(b"value"), inline=True)
    cell = rt.loadable(loader)
    assert cell.load(b"w", cache=cache).value(WAIT) == b"value"
    time.sleep(2 * GRACE)
    assert cache["w"] == b"value"
    closed_at = time.monotonic()
    cell.close()
    assert gone(cache, "w") - closed_at >= GRACE - 0.002
    assert cache.stats().expirations == 1


@pytest.mark.parametrize("how", ["plain", "keep_previous", "placeholder"])
def test_load_of_another_request_ending_without_a_value_never_answers_with_the_previous(rt, jobs, how):
    cell, log = loaded_a(rt, jobs)
    extra = {"keep_previous": True} if how == "keep_previous" else {"placeholder": b"..."} if how == "placeholder" else {}
    load = cell.load(b"b", **extra)
    jobs.next().finish()
    state = load.state(WAIT)
    # The state from before the load is back (request a), flagged: never b's answer.
    assert (state.status, state.value, state.request) == (Status.LOADED, b"A", b"a")
    assert state.no_value and state.flags == Flags.NO_VALUE
    with pytest.raises(loadstate.NoValue) as raised:
        load.value()
    assert isinstance(raised.value, loadstate.Cancelled)
    assert raised.value.request == b"b"
    assert "without a value" in str(raised.value)

    async def main():
        awaited = cell.load(b"c", **extra)
        await asyncio.to_thread(lambda: jobs.next().finish())
        shown = await awaited
        getting = asyncio.ensure_future(cell.get(b"d", **extra))
        await asyncio.to_thread(lambda: jobs.next().finish())
        with pytest.raises(loadstate.NoValue):
            await getting
        return shown

    shown = asyncio.run(main())
    assert (shown.value, shown.request, shown.no_value) == (b"A", b"a", True)
    assert cell.snapshot().value == b"A"


@pytest.mark.parametrize("how", ["plain", "keep_previous", "placeholder"])
def test_load_of_the_same_request_ending_without_a_value_has_no_value(rt, jobs, how):
    cell, log = loaded_a(rt, jobs)
    extra = {"keep_previous": True} if how == "keep_previous" else {"placeholder": b"..."} if how == "placeholder" else {}
    load = cell.load(b"a", **extra)
    jobs.next().finish()
    state = load.state(WAIT)
    assert (state.status, state.value, state.request, state.no_value) == (Status.LOADED, b"A", b"a", True)
    with pytest.raises(loadstate.NoValue):
        load.value()


def test_first_load_ending_without_a_value_settles_absent(rt, jobs):
    cell = rt.loadable(jobs.loader)
    load = cell.load(b"a", placeholder=b"...")
    jobs.next().finish()
    state = load.state(WAIT)
    assert (state.status, state.value, state.no_value) == (Status.ABSENT, None, True)
    with pytest.raises(loadstate.NoValue):
        load.value()


def test_load_with_a_yielded_value_then_finish_is_not_flagged(rt, jobs):
    cell, log = loaded_a(rt, jobs)
    load = cell.load(b"b", keep_previous=True)
    job = jobs.next()
    job.yield_(b"B1")
    job.finish()
    state = load.state(WAIT)
    assert (state.value, state.request, state.no_value) == (b"B1", b"b", False)
    assert load.value() == b"B1"
