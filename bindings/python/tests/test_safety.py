"""Errors are never lost; closing and garbage collection never crash."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import textwrap
import threading
import weakref
from pathlib import Path

import pytest
from conftest import WAIT, Jobs, Recorder

import loadstate
from loadstate import Status

PACKAGE_ROOT = Path(__file__).resolve().parent.parent


def run_script(code: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(PACKAGE_ROOT))
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True,
                          timeout=60)


def test_an_exception_in_an_event_callback_is_reported_and_delivery_goes_on(rt, errors):
    errors.expected = True
    later = []
    cell = rt.loadable(on_event=lambda event: 1 / 0)
    cell.subscribe(later.append)
    log = Recorder(cell)
    cell.set_loaded(b"a")
    cell.set_loaded(b"b")
    assert [e.value for e in log.take(2)] == [b"a", b"b"]
    assert [e.value for e in later] == [b"a", b"b"]
    assert len(errors.items) == 2
    assert all(isinstance(exc, ZeroDivisionError) and "event callback" in where for exc, where in errors.items)


@pytest.mark.parametrize("inline", [False, True])
def test_an_exception_in_a_loader_fails_the_job_with_its_message(rt, inline):
    def broken(job):
        raise RuntimeError("disk on fire")

    state = rt.loadable(rt.loader(broken, inline=inline)).load(b"q").state(WAIT)
    assert (state.status, state.error_code, state.error_message) == (
        Status.ERROR, loadstate.EXCEPTION_CODE, "RuntimeError: disk on fire")


def test_an_exception_in_a_generator_loader_fails_after_its_partials(rt):
    def gen(job):
        yield b"part"
        raise ValueError("half way")

    cell = rt.loadable(rt.loader(gen))
    log = Recorder(cell)
    state = cell.load().state(WAIT)
    assert [e.value for e in log.take(3)] == [None, b"part", None]
    assert state.error_message == "ValueError: half way"


def test_a_loader_returning_the_wrong_type_fails_the_job(rt):
    state = rt.loadable(rt.loader(lambda job: "text without a codec")).load().state(WAIT)
    assert state.status is Status.ERROR and state.error_message.startswith("TypeError")


def test_an_exception_from_a_loader_whose_job_no_longer_runs_is_reported(rt, errors):
    errors.expected = True
    started, release = threading.Event(), threading.Event()

    def late(job):
        started.set()
        release.wait(WAIT)
        raise LookupError("nobody listens")

    cell = rt.loadable(rt.loader(late))
    log = Recorder(cell)
    cell.load()
    log.next()
    # A job cancelled before a worker thread took it up is never run.
    assert started.wait(WAIT)
    cell.set_loaded(b"manual")        # the job is cancelled...
    log.next()
    release.set()                      # ...and then its loader raises
    assert errors.arrived.wait(WAIT)
    assert isinstance(errors.items[0][0], LookupError)
    assert "no longer runs" in errors.items[0][1]


def test_an_exception_in_a_cancel_hook_is_reported(rt, errors, jobs):
    errors.expected = True
    cell = rt.loadable(jobs.loader)
    log = Recorder(cell)
    cell.load()
    job = jobs.next()
    job.on_cancel(lambda job: [][1])
    cell.cancel()
    log.take(2)
    assert isinstance(errors.items[0][0], IndexError) and "cancel hook" in errors.items[0][1]


def test_a_value_the_codec_cannot_decode_is_reported_and_kept_as_bytes(rt, errors):
    errors.expected = True
    cell = rt.loadable(codec=loadstate.JSON, request_codec=loadstate.BYTES)
    log = Recorder(cell)
    cell._core.check(cell._core.dll.lds_loadable_set_loaded(cell._core.c_handle, cell.id, b"{not json", 9))
    assert log.next().value == b"{not json"
    assert "decoding the value" in errors.items[0][1]


def test_close_inside_a_loop_callback_is_refused(rt):
    outcome = []

    def close_here(event):
        try:
            rt.close()
        except loadstate.WrongState as exc:
            outcome.append(exc)

    cell = rt.loadable(on_event=close_here)
    log = Recorder(cell)
    cell.set_loaded(b"v")
    log.next()
    assert len(outcome) == 1 and not rt.closed


def test_closing_with_work_in_flight_cancels_it_and_wakes_waiters(errors):
    with loadstate.Runtime(on_error=errors) as rt:
        jobs = Jobs(rt)
        hooks = []
        blocked = threading.Event()

        @rt.loader
        def waits(job):
            job.on_cancel(lambda j: hooks.append("thread"))
            blocked.set()
            assert job.wait_cancelled(WAIT)
            job.yield_(b"too late")    # raises Closed: swallowed by the binding

        parked = rt.loadable(jobs.loader).load(b"parked")
        parked_job = jobs.next()
        threaded = rt.loadable(waits).load(b"blocked")
        blocked.wait(WAIT)
        cell = rt.loadable()
    assert rt.closed
    assert jobs.cancelled == [parked_job.id] and hooks == ["thread"]
    for load in (parked, threaded):
        with pytest.raises(loadstate.Closed):
            load.state(WAIT)
    with pytest.raises(loadstate.Closed):
        parked_job.succeed(b"x")
    with pytest.raises(loadstate.Closed):
        cell.set_loaded(b"x")
    with pytest.raises(loadstate.Closed):
        rt.loadable()
    rt.close()  # twice is harmless
    assert errors.items == []


def test_closing_a_poll_runtime_attached_to_asyncio_with_async_work_in_flight(errors):
    import asyncio

    async def main():
        started = asyncio.Event()
        async with loadstate.Runtime(loadstate.Delivery.POLL, on_error=errors) as rt:
            @rt.loader
            async def forever(job):
                started.set()
                await asyncio.Event().wait()

            load = rt.loadable(forever).load()
            await started.wait()
        with pytest.raises(loadstate.Closed):
            await load

    asyncio.run(asyncio.wait_for(main(), WAIT))
    assert errors.items == []


def test_loader_state_is_released_after_close_and_its_last_job(rt, jobs):
    def fn(job):
        return b"v"

    loader = rt.loader(fn, inline=True)
    cell = rt.loadable(loader)
    cell.load().state(WAIT)
    ref = weakref.ref(fn)
    from loadstate import _core
    tokens = [token for token, obj in _core._objects.items() if getattr(obj, "fn", None) is fn]
    assert len(tokens) == 1
    del fn, cell
    loader.close()
    del loader
    # free_data comes through the loop thread; a load on another loader orders us after it.
    rt.loadable(jobs.loader).load()
    jobs.next().succeed()
    gc.collect()
    assert tokens[0] not in _core._objects
    assert ref() is None


def test_a_dropped_cell_is_freed_once_no_load_on_it_is_pending(rt, jobs):
    cell = rt.loadable(jobs.loader)
    cell_id = cell.id
    cell.load(b"q")
    job = jobs.next()
    del cell
    gc.collect()
    assert cell_id in rt._core.cells           # the pending load keeps it
    job.yield_(b"part")
    job.succeed(b"v")                         # the load settles...
    other = rt.loadable(jobs.loader)
    log = Recorder(other)
    other.set_loaded(b"after")                # ...before this event, on the same thread
    log.next()
    gc.collect()
    assert cell_id not in rt._core.cells       # ...and the cell is freed
    with pytest.raises(loadstate.NotFound):
        rt._core.check(rt._core.dll.lds_loadable_cancel(rt._core.c_handle, cell_id))


def test_a_forgotten_runtime_is_closed_at_exit_and_its_jobs_cancelled():
    result = run_script("""
        import loadstate, threading
        rt = loadstate.Runtime()
        started = threading.Event()
        @rt.loader
        def waits(job):
            job.on_cancel(lambda job: print("hook ran", flush=True))
            started.set()
            job.wait_cancelled()
        cell = rt.loadable(waits)
        cell.load(b"never ends")
        started.wait(10)
        print("exiting", flush=True)
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["exiting", "hook", "ran"]
    assert result.stderr == ""


