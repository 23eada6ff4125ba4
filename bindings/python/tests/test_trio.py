"""trio: awaiting loads, event streams, async def loaders, cancellation through cancel scopes, a POLL runtime
attached to a trio run (a system task on its descriptor) and a LOOP runtime that wakes trio tasks from its
thread."""

from __future__ import annotations

import subprocess
import sys
import threading
import warnings

import pytest
import trio
import trio.testing
from conftest import WAIT

import loadstate
from loadstate import Delivery, Flags, Status

DELIVERIES = [Delivery.POLL, Delivery.LOOP]


def run(main, *args):
    """Runs ``main(*args)`` under trio, failing after WAIT seconds rather than hanging."""
    async def bounded():
        with trio.fail_after(WAIT):
            return await main(*args)

    return trio.run(bounded)


@pytest.mark.parametrize("delivery", DELIVERIES)
def test_await_a_load_and_get_a_value(errors, delivery):
    async def main():
        async with loadstate.Runtime(delivery, on_error=errors) as rt:
            assert (rt._core.trio is not None) == (delivery == Delivery.POLL)
            cell = rt.loadable(rt.loader(lambda job: {"id": job.request}, codec=loadstate.JSON))
            state = await cell.load(7)
            assert (state.status, state.value, state.request) == (Status.LOADED, {"id": 7}, 7)
            assert await cell.get(8) == {"id": 8}
            assert cell.latest.value == {"id": 8}
        assert rt.closed

    run(main)
    assert errors.items == []


@pytest.mark.parametrize("delivery", DELIVERIES)
def test_a_failing_load_raises_load_failed_or_the_loaders_exception(errors, delivery):
    async def main():
        async with loadstate.Runtime(delivery, on_error=errors) as rt:
            @rt.loader
            def missing(job):
                raise loadstate.LoadFailed(404, "no such row")

            @rt.loader
            async def broken(job):
                await trio.sleep(0)
                raise KeyError("gone")

            cell = rt.loadable(missing)
            with pytest.raises(loadstate.LoadFailed) as failed:
                await cell.get(b"r")
            assert (failed.value.domain, failed.value.code, failed.value.message) == (
                loadstate.Domain.HOST, 404, "no such row")
            with pytest.raises(KeyError, match="gone"):
                await cell.get(b"r", loader=broken)
            state = await cell.load(b"r", loader=broken)
            assert (state.status, state.error_code, state.error_message) == (
                Status.ERROR, loadstate.EXCEPTION_CODE, "KeyError: 'gone'")

    run(main)
    assert errors.items == []


@pytest.mark.parametrize("delivery", DELIVERIES)
def test_async_def_loaders_run_as_tasks_of_the_trio_run(errors, delivery):
    async def main():
        run_thread = threading.get_ident()
        token = trio.lowlevel.current_trio_token()
        seen = []
        async with loadstate.Runtime(delivery, on_error=errors) as rt:
            @rt.loader(codec=loadstate.TEXT)
            async def greet(job):
                await trio.sleep(0.001)  # a trio primitive: this runs in the trio run
                seen.append((threading.get_ident(), trio.lowlevel.current_trio_token()))
                return f"hello, {job.request}"

            @rt.loader
            async def pages(job):
                for page in (b"1", b"12"):
                    await trio.sleep(0)
                    yield page               # a partial value

            cell = rt.loadable(greet)
            assert await cell.get("trio") == "hello, trio"
            assert seen == [(run_thread, token)]
            partial = []
            other = rt.loadable(pages, on_event=lambda event: partial.append((event.value, event.partial)))
            state = await other.load(b"p")
            assert (state.status, state.value, state.partial) == (Status.LOADED, b"12", False)
            assert partial[-3:] == [(b"1", True), (b"12", True), (b"12", False)]

    run(main)
    assert errors.items == []


def test_poll_runtime_runs_every_callback_in_the_trio_run(errors):
    async def main():
        run_thread = threading.get_ident()
        threads = set()
        async with loadstate.Runtime(Delivery.POLL, on_error=errors) as rt:
            def inline(job):
                threads.add(("start", threading.get_ident()))
                job.on_cancel(lambda j: threads.add(("hook", threading.get_ident())))
                return job.request

            cell = rt.loadable(rt.loader(inline, inline=True),
                               on_event=lambda e: threads.add(("event", threading.get_ident())))
            assert (await cell.load(b"a")).value == b"a"
            pending = cell.load(b"b")
            cell.cancel()
            assert (await pending).settled
        return run_thread, threads

    run_thread, threads = run(main)
    assert {thread for _, thread in threads} == {run_thread}
    assert {kind for kind, _ in threads} >= {"start", "event"}
    assert errors.items == []


