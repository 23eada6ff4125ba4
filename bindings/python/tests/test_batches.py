"""Calls deferred into batches on the attached asyncio loop (lds_runtime_submit): one foreign call for
many loads and inline-loader completions, with the order of calls kept and every refusal reported."""

from __future__ import annotations

import asyncio
import threading

import pytest
from conftest import WAIT

import loadstate
from loadstate import Delivery, Flags, Status


def run(coroutine):
    return asyncio.run(asyncio.wait_for(coroutine, WAIT))


def on_loop(errors, body):
    """Runs ``await body(rt)`` with a POLL runtime attached to a new asyncio loop; nothing may be reported."""
    async def main():
        async with loadstate.Runtime(Delivery.POLL, on_error=errors) as rt:
            return await body(rt)

    result = run(main())
    assert errors.items == []
    return result


def echo_cell(rt):
    """A cell whose inline loader answers with the request."""
    return rt.loadable(rt.loader(lambda job: job.raw_request, inline=True))


class SubmitSpy:
    """Wraps a runtime's lds_runtime_submit and records how many calls each batch held."""

    def __init__(self, rt: loadstate.Runtime) -> None:
        self.core = rt._core
        self.real = self.core._submit
        self.batches: list = []
        self.core._submit = self

    def __call__(self, handle, ops, count, results):
        self.batches.append(count)
        return self.real(handle, ops, count, results)


def test_loads_of_one_loop_step_and_their_inline_completions_go_in_batches(errors):
    async def body(rt):
        spy = SubmitSpy(rt)
        loader = rt.loader(lambda job: job.raw_request.upper(), inline=True)
        cells = [rt.loadable(loader) for _ in range(50)]
        loads = [cell.load(b"r%d" % i) for i, cell in enumerate(cells)]
        assert spy.batches == []  # deferred until the loop's current step ends
        states = await asyncio.gather(*loads)
        assert [s.value for s in states] == [b"R%d" % i for i in range(50)]
        assert all(s.status is Status.LOADED for s in states)
        # The 50 loads in one call; the 50 completions in as few as the starts came in.
        assert spy.batches[0] == 50
        assert sum(spy.batches) == 100 and len(spy.batches) < 100

    on_loop(errors, body)


def test_async_loaders_end_their_jobs_in_batches_too(errors):
    async def body(rt):
        spy = SubmitSpy(rt)

        @rt.loader
        async def echo(job):
            await asyncio.sleep(0)
            if job.raw_request == b"big":
                return bytes(loadstate.VALUE_MAX + 1)
            return None if job.raw_request == b"none" else job.raw_request

        cells = [rt.loadable(echo) for _ in range(20)]
        states = await asyncio.gather(*(cell.load(b"r%d" % i) for i, cell in enumerate(cells)))
        assert [s.value for s in states] == [b"r%d" % i for i in range(20)]
        assert sum(spy.batches) == 40 and len(spy.batches) < 40
        # finish: nothing yielded, so the state before the load comes back (not cancelled), flagged NO_VALUE
        state = await cells[0].load(b"none")
        assert (state.status, state.value, state.flags) == (Status.LOADED, b"r0", Flags.NO_VALUE)
        # a completion the library refuses fails the job instead of leaving it LOADING
        state = await cells[1].load(b"big")
        assert (state.status, state.error_code) == (Status.ERROR, loadstate.EXCEPTION_CODE)
        assert state.error_message.startswith("TooBig")

    on_loop(errors, body)


def test_a_batch_is_submitted_while_another_thread_dispatches(errors):
    async def body(rt):
        cell = echo_cell(rt)
        core = rt._core
        # As while another thread is inside rt.dispatch(): the end of that
        # dispatch cannot submit this loop's batch, so the loop must.
        core._dispatch_thread = -1
        try:
            pending = cell.load(b"x")
            await asyncio.sleep(0)  # one loop step: the batch goes out at its end
        finally:
            core._dispatch_thread = None
        assert (await pending).value == b"x"

    on_loop(errors, body)


