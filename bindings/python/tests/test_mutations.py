"""Writes (Process.mutate): optimistic values, exact rollbacks, overlapping writes, populate, invalidation."""
import asyncio
import threading

import pytest

import loadstate
from loadstate import Flags, Status
from conftest import WAIT, Jobs, Recorder


@pytest.fixture
def world(rt):
    """A memory cache, a cell that loaded b"v0" under b"k" through it, a process cell, and hand-ended loaders."""
    reads, writes = Jobs(rt), Jobs(rt)
    cache = rt.memory_cache()
    view = rt.loadable(reads.loader)
    log = Recorder(view)
    load = view.load(b"v0", cache=cache, cache_key=b"k")
    reads.next().succeed(b"v0")
    assert load.state(WAIT).value == b"v0"
    log.until(lambda e: e.status is Status.LOADED)
    proc = rt.process(writes.loader)
    return rt, cache, view, log, proc, reads, writes


def test_the_optimistic_value_is_seen_before_the_loader_runs_and_a_failure_rolls_back_exactly(rt):
    cache = rt.memory_cache()
    reads = Jobs(rt)
    view = rt.loadable(reads.loader)
    log = Recorder(view)
    load = view.load(b"v0", cache=cache, cache_key=b"k")
    reads.next().succeed(b"v0")
    loaded = load.state(WAIT)
    log.until(lambda e: e.status is Status.LOADED)
    before = cache.entry(b"k")
    seen = []

    def write(job):
        # Called on the loop thread after the optimistic value was applied.
        seen.append((cache.get(b"k"), view.latest.value, view.latest.optimistic))
        job.detach()
        jobs.append(job)
        started.set()

    jobs = []
    started = threading.Event()
    proc = rt.process(rt.loader(write, inline=True))
    run = proc.mutate(request=b"save", optimistic={b"k": b"opt"}, cache=cache)
    shown = log.next()
    assert (shown.status, shown.value, shown.request, shown.flags) == (Status.LOADED, b"opt", b"v0", Flags.OPTIMISTIC)
    assert shown.optimistic and not shown.rolled_back
    assert started.wait(WAIT)
    assert seen == [(b"opt", b"opt", True)]
    jobs[0].fail(7, "refused")
    assert run.state(WAIT).status is Status.FAILED
    back = log.next()
    assert (back.status, back.value, back.flags, back.updated_at_ms) == (Status.LOADED, b"v0", Flags.ROLLED_BACK,
                                                                         loaded.updated_at_ms)
    assert back.rolled_back and not back.optimistic
    assert cache.entry(b"k") == before


def test_an_absent_entry_is_absent_again_after_a_failure(rt):
    cache = rt.memory_cache()
    writes = Jobs(rt)
    proc = rt.process(writes.loader)
    run = proc.mutate(optimistic=[(cache, "new", b"opt")])
    job = writes.next()
    assert cache.get(b"new") == b"opt"
    job.fail(7, "refused")
    assert run.state(WAIT).status is Status.FAILED
    assert cache.get(b"new") is None


@pytest.mark.parametrize("newer_first", [False, True])
def test_two_failing_writes_leave_the_confirmed_value_in_either_order(world, newer_first):
    rt, cache, view, log, proc, reads, writes = world
    other = rt.process(writes.loader)
    first = proc.mutate(optimistic={b"k": b"opt1"}, cache=cache)
    job1 = writes.next()
    second = other.mutate(optimistic={b"k": b"opt2"}, cache=cache)
    job2 = writes.next()
    assert [e.value for e in log.take(2)] == [b"opt1", b"opt2"]
    for job in ([job2, job1] if newer_first else [job1, job2]):
        job.fail(7, "refused")
    assert first.state(WAIT).status is Status.FAILED and second.state(WAIT).status is Status.FAILED
    last = log.until(lambda e: e.value == b"v0")[-1]
    assert last.flags == Flags.ROLLED_BACK
    assert cache.get(b"k") == b"v0"
    assert view.latest.value == b"v0" and not view.latest.optimistic


@pytest.mark.parametrize("order, want", [
    ("older fails, newer succeeds", b"opt2"),
    ("newer fails, older succeeds", b"opt1"),
    ("older succeeds, newer fails", b"opt1"),
    ("newer succeeds, older fails", b"opt2"),
])
def test_one_write_fails_and_one_succeeds(world, order, want):
    rt, cache, view, log, proc, reads, writes = world
    other = rt.process(writes.loader)
    first = proc.mutate(optimistic={b"k": b"opt1"}, cache=cache)
    job1 = writes.next()
    second = other.mutate(optimistic={b"k": b"opt2"}, cache=cache)
    job2 = writes.next()
    log.take(2)
    jobs = {"older": (job1, first), "newer": (job2, second)}
    for step in order.split(", "):
        which, outcome = step.split(" ")
        job, run = jobs[which]
        if outcome == "fails":
            job.fail(7, "refused")
            assert run.state(WAIT).status is Status.FAILED
        else:
            job.succeed(b"ignored")
            assert run.state(WAIT).status is Status.FINISHED
    assert cache.get(b"k") == want
    assert view.latest.value == want and not view.latest.optimistic


