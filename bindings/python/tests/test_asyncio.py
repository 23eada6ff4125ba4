"""asyncio: POLL delivery on the loop, awaiting loads, event streams, async loaders, cancellation."""

from __future__ import annotations

import asyncio
import threading

import pytest
from conftest import WAIT, Jobs

import loadstate
import loadstate.runtime
from loadstate import Delivery, Flags, Status


def run(coroutine):
    return asyncio.run(asyncio.wait_for(coroutine, WAIT))


def test_poll_runtime_runs_every_callback_on_the_loop_thread(errors):
    async def main():
        loop_thread = threading.get_ident()
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
        assert {thread for _, thread in threads} == {loop_thread}
        assert {kind for kind, _ in threads} >= {"start", "event"}

    run(main())
    assert errors.items == []


def test_await_load_returns_the_settled_state(errors):
    async def main():
        async with loadstate.Runtime(Delivery.POLL, on_error=errors) as rt:
            @rt.loader(codec=loadstate.JSON)
            async def double(job):
                await asyncio.sleep(0)
                yield job.request          # a partial value
                yield job.request * 2

            cell = rt.loadable(double, codec=loadstate.JSON)
            state = await cell.load(21)
            assert (state.status, state.value, state.flags) == (Status.LOADED, 42, Flags.NONE)
            assert cell.latest == state

    run(main())


def test_shared_and_silent_loads_from_the_loop_join_its_batch(errors):
    async def main():
        async with loadstate.Runtime(Delivery.POLL, on_error=errors) as rt:
            release = asyncio.Event()
            calls = []

            @rt.loader
            async def slow(job):
                calls.append(job.request)
                await release.wait()
                return b"value of " + job.request

            cells = [rt.loadable(slow) for _ in range(50)]
            submitted = rt._core._submit
            batches = []
            rt._core._submit = lambda *args: batches.append(args[2]) or submitted(*args)
            loads = [cell.load(b"k", share=True) for cell in cells]
            release.set()
            states = await asyncio.gather(*loads)
            assert calls == [b"k"] and batches[0] == 50  # one batch of 50 loads (then the job's succeed)
            assert {state.value for state in states} == {b"value of k"}
            release.clear()
            refreshing = asyncio.Event()
            cells[0].subscribe(lambda event: refreshing.set() if event.refreshing else None)
            again = cells[0].load(b"j", silent=True)
            await refreshing.wait()
            assert cells[0].latest.value == b"value of k" and cells[0].latest.refreshing
            release.set()
            assert (await again).value == b"value of j"

    run(main())
    assert errors.items == []


def test_await_skips_events_from_before_the_load(errors):
    async def main():
        async with loadstate.Runtime(Delivery.POLL, on_error=errors) as rt:
            cell = rt.loadable(rt.loader(lambda job: b"loaded", inline=True))
            cell.set_loaded(b"manual")       # its event is still undelivered when the load starts
            cell.set_error(5, "also before")
            state = await cell.load(b"q")
            assert (state.status, state.value, state.seq) == (Status.LOADED, b"loaded", 4)

    run(main())


def test_a_load_superseded_by_another_request_raises_superseded(errors):
    async def main():
        async with loadstate.Runtime(Delivery.POLL, on_error=errors) as rt:
            cell = rt.loadable(rt.loader(lambda job: job.request, inline=True))
            first = cell.load(b"one")
            second = cell.load(b"two")
            with pytest.raises(loadstate.Superseded) as superseded:
                await first
            assert superseded.value.request == b"two"
            assert isinstance(superseded.value, loadstate.Cancelled)
            assert (await second).value == b"two"

    run(main())


def test_a_load_superseded_by_the_same_request_takes_its_outcome(errors):
    async def main():
        async with loadstate.Runtime(Delivery.POLL, on_error=errors) as rt:
            cell = rt.loadable(rt.loader(lambda job: job.request, inline=True))
            first = cell.load(b"one")
            second = cell.load(b"one")
            assert (await first).value == (await second).value == b"one"


    run(main())


