"""anyio, on both of its backends (asyncio and trio): the same code awaits loads, streams events, runs
async def loaders and cancels loads through anyio's cancel scopes."""

from __future__ import annotations

import threading

import anyio
import pytest
from conftest import WAIT

import loadstate
from loadstate import Delivery, Flags, Status

BACKENDS = ["asyncio", "trio"]


@pytest.fixture(params=BACKENDS)
def backend(request):
    return request.param


@pytest.fixture(params=[Delivery.POLL, Delivery.LOOP])
def delivery(request):
    return request.param


def run(backend, main, *args):
    """Runs ``main(*args)`` with anyio on ``backend``, failing after WAIT seconds rather than hanging."""
    async def bounded():
        with anyio.fail_after(WAIT):
            return await main(*args)

    return anyio.run(bounded, backend=backend)


def test_a_load_and_a_get_with_a_value(errors, backend, delivery):
    async def main():
        async with loadstate.Runtime(delivery, on_error=errors) as rt:
            cell = rt.loadable(rt.loader(lambda job: {"id": job.request}, codec=loadstate.JSON))
            state = await cell.load(7)
            assert (state.status, state.value) == (Status.LOADED, {"id": 7})
            assert await cell.get(8) == {"id": 8}
            # The runtime is attached to the backend's loop or run.
            attached = rt._core.loop if backend == "asyncio" else rt._core.trio
            assert (attached is not None) == (delivery == Delivery.POLL)

    run(backend, main)
    assert errors.items == []


def test_a_failing_load_raises_load_failed(errors, backend, delivery):
    async def main():
        async with loadstate.Runtime(delivery, on_error=errors) as rt:
            @rt.loader
            async def missing(job):
                await anyio.sleep(0)
                raise loadstate.LoadFailed(404, "no such row")

            with pytest.raises(loadstate.LoadFailed) as failed:
                await rt.loadable(missing).get(b"r")
            assert (failed.value.domain, failed.value.code, failed.value.message) == (
                loadstate.Domain.HOST, 404, "no such row")

    run(backend, main)
    assert errors.items == []


def test_async_def_loaders_run_in_the_backend(errors, backend, delivery):
    async def main():
        run_thread = threading.get_ident()
        seen = []
        async with loadstate.Runtime(delivery, on_error=errors) as rt:
            @rt.loader(codec=loadstate.TEXT)
            async def greet(job):
                await anyio.sleep(0.001)  # anyio's sleep: this runs in the backend's loop or run
                seen.append(threading.get_ident())
                return f"hello, {job.request}"

            assert await rt.loadable(greet).get("anyio") == "hello, anyio"
        assert seen == [run_thread]

    run(backend, main)
    assert errors.items == []


def test_cancelling_the_awaiting_task_cancels_the_load(errors, backend, delivery):
    async def main():
        async with loadstate.Runtime(delivery, on_error=errors) as rt:
            started = anyio.Event()
            loader_cancelled = anyio.Event()

            @rt.loader
            async def slow(job):
                started.set()
                try:
                    await anyio.sleep(3600)
                except anyio.get_cancelled_exc_class():
                    loader_cancelled.set()
                    raise

            cell = rt.loadable(slow)
            cell.set_loaded(b"old")
            outcome = []
            async with cell.events() as events:
                async with anyio.create_task_group() as group:
                    scope = anyio.CancelScope()

                    async def waiter():
                        with scope:
                            outcome.append(await cell.get(b"new"))
                        outcome.append("cancelled" if scope.cancelled_caught else "not cancelled")

                    group.start_soon(waiter)
                    await started.wait()
                    scope.cancel()
                await loader_cancelled.wait()
                async for event in events:
                    if event.cancelled:
                        break
            assert outcome == ["cancelled"]
            assert (event.status, event.value, event.flags) == (Status.LOADED, b"old", Flags.CANCELLED)

    run(backend, main)
    assert errors.items == []


def test_a_deadline_cancels_the_load(errors, backend, delivery):
    async def main():
        async with loadstate.Runtime(delivery, on_error=errors) as rt:
            @rt.loader
            def slow(job):
                job.wait_cancelled(WAIT)  # a worker thread, until the load is cancelled

            cell = rt.loadable(slow)
            async with cell.events() as events:
                with anyio.move_on_after(0.05) as scope:
                    await cell.get(b"q")
                assert scope.cancelled_caught
                async for event in events:
                    if event.settled:
                        break
            assert event.status is Status.ABSENT and event.cancelled

    run(backend, main)
    assert errors.items == []


def test_events_stream(errors, backend, delivery):
    async def main():
        async with loadstate.Runtime(delivery, on_error=errors) as rt:
            @rt.loader
            async def steps(job):
                job.progress(1, 2)
                job.yield_(b"half")
                await anyio.sleep(0)
                return b"all"

            cell = rt.loadable(steps)
            seen = []
            async with cell.events() as events:
                cell.load(b"q")
                async for event in events:
                    seen.append((event.type.name, event.status.name, event.value))
                    if event.settled:
                        break
            assert seen == [("STATE", "LOADING", None), ("PROGRESS", "LOADING", None),
                            ("STATE", "LOADED", b"half"), ("STATE", "LOADED", b"all")]

    run(backend, main)
    assert errors.items == []


def test_many_concurrent_loads(errors, backend, delivery):
    count = 500

    async def main():
        async with loadstate.Runtime(delivery, on_error=errors) as rt:
            @rt.loader(codec=loadstate.JSON)
            async def double(job):
                await anyio.sleep(0)
                return job.request * 2

            cells = [rt.loadable(double) for _ in range(count)]
            values = {}

            async def one(i):
                values[i] = await cells[i].get(i)

            async with anyio.create_task_group() as group:
                for i in range(count):
                    group.start_soon(one, i)
            assert values == {i: 2 * i for i in range(count)}

    run(backend, main)
    assert errors.items == []


def test_a_runtime_closed_while_awaited(errors, backend, delivery):
    async def main():
        rt = loadstate.Runtime(delivery, on_error=errors)
        if delivery == Delivery.POLL:
            rt.attach()
        cell = rt.loadable(rt.loader(lambda job: job.detach(), inline=True))   # never ends by itself
        closed = []

        async def waiter(request):
            try:
                # A cell each: on one cell the load of b"b" would supersede that of b"a".
                await (cell if request == b"a" else rt.loadable(cell.loader)).get(request)
            except loadstate.Closed:
                closed.append(request)

        async with anyio.create_task_group() as group:
            for request in (b"a", b"b"):
                group.start_soon(waiter, request)
            await anyio.wait_all_tasks_blocked()   # every waiter parked
            rt.close()
        assert sorted(closed) == [b"a", b"b"]

    run(backend, main)
    assert errors.items == []