def test_a_load_finishing_during_the_write_stays_after_its_failure(world):
    rt, cache, view, log, proc, reads, writes = world
    view.load(b"r", cache=cache, cache_key=b"k")
    read = reads.next()
    run = proc.mutate(optimistic={b"k": b"opt"}, cache=cache)
    job = writes.next()
    shown = log.until(lambda e: e.optimistic)[-1]
    assert shown.value == b"opt" and shown.refreshing
    read.succeed(b"newer")
    assert log.until(lambda e: e.value == b"newer")[-1].flags == Flags.NONE
    job.fail(7, "refused")
    assert run.state(WAIT).status is Status.FAILED
    assert log.pending() == []
    assert cache.get(b"k") == b"newer" and view.latest.value == b"newer"


@pytest.mark.parametrize("stop", ["cancel", "reset"])
def test_cancel_and_reset_of_the_process_cell_roll_back(world, stop):
    rt, cache, view, log, proc, reads, writes = world
    proc.mutate(optimistic={b"k": b"opt"}, cache=cache)
    writes.next()
    assert log.next().optimistic
    getattr(proc, stop)()
    back = log.next()
    assert (back.value, back.flags) == (b"v0", Flags.ROLLED_BACK)
    assert cache.get(b"k") == b"v0"


def test_populate_stores_the_result_in_persistent_and_memory_caches_and_the_file_never_holds_the_optimistic_value(
        rt, tmp_path):
    disk = rt.persistent_cache(tmp_path / "c.db")
    memory = rt.memory_cache()
    reads, writes = Jobs(rt), Jobs(rt)
    view = rt.loadable(reads.loader)
    log = Recorder(view)
    view.load(b"v0", cache=disk, cache_key=b"k")
    reads.next().succeed(b"v0")
    log.until(lambda e: e.status is Status.LOADED)
    proc = rt.process(writes.loader)
    run = proc.mutate(optimistic=[(disk, b"k", b"opt"), (memory, b"m", b"opt")], populate=True)
    job = writes.next()
    assert log.next().optimistic
    assert disk.get(b"k") == b"v0" and memory.get(b"m") == b"opt"
    with loadstate.Runtime() as other:
        assert other.persistent_cache(tmp_path / "c.db").get(b"k") == b"v0"
    job.succeed(b"server")
    assert run.state(WAIT).status is Status.FINISHED
    shown = log.next()
    assert (shown.value, shown.flags) == (b"server", Flags.NONE)
    assert disk.get(b"k") == b"server" and memory.get(b"m") == b"server"


def test_success_invalidates_prefixes_and_their_cells_reload(world):
    rt, cache, view, log, proc, reads, writes = world
    run = proc.mutate(optimistic={b"item": b"opt"}, cache=cache, invalidate=[(cache, b"k")])
    writes.next().succeed(b"")
    assert run.state(WAIT).status is Status.FINISHED
    stale = log.next()
    assert (stale.value, stale.stale, stale.refreshing) == (b"v0", True, True)
    reads.next().succeed(b"v1")
    assert log.next().value == b"v1"


def test_bad_writes_raise_and_show_nothing(world):
    rt, cache, view, log, proc, reads, writes = world
    too_many = [(cache, b"k%d" % i, b"v") for i in range(loadstate.MUTATION_KEYS_MAX + 1)]
    with pytest.raises(loadstate.InvalidArgument):
        proc.mutate(optimistic=too_many)
    with pytest.raises(TypeError):
        proc.mutate(optimistic=[("not a cache", b"k", b"v")])
    with loadstate.Runtime() as other:
        with pytest.raises(loadstate.InvalidArgument):
            proc.mutate(optimistic=[(other.memory_cache(), b"k", b"v")])
    assert cache.get(b"k") == b"v0" and log.pending() == [] and writes.empty()


def test_mutate_is_awaitable_like_run(rt):
    cache = rt.memory_cache()

    async def main():
        proc = rt.process(rt.loader(lambda job: b"done"))
        state = await proc.mutate(optimistic={"k": b"opt"}, cache=cache, populate=True, kind=4)
        return state

    state = asyncio.run(main())
    assert (state.status, state.kind) == (Status.FINISHED, 4)
    assert cache.get(b"k") == b"done"


def test_a_redis_cache_takes_only_the_confirmed_value(rt):
    from redis_server import RedisServer
    from test_redis import open_cache, wait_for

    with RedisServer() as server, loadstate.Runtime() as other:
        cache = open_cache(rt, server)
        reader = open_cache(other, server)
        reads, writes = Jobs(rt), Jobs(rt)
        view = rt.loadable(reads.loader)
        log = Recorder(view)
        view.load(b"v0", cache=cache, cache_key=b"k")
        reads.next().succeed(b"v0")
        log.until(lambda e: e.status is Status.LOADED and not e.refreshing)
        wait_for(lambda: reader.get(b"k") == b"v0", "the loaded value reaches Redis")
        run = rt.process(writes.loader).mutate(optimistic=[(cache, b"k", b"opt")], populate=True)
        job = writes.next()
        assert log.until(lambda e: e.optimistic)[-1].value == b"opt"
        assert reader.get(b"k") == b"v0" and cache.get(b"k") == b"v0"
        job.succeed(b"server")
        assert run.state(WAIT).status is Status.FINISHED
        assert log.until(lambda e: e.value == b"server")[-1].flags == Flags.NONE
        wait_for(lambda: reader.get(b"k") == b"server", "the confirmed value reaches Redis")