def test_gathered_gets_on_one_cell_never_return_another_requests_value(errors):
    # The first program of many users: every get on one cell, gathered.
    async def main():
        async with loadstate.Runtime(Delivery.POLL, on_error=errors) as rt:
            @rt.loader
            async def body(job):
                await asyncio.sleep(0.001)
                return b"body of " + job.request

            cell = rt.loadable(body)
            urls = [f"/page/{n}".encode() for n in range(50)]
            results = await asyncio.gather(*(cell.get(url) for url in urls), return_exceptions=True)
            for url, result in zip(urls, results):
                if isinstance(result, loadstate.Superseded):
                    assert result.request != url
                else:
                    assert result == b"body of " + url
            assert results[-1] == b"body of " + urls[-1]
            assert sum(isinstance(r, loadstate.Superseded) for r in results) == len(urls) - 1

    run(main())


def test_async_for_events(errors):
    async def main():
        async with loadstate.Runtime(Delivery.POLL, on_error=errors) as rt:
            @rt.loader
            async def steps(job):
                job.progress(1, 2)
                job.yield_(b"half")
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

    run(main())


def test_event_stream_ends_when_the_cell_closes(errors):
    async def main():
        async with loadstate.Runtime(Delivery.POLL, on_error=errors) as rt:
            cell = rt.loadable()
            stream = cell.events()
            cell.set_loaded(b"v")
            received = []

            async def consume():
                async for event in stream:
                    received.append(event.value)
                    cell.close()
            await consume()
            assert received == [b"v"]

    run(main())


def test_cancelling_the_awaiting_task_cancels_the_job(errors):
    async def main():
        async with loadstate.Runtime(Delivery.POLL, on_error=errors) as rt:
            started = asyncio.Event()
            loader_cancelled = asyncio.Event()

            @rt.loader
            async def slow(job):
                started.set()
                try:
                    await asyncio.sleep(3600)
                except asyncio.CancelledError:
                    loader_cancelled.set()
                    raise

            cell = rt.loadable(slow)
            task = asyncio.ensure_future(cell.load(b"q"))
            await started.wait()
            events = cell.events()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            await loader_cancelled.wait()
            event = await events.__anext__()
            assert (event.status, event.flags) == (Status.ABSENT, Flags.CANCELLED)

    run(main())


@pytest.mark.parametrize("delivery", [Delivery.POLL, Delivery.LOOP])
def test_every_way_a_job_is_cancelled_cancels_its_async_loader(errors, delivery):
    """The loader's cancel function reports each cancellation (no hook per job): cancel, a
    superseding load, a timeout and a cancel from inside all cancel the loader's task."""
    async def main():
        with loadstate.Runtime(delivery, on_error=errors) as rt:
            if delivery == Delivery.POLL:
                rt.attach()
            started: asyncio.Queue = asyncio.Queue()
            cancelled: asyncio.Queue = asyncio.Queue()

            @rt.loader
            async def slow(job):
                started.put_nowait(job.raw_request)
                try:
                    if job.raw_request == b"self":
                        job.cancel()
                    await asyncio.sleep(3600)
                except asyncio.CancelledError:
                    cancelled.put_nowait(job.raw_request)
                    raise

            cell = rt.loadable(slow)
            cell.load(b"outside")
            assert await started.get() == b"outside"
            cell.cancel()
            assert await cancelled.get() == b"outside"
            cell.load(b"first")
            assert await started.get() == b"first"
            cell.load(b"second")
            assert await cancelled.get() == b"first"
            assert await started.get() == b"second"
            # The timeout counts from the load's start, not the task's: long enough for the task to
            # start on a busy machine (at 1 ms it could expire first, and the task never ran).
            cell.load(b"timed", timeout=1.0)
            assert await cancelled.get() == b"second"
            assert await started.get() == b"timed"
            assert await cancelled.get() == b"timed"
            cell.load(b"self")
            assert await started.get() == b"self"
            assert await cancelled.get() == b"self"

    run(main())
    assert errors.items == []


def test_cancelling_a_superseded_await_leaves_the_newer_load_alone(errors):
    async def main():
        async with loadstate.Runtime(Delivery.POLL, on_error=errors) as rt:
            jobs = Jobs(rt)
            cell = rt.loadable(jobs.loader)
            old = asyncio.ensure_future(cell.load(b"old"))
            await asyncio.sleep(0)
            newer = cell.load(b"new")
            old.cancel()
            with pytest.raises(asyncio.CancelledError):
                await old
            job = None
            while job is None:          # the jobs arrive through the loop's reader
                await asyncio.sleep(0)
                job = None if jobs.empty() else jobs.queue.get_nowait()
                if job is not None and job.raw_request != b"new":
                    job = None
            job.succeed(b"kept")
            assert (await newer).value == b"kept"

    run(main())