def test_a_later_call_submits_the_deferred_ones_first(errors):
    async def body(rt):
        cell = echo_cell(rt)
        assert (await cell.load(b"first")).value == b"first"
        pending = cell.load(b"second")
        cell.cancel()  # must reach the library after the load, not before it
        state = await pending
        assert (state.status, state.value, state.flags) == (Status.LOADED, b"first", Flags.CANCELLED)
        spy = SubmitSpy(rt)
        pending = cell.load(b"third")
        assert spy.batches == []
        cell.snapshot()  # any call: the deferred load is submitted first
        assert spy.batches == [1]
        assert (await pending).value == b"third"

    on_loop(errors, body)


def test_a_deferred_load_the_library_refuses_fails_its_await(errors):
    async def body(rt):
        loader = rt.loader(lambda job: job.raw_request, inline=True)
        cell = rt.loadable(loader)
        core = rt._core
        # Freed behind the binding's back, so only the library can tell.
        assert core.lib.dll.lds_loader_free(core.c_handle, loader.id) == 0
        pending = cell.load(b"x")
        with pytest.raises(loadstate.NotFound):
            await pending
        assert pending.done() and cell._state.waiters == []
        # What the binding knows of is still refused at the call.
        other = rt.loader(lambda job: job.raw_request, inline=True)
        other.close()
        with pytest.raises(loadstate.NotFound):
            cell.load(b"y", other)

    on_loop(errors, body)


def test_an_inline_completion_refused_as_cancelled_is_not_an_error(errors):
    async def body(rt):
        holder = {}

        def cancels_then_returns(job):
            holder["cell"].cancel()  # the job counts as cancelled from here
            return b"too late"

        cell = holder["cell"] = rt.loadable(rt.loader(cancels_then_returns, inline=True))
        state = await cell.load(b"x")
        assert (state.status, state.flags) == (Status.ABSENT, Flags.CANCELLED)
        assert cell.snapshot().status is Status.ABSENT

    on_loop(errors, body)


def test_loads_from_other_threads_are_not_deferred(errors):
    async def body(rt):
        spy = SubmitSpy(rt)
        loader = rt.loader(lambda job: job.raw_request, inline=True)
        cell = rt.loadable(loader)
        loop = asyncio.get_running_loop()
        load = await loop.run_in_executor(None, cell.load, b"from a thread")
        assert (await load).value == b"from a thread"
        assert sum(spy.batches) == 1  # the completion only, on the loop
        loader.close()
        with pytest.raises(loadstate.NotFound):
            await loop.run_in_executor(None, cell.load, b"again")

    on_loop(errors, body)


def test_closing_the_runtime_submits_then_closes(errors):
    async def main():
        rt = loadstate.Runtime(Delivery.POLL, on_error=errors)
        rt.attach()
        cell = echo_cell(rt)
        spy = SubmitSpy(rt)
        pending = cell.load(b"x")
        rt.close()
        assert spy.batches == [1]
        with pytest.raises(loadstate.Closed):
            await pending

    run(main())
    assert errors.items == []


def test_no_deferral_without_an_attached_loop(errors):
    rt = loadstate.Runtime(Delivery.POLL, on_error=errors)
    try:
        spy = SubmitSpy(rt)
        cell = echo_cell(rt)
        assert cell.load(b"sync").state(WAIT).value == b"sync"
        assert spy.batches == [] and rt._core.batch_thread is None
        assert threading.get_ident() != rt._core.batch_thread
    finally:
        rt.close()
    assert errors.items == []


def test_an_inline_completion_refused_for_its_size_fails_the_job(errors):
    async def body(rt):
        cell = rt.loadable(rt.loader(lambda job: bytes(loadstate.VALUE_MAX + 1), inline=True))
        state = await cell.load(b"x")  # never stuck in LOADING
        assert (state.status, state.error_domain, state.error_code) == (Status.ERROR, loadstate.Domain.HOST,
                                                                        loadstate.EXCEPTION_CODE)
        assert state.error_message.startswith("TooBig")

    on_loop(errors, body)