def test_garbage_collection_in_any_order_never_crashes():
    result = run_script("""
        import gc, random, threading, loadstate
        random.seed(7)
        for round in range(40):
            mode = loadstate.Delivery.POLL if round % 2 else loadstate.Delivery.LOOP
            rt = loadstate.Runtime(mode)
            held = []
            gate = threading.Event()
            @rt.loader
            def slow(job):
                gate.wait(0.2)
                yield b"partial"
                return b"v"
            inline = rt.loader(lambda job: job.detach() or held.append(job), inline=True)
            objects = [rt, slow, inline]
            for n in range(6):
                cell = rt.loadable(slow if n % 2 else inline, on_event=lambda e, objects=objects: None)
                objects.append(cell)
                objects.append(cell.load(b"x"))
                objects.append(rt.process(inline).run(n))
            if mode == loadstate.Delivery.POLL:
                rt.dispatch()
            random.shuffle(objects)
            del rt, slow, inline, cell
            while objects:
                objects.pop()
                if random.random() < 0.3:
                    gc.collect()
            gate.set()
            for job in held:
                try:
                    job.succeed(b"late")
                except loadstate.Error:
                    pass
            held.clear()
            gc.collect()
        print("ok")
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
    assert "Exception" not in result.stderr and "Traceback" not in result.stderr, result.stderr