def test_async_loader_raising_fails_the_load(errors):
    async def main():
        async with loadstate.Runtime(Delivery.POLL, on_error=errors) as rt:
            @rt.loader
            async def broken(job):
                await asyncio.sleep(0)
                raise KeyError("gone")

            state = await rt.loadable(broken).load()
            assert (state.status, state.error_code, state.error_message) == (
                Status.ERROR, loadstate.EXCEPTION_CODE, "KeyError: 'gone'")

    run(main())


def test_loop_mode_runtime_can_be_awaited_and_runs_async_loaders(errors):
    async def main():
        loop_thread = threading.get_ident()
        with loadstate.Runtime(on_error=errors) as rt:
            ran_on = []

            @rt.loader
            async def fetch(job):
                ran_on.append(threading.get_ident())
                await asyncio.sleep(0)
                return job.request.upper()

            cell = rt.loadable(fetch)
            events = cell.events()
            assert (await cell.load(b"x")).value == b"X"
            assert ran_on == [loop_thread]
            assert [(await events.__anext__()).status for _ in range(2)] == [Status.LOADING, Status.LOADED]

    run(main())


def test_result_in_poll_mode_without_a_loop_dispatches_while_waiting(poll_rt):
    cell = poll_rt.loadable(poll_rt.loader(lambda job: job.request * 2))
    assert cell.load(b"ab").state(WAIT).value == b"abab"


def test_result_on_the_dispatching_loop_is_refused(errors):
    async def main():
        async with loadstate.Runtime(Delivery.POLL, on_error=errors) as rt:
            load = rt.loadable(rt.loader(lambda job: None, inline=True)).load()
            with pytest.raises(loadstate.WrongState):
                load.state(0)
            await load

    run(main())


def test_async_loader_without_a_loop_fails_its_job(rt):
    async def never(job):
        return b"x"

    loader = rt.loader(never)
    state = rt.loadable(loader).load().state(WAIT)
    assert state.status is Status.ERROR and "no asyncio loop" in state.error_message


def test_dispatch_inside_a_callback_is_refused(poll_rt):
    seen = []

    def nested(event):
        with pytest.raises(loadstate.WrongState):
            poll_rt.dispatch()
        with pytest.raises(loadstate.WrongState):
            poll_rt.close()
        seen.append(event.seq)

    cell = poll_rt.loadable(on_event=nested)
    cell.set_loaded(b"v")
    while not seen:
        poll_rt.poll(WAIT)
    assert not poll_rt.closed


def test_loop_mode_has_no_fd_and_no_dispatch(rt):
    with pytest.raises(loadstate.WrongState):
        rt.fd
    with pytest.raises(loadstate.WrongState):
        rt.dispatch()