# -- the same operations, deferred into batches or made one by one --------------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

CELLS = 2
_requests = st.sampled_from([b"", b"a", b"b", b"err"])
_operations = st.lists(st.one_of(
    st.tuples(st.just("load"), st.integers(0, CELLS - 1), _requests),
    st.tuples(st.just("cancel"), st.integers(0, CELLS - 1), st.none()),
    st.tuples(st.just("reset"), st.integers(0, CELLS - 1), st.none()),
    st.tuples(st.just("set_loaded"), st.integers(0, CELLS - 1), st.sampled_from([b"v", b"w"])),
    st.tuples(st.just("set_error"), st.integers(0, CELLS - 1), st.integers(1, 3)),
    st.tuples(st.just("snapshot"), st.integers(0, CELLS - 1), st.none()),
    st.tuples(st.just("settle"), st.just(0), st.none()),
), max_size=14)


def _answer(job):
    """The inline loader of both runs: fails for requests that begin with b"err", else answers
    with the request and a mark."""
    if job.raw_request.startswith(b"err"):
        raise ValueError("refused")
    return job.raw_request + b"!"


def _apply(cells, position: int, op: str, index: int, arg):
    """Makes one operation (the script's `position`-th); a load returns its Load.

    Every request is made unique with the position: a Load cannot tell its
    own start from that of an earlier load of equal request still starting
    (see Load), which would make the settled states depend on timing.
    """
    cell = cells[index]
    if op == "load":
        return cell.load(arg + b".%d" % position)
    if op == "set_loaded":
        cell.set_loaded(arg)
    elif op == "set_error":
        cell.set_error(arg, "set")
    else:
        getattr(cell, op)()
    return None


def _fields(events) -> list:
    return [(e.type, e.status, e.flags, e.value, e.request, e.error_domain, e.error_code, e.error_message, e.attempt)
            for e in events]


def _cells(rt) -> tuple:
    """The cells of a run, each with the list its events go to, and the loads of a script."""
    loader = rt.loader(_answer, inline=True)
    logs: list = [[] for _ in range(CELLS)]
    return [rt.loadable(loader, on_event=logs[i].append) for i in range(CELLS)], logs


def _script(operations) -> list:
    """The operations, then a last load on every cell, so that each ends settled."""
    return operations + [("load", i, b"end") for i in range(CELLS)]


def _settle(load) -> None:
    """Waits for a load to settle; a load of another request may have superseded it."""
    try:
        load.state(WAIT)
    except loadstate.Superseded:
        pass


async def _settled(load) -> None:
    try:
        await load
    except loadstate.Superseded:
        pass


def _one_by_one(operations) -> list:
    """POLL mode with no asyncio loop: every call reaches the library at once."""
    with loadstate.Runtime(Delivery.POLL) as rt:
        cells, logs = _cells(rt)
        loads = []
        for position, (op, index, arg) in enumerate(_script(operations)):
            if op == "settle":
                for load in loads:
                    _settle(load)
            else:
                load = _apply(cells, position, op, index, arg)
                if load is not None:
                    loads.append(load)
        for load in loads:
            _settle(load)
        return [_fields(log) for log in logs]


def _batched(operations) -> list:
    """POLL mode on asyncio: calls between two awaits reach the library in one batch."""
    async def main():
        async with loadstate.Runtime(Delivery.POLL) as rt:
            spy = SubmitSpy(rt)
            cells, logs = _cells(rt)
            loads = []
            for position, (op, index, arg) in enumerate(_script(operations)):
                if op == "settle":
                    for load in loads:
                        await _settled(load)
                else:
                    load = _apply(cells, position, op, index, arg)
                    if load is not None:
                        loads.append(load)
            for load in loads:
                await _settled(load)
            assert spy.batches  # the last loads at least went in a batch
            return [_fields(log) for log in logs]

    return run(main())


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_operations)
def test_batched_calls_give_the_events_of_the_same_calls_made_one_by_one(operations):
    assert _batched(operations) == _one_by_one(operations)