@pytest.mark.parametrize("delivery", DELIVERIES)
def test_cancelling_the_awaiting_task_cancels_the_load_and_its_loader(errors, delivery):
    async def main():
        async with loadstate.Runtime(delivery, on_error=errors) as rt:
            started = trio.Event()
            loader_cancelled = trio.Event()

            @rt.loader
            async def slow(job):
                started.set()
                try:
                    await trio.sleep(3600)
                except trio.Cancelled:
                    loader_cancelled.set()
                    raise

            cell = rt.loadable(slow)
            cell.set_loaded(b"old")
            outcome = []
            async with cell.events() as events:
                async with trio.open_nursery() as nursery:
                    scope = trio.CancelScope()

                    async def waiter():
                        with scope:
                            outcome.append(await cell.get(b"new"))
                        outcome.append("cancelled" if scope.cancelled_caught else "not cancelled")

                    nursery.start_soon(waiter)
                    await started.wait()
                    scope.cancel()
                await loader_cancelled.wait()
                async for event in events:
                    if event.cancelled:
                        break
            assert outcome == ["cancelled"]
            assert (event.status, event.value, event.flags) == (Status.LOADED, b"old", Flags.CANCELLED)
            assert (await cell.load(b"again", loader=rt.loader(lambda job: b"v", inline=True))).value == b"v"

    run(main)
    assert errors.items == []


@pytest.mark.parametrize("delivery", DELIVERIES)
def test_a_deadline_cancels_the_load(errors, delivery):
    async def main():
        async with loadstate.Runtime(delivery, on_error=errors) as rt:
            @rt.loader
            def slow(job):
                job.wait_cancelled(WAIT)  # a worker thread, until the load is cancelled

            cell = rt.loadable(slow)
            async with cell.events() as events:
                with trio.move_on_after(0.05) as scope:
                    await cell.get(b"q")
                assert scope.cancelled_caught
                async for event in events:
                    if event.settled:
                        break
            assert event.status is Status.ABSENT and event.cancelled

    run(main)
    assert errors.items == []


@pytest.mark.parametrize("delivery", DELIVERIES)
def test_every_way_a_job_is_cancelled_cancels_its_trio_loader(errors, delivery):
    async def main():
        async with loadstate.Runtime(delivery, on_error=errors) as rt:
            started_send, started = trio.open_memory_channel(10)
            cancelled_send, cancelled = trio.open_memory_channel(10)

            @rt.loader
            async def slow(job):
                started_send.send_nowait(job.raw_request)
                try:
                    if job.raw_request == b"self":
                        job.cancel()
                    await trio.sleep(3600)
                except trio.Cancelled:
                    cancelled_send.send_nowait(job.raw_request)
                    raise

            cell = rt.loadable(slow)
            cell.load(b"outside")
            assert await started.receive() == b"outside"
            cell.cancel()
            assert await cancelled.receive() == b"outside"
            cell.load(b"first")
            assert await started.receive() == b"first"
            cell.load(b"second")
            assert await cancelled.receive() == b"first"
            assert await started.receive() == b"second"
            # Long enough for the job to start first: the library never starts a job that timed out before
            # its start was dispatched.
            cell.load(b"timed", timeout=0.5)
            assert await cancelled.receive() == b"second"
            assert await started.receive() == b"timed"
            assert await cancelled.receive() == b"timed"
            cell.load(b"self")
            assert await started.receive() == b"self"
            assert await cancelled.receive() == b"self"

    run(main)
    assert errors.items == []


@pytest.mark.parametrize("delivery", DELIVERIES)
def test_async_for_events(errors, delivery):
    async def main():
        async with loadstate.Runtime(delivery, on_error=errors) as rt:
            @rt.loader
            async def steps(job):
                job.progress(1, 2)
                job.yield_(b"half")
                await trio.sleep(0)
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
            stream = cell.events()
            cell.set_loaded(b"last")
            received = []
            async for event in stream:
                received.append(event.value)
                cell.close()                # the stream ends with the cell
            assert received == [b"last"]

    run(main)
    assert errors.items == []


@pytest.mark.parametrize("delivery", DELIVERIES)
def test_many_concurrent_loads(errors, delivery):
    count = 500

    async def main():
        async with loadstate.Runtime(delivery, on_error=errors) as rt:
            @rt.loader(codec=loadstate.JSON)
            async def double(job):
                await trio.sleep(0)
                return job.request * 2

            inline = rt.loader(lambda job: job.request, inline=True, codec=loadstate.JSON)
            cells = [rt.loadable(double) for _ in range(count)]
            values = {}
            states = {}

            async def one(i):
                values[i] = await cells[i].get(i)
                states[i] = await cells[i].load(-i, loader=inline)

            async with trio.open_nursery() as nursery:
                for i in range(count):
                    nursery.start_soon(one, i)
            assert values == {i: 2 * i for i in range(count)}
            assert {i: state.value for i, state in states.items()} == {i: -i for i in range(count)}

    run(main)
    assert errors.items == []