def test_poll_values_larger_than_the_records_buffer_arrive_whole(errors):
    from loadstate import _core

    big = bytes(range(256)) * (3 * _core.RECORDS_BUFFER // 256 + 7)

    async def main():
        async with loadstate.Runtime(Delivery.POLL, on_error=errors) as rt:
            cells = [rt.loadable(rt.loader(lambda job: job.request, inline=True)) for _ in range(3)]
            small = cells[0].load(b"small")
            large = cells[1].load(big)
            cells[2].set_loaded(big[:100])
            assert (await small).value == b"small"
            state = await large
            assert state.value == big and state.request == big
            assert cells[2].latest.value == big[:100]

    run(main())
    assert errors.items == []


def test_poll_values_larger_than_the_kept_buffer_are_copied_once(errors):
    """A value over RECORDS_BUFFER_KEPT crosses through its callback: one copy into bytes, no buffer of its
    size first, and its events keep their order with the events around them."""
    import tracemalloc

    from loadstate import _core

    big = bytes(range(256)) * (2 * _core.RECORDS_BUFFER_KEPT // 256 + 3)
    seen = []

    async def main():
        async with loadstate.Runtime(Delivery.POLL, on_error=errors) as rt:
            before, after = rt.loadable(), rt.loadable()
            cell = rt.loadable(rt.loader(lambda job: big, inline=True),
                               on_event=lambda event: seen.append(("big", event.status, len(event.value or b""))))
            before.subscribe(lambda event: seen.append(("before", event.status, 0)))
            done = asyncio.Event()

            def on_after(event):
                seen.append(("after", event.status, 0))
                done.set()

            after.subscribe(on_after)
            tracemalloc.start()
            try:
                start = tracemalloc.get_traced_memory()[0]
                before.set_loaded(b"1")
                load = cell.load(b"r")
                state = await load
                after.set_loaded(b"2")
                await asyncio.wait_for(done.wait(), WAIT)
                peak = tracemalloc.get_traced_memory()[1] - start
            finally:
                tracemalloc.stop()
            assert state.value == big
            assert peak < 1.5 * len(big), f"{peak} bytes at the peak for a value of {len(big)}"

    run(main())
    assert seen == [("before", Status.LOADED, 0), ("big", Status.LOADING, 0), ("big", Status.LOADED, len(big)),
                    ("after", Status.LOADED, 0)]
    assert errors.items == []


def test_awaiting_a_load_of_a_poll_runtime_nothing_dispatches_warns(errors):
    """`with` instead of `async with` leaves a POLL runtime unattached: its loads would never end, so the await
    says why; an attached runtime, or one a thread polls, does not warn."""
    import warnings

    async def main():
        with loadstate.Runtime(Delivery.POLL, on_error=errors) as rt:
            cell = rt.loadable(rt.loader(lambda job: b"v", inline=True))
            load = cell.load(b"x")

            async def wait():
                return await load

            with pytest.warns(RuntimeWarning, match="not attached to an asyncio loop") as caught:
                with pytest.raises(asyncio.TimeoutError):  # nothing would ever end it
                    await asyncio.wait_for(wait(), 0.05)
            assert caught[0].filename == __file__
            rt.attach()
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                assert await cell.get(b"y") == b"v"
        with loadstate.Runtime(Delivery.POLL, on_error=errors) as rt:
            cell = rt.loadable(rt.loader(lambda job: b"w", inline=True))
            stop = threading.Event()

            def poller():
                while not stop.is_set():
                    rt.poll(0.01)

            thread = threading.Thread(target=poller)
            thread.start()
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("error")
                    while not rt._core.dispatched:
                        await asyncio.sleep(0.001)
                    assert await asyncio.wait_for(cell.get(b"z"), WAIT) == b"w"
            finally:
                stop.set()
                thread.join()

    run(main())


def test_poll_dispatch_inside_a_callback_is_refused(errors):
    seen = []

    def on_event(event):
        for call in (lambda: rt.dispatch(), lambda: rt.dispatch(1)):
            try:
                call()
            except loadstate.WrongState as exc:
                seen.append(exc.code)

    rt = loadstate.Runtime(Delivery.POLL, on_error=errors)
    try:
        cell = rt.loadable(on_event=on_event)
        cell.set_loaded(b"v")
        assert rt.poll(WAIT) == 1
        assert seen == [-3, -3]
        assert cell.latest.value == b"v"
    finally:
        rt.close()
    assert errors.items == []


@pytest.mark.parametrize("spin_us", ["0", "50", "2000"])
def test_loads_settle_whatever_the_spin(errors, spin_us, monkeypatch):
    monkeypatch.setattr(loadstate.runtime, "_SPIN_US", spin_us)

    async def main():
        async with loadstate.Runtime(Delivery.POLL, on_error=errors) as rt:
            cell = rt.loadable(rt.loader(lambda job: job.request, inline=True))
            for i in range(20):
                assert (await cell.load(b"%d" % i)).value == b"%d" % i

    run(main())
    assert errors.items == []


def test_spin_is_checked(monkeypatch):
    for bad in ("-1", "100001", "0.5", "fast"):
        monkeypatch.setattr(loadstate.runtime, "_SPIN_US", bad)
        with pytest.raises(ValueError, match="LOADSTATE_SPIN_US"):
            loadstate.Runtime()