@pytest.mark.parametrize("delivery", DELIVERIES)
def test_a_runtime_closed_while_awaited_wakes_its_waiters(errors, delivery):
    async def main():
        rt = loadstate.Runtime(delivery, on_error=errors)
        if delivery == Delivery.POLL:
            rt.attach()

        @rt.loader
        def stuck(job):
            job.detach()             # never ends by itself

        cell = rt.loadable(stuck)
        outcomes = []
        stream = cell.events()

        async def waiter(load):
            try:
                await load
            except loadstate.Closed as exc:
                outcomes.append(type(exc))

        async def streamer():
            async for _ in stream:
                pass
            outcomes.append("stream ended")

        async with trio.open_nursery() as nursery:
            # Loads of two cells: on one cell the load of b"b" would supersede that of b"a".
            for target, request in ((cell, b"a"), (rt.loadable(stuck), b"b")):
                nursery.start_soon(waiter, target.load(request))
            nursery.start_soon(streamer)
            await trio.testing.wait_all_tasks_blocked()   # every waiter parked
            rt.close()
        assert sorted(map(str, outcomes)) == sorted(map(str, [loadstate.Closed, loadstate.Closed, "stream ended"]))
        with pytest.raises(loadstate.Closed):
            await cell.get(b"c")

    run(main)
    assert errors.items == []


def test_a_runtime_closed_from_another_thread_stops_its_reader(errors):
    async def main():
        async with loadstate.Runtime(Delivery.POLL, on_error=errors) as rt:
            attachment = rt._core.trio
            cell = rt.loadable(rt.loader(lambda job: job.detach(), inline=True))
            load = cell.load(b"x")
            async with trio.open_nursery() as nursery:
                nursery.start_soon(trio.to_thread.run_sync, rt.close)
                with pytest.raises(loadstate.Closed):
                    await load
            assert rt.closed and rt._core.trio is None
            await trio.testing.wait_all_tasks_blocked()
            assert attachment.ended          # the reader was cancelled, and ended at its next step

    run(main)
    assert errors.items == []


def test_waiting_synchronously_in_the_dispatching_run_is_refused(errors):
    async def main():
        async with loadstate.Runtime(Delivery.POLL, on_error=errors) as rt:
            load = rt.loadable(rt.loader(lambda job: b"v", inline=True)).load()
            with pytest.raises(loadstate.WrongState, match="trio run"):
                load.state(0)
            # Another thread may wait: the run's reader delivers.
            assert await trio.to_thread.run_sync(load.value, WAIT) == b"v"

    run(main)
    assert errors.items == []


def test_attaching_twice(errors):
    async def main(rt):
        rt.attach()
        reader = rt._core.trio
        rt.attach()                  # the same run: nothing changes
        assert rt._core.trio is reader
        assert await rt.loadable(rt.loader(lambda job: b"v", inline=True)).get() == b"v"
        return reader

    with loadstate.Runtime(Delivery.POLL, on_error=errors) as rt:
        first = run(main, rt)
        assert first.ended           # the run's end cancelled its system task
        second = run(main, rt)       # a new run takes over
        assert second is not first
        rt.detach()
        assert rt._core.trio is None


def test_a_poll_runtime_nothing_dispatches_warns_when_awaited(errors):
    async def main():
        with loadstate.Runtime(Delivery.POLL, on_error=errors) as rt:
            load = rt.loadable(rt.loader(lambda job: b"v", inline=True)).load()
            with pytest.warns(RuntimeWarning, match="not attached to an asyncio loop \\(or trio run\\)") as caught:
                with trio.move_on_after(0.05):
                    await load
            assert caught[0].filename == __file__
            rt.attach()
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                assert await load.cell.get(b"y") == b"v"

    run(main)


def test_outside_any_async_library_the_error_says_what_is_needed(rt):
    cell = rt.loadable(rt.loader(lambda job: b"v"))
    coroutine = cell.get(b"x")
    with pytest.raises(RuntimeError, match="needs a running asyncio loop or trio run"):
        coroutine.send(None)
    with pytest.raises(RuntimeError, match="needs a running asyncio loop or trio run"):
        cell.events()
    with loadstate.Runtime(Delivery.POLL) as poll:
        with pytest.raises(RuntimeError, match="needs a running asyncio loop or trio run"):
            poll.attach()


def test_the_package_imports_no_async_library():
    """trio, anyio and sniffio stay optional: the package needs none of them, and imports none."""
    code = ("import sys, loadstate; "
            "print(sorted(name for name in ('trio', 'anyio', 'sniffio') if name in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            cwd=str(__import__("pathlib").Path(__file__).resolve().parent.parent))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
