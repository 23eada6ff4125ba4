"""Host signals: Runtime.set_online and Runtime.set_foreground, and the load options that answer them."""

from __future__ import annotations

import asyncio
from typing import List

import pytest
from conftest import WAIT

import loadstate
from loadstate import Code, Delivery, Flags, Status


def run(coroutine):
    return asyncio.run(asyncio.wait_for(coroutine, WAIT))


class Counter:
    """A loader that answers each request with the request and how many times it was called for it."""

    def __init__(self) -> None:
        self.calls: List[bytes] = []

    def __call__(self, job: loadstate.Job) -> bytes:
        self.calls.append(job.request)
        return job.request + str(self.calls.count(job.request)).encode()

    def count(self, request: bytes) -> int:
        return self.calls.count(request)


async def until(predicate, stream) -> loadstate.Event:
    """The first event of ``stream`` that ``predicate`` accepts."""
    async for event in stream:
        if predicate(event):
            return event
    raise AssertionError("the stream ended")


def test_signals_start_true_and_show_in_stats_and_metrics(rt):
    assert rt.online and rt.foreground
    stats = rt.stats()
    assert stats.online and stats.foreground and stats.loads_paused == 0
    rt.set_online(False)
    rt.set_online(False)
    rt.set_foreground(False)
    assert not rt.online and not rt.foreground
    stats = rt.stats()
    assert not stats.online and not stats.foreground
    text = rt.metrics_text()
    assert "\nloadstate_online 0\n" in text and "\nloadstate_foreground 0\n" in text
    rt.set_online(True)
    rt.set_foreground(True)
    assert rt.online and rt.foreground
    assert "\nloadstate_online 1\n" in rt.metrics_text()


def test_load_options_check_the_signal_arguments(rt):
    with pytest.raises(loadstate.InvalidArgument, match="offline"):
        loadstate.LoadOptions(offline="later")
    with pytest.raises(TypeError):
        loadstate.LoadOptions(offline=1)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        loadstate.LoadOptions(refresh_on_foreground="yes")  # type: ignore[arg-type]
    with pytest.raises(loadstate.InvalidArgument):
        loadstate.LoadOptions(foreground_throttle=-1)
    assert loadstate.LoadOptions(offline="wait").is_default()
    assert loadstate.error_for_code(Code.EOFFLINE, "x").__class__ is loadstate.Offline


def test_a_load_started_offline_waits_paused_and_runs_on_reconnect(errors):
    async def main():
        async with loadstate.Runtime(Delivery.POLL, on_error=errors) as rt:
            counter = Counter()
            cell = rt.loadable(rt.loader(counter, inline=True))
            stream = cell.events()
            rt.set_online(False)
            pending = cell.load(b"a")
            first = await anext(stream)
            assert first.status is Status.LOADING and first.paused and Flags.PAUSED in first.flags
            await asyncio.sleep(0.03)
            assert counter.calls == []
            assert rt.stats().loads_paused == 1
            rt.set_online(True)
            resumed = await anext(stream)
            assert resumed.status is Status.LOADING and not resumed.paused
            assert (await pending).value == b"a1"
            assert rt.stats().loads_paused == 0 and rt.stats().loads_paused_total == 1
            await stream.aclose()

    run(main())
    assert errors.items == []


def test_offline_fail_fails_at_once_and_offline_run_runs(errors):
    async def main():
        async with loadstate.Runtime(Delivery.POLL, on_error=errors) as rt:
            counter = Counter()
            cell = rt.loadable(rt.loader(counter, inline=True))
            rt.set_online(False)
            with pytest.raises(loadstate.LoadFailed) as failed:
                await cell.get(b"a", offline="fail")
            assert failed.value.code == Code.EOFFLINE and failed.value.domain == loadstate.Domain.LOADSTATE
            assert counter.calls == []
            assert await cell.get(b"b", offline="run") == b"b1"

    run(main())
    assert errors.items == []


def test_offline_pauses_a_retry_until_online(errors):
    async def main():
        async with loadstate.Runtime(Delivery.POLL, on_error=errors) as rt:
            calls = 0

            def flaky(job: loadstate.Job) -> bytes:
                nonlocal calls
                calls += 1
                if calls == 1:
                    rt.set_online(False)
                    raise RuntimeError("the network went away")
                return b"back"

            cell = rt.loadable(rt.loader(flaky, inline=True))
            stream = cell.events()
            pending = cell.load(b"x", retries=1, retry_base=0.001, retry_max=0.001)
            paused = await until(lambda e: e.paused, stream)
            assert paused.status is Status.LOADING and paused.attempt == 2
            await asyncio.sleep(0.03)
            assert calls == 1
            rt.set_online(True)
            state = await pending
            assert state.value == b"back" and state.attempt == 2 and calls == 2
            await stream.aclose()

    run(main())
    assert errors.items == []


def test_cancel_of_a_paused_load_restores_the_state(errors):
    async def main():
        async with loadstate.Runtime(Delivery.POLL, on_error=errors) as rt:
            counter = Counter()
            cell = rt.loadable(rt.loader(counter, inline=True))
            assert (await cell.load(b"a")).value == b"a1"
            rt.set_online(False)
            stream = cell.events()
            pending = cell.load(b"b")
            assert (await anext(stream)).paused
            cell.cancel()
            restored = await anext(stream)
            assert restored.status is Status.LOADED and restored.value == b"a1" and restored.cancelled
            assert (await pending).cancelled
            rt.set_online(True)
            await asyncio.sleep(0.03)
            assert counter.calls == [b"a"]
            await stream.aclose()

    run(main())
    assert errors.items == []


@pytest.mark.parametrize("signal", ["online", "foreground"])
def test_a_poll_waits_while_held_and_fires_on_return(errors, signal):
    async def main():
        async with loadstate.Runtime(Delivery.POLL, on_error=errors) as rt:
            counter = Counter()
            cell = rt.loadable(rt.loader(counter, inline=True))
            stream = cell.events()
            await cell.load(b"p", refresh_interval=0.005)
            await until(lambda e: e.settled and counter.count(b"p") >= 2, stream)
            setter = rt.set_online if signal == "online" else rt.set_foreground
            setter(False)
            await asyncio.sleep(0.05)
            held = counter.count(b"p")
            await asyncio.sleep(0.05)
            assert counter.count(b"p") == held
            setter(True)
            await until(lambda e: e.settled and counter.count(b"p") >= held + 2, stream)
            await stream.aclose()

    run(main())
    assert errors.items == []


def test_poll_in_background_goes_on(errors):
    async def main():
        async with loadstate.Runtime(Delivery.POLL, on_error=errors) as rt:
            counter = Counter()
            cell = rt.loadable(rt.loader(counter, inline=True))
            stream = cell.events()
            rt.set_foreground(False)
            await cell.load(b"p", refresh_interval=0.005, poll_in_background=True)
            await until(lambda e: e.settled and counter.count(b"p") >= 3, stream)
            await stream.aclose()

    run(main())
    assert errors.items == []


def test_foreground_refreshes_stale_flagged_cells_once_per_throttle(errors):
    async def main():
        async with loadstate.Runtime(Delivery.POLL, on_error=errors) as rt:
            counter = Counter()
            loader = rt.loader(counter, inline=True)
            stale, fresh, plain = rt.loadable(loader), rt.loadable(loader), rt.loadable(loader)
            await stale.load(b"stale", refresh_on_foreground=True)
            await fresh.load(b"fresh", refresh_on_foreground=True, fresh=600)
            await plain.load(b"plain")
            stream = stale.events()
            rt.set_foreground(False)
            rt.set_foreground(True)
            refreshed = await until(lambda e: e.settled, stream)
            assert refreshed.value == b"stale2"
            # Within the throttle (5 s by default): no second refresh.
            rt.set_foreground(False)
            rt.set_foreground(True)
            await asyncio.sleep(0.04)
            assert (counter.count(b"stale"), counter.count(b"fresh"), counter.count(b"plain")) == (2, 1, 1)
            await stream.aclose()

    run(main())
    assert errors.items == []


def test_foreground_throttle_is_per_load(errors):
    async def main():
        async with loadstate.Runtime(Delivery.POLL, on_error=errors) as rt:
            counter = Counter()
            cell = rt.loadable(rt.loader(counter, inline=True))
            await cell.load(b"s", refresh_on_foreground=True, foreground_throttle=0.001)
            stream = cell.events()
            for expected in (b"s2", b"s3"):
                await asyncio.sleep(0.005)
                rt.set_foreground(False)
                rt.set_foreground(True)
                assert (await until(lambda e: e.settled, stream)).value == expected
            await stream.aclose()

    run(main())
    assert errors.items == []


def test_the_inspector_snapshot_shows_the_signals_and_paused_cells(rt):
    import json

    from test_inspector import get, parts

    cell = rt.loadable(rt.loader(lambda job: b"v"))
    rt.set_online(False)
    rt.set_foreground(False)
    load = cell.load(b"r")
    url = rt.start_inspector()
    _, _, token = parts(url)
    snapshot = json.loads(get(url, f"/snapshot?token={token}")[2])
    assert snapshot["online"] is False and snapshot["foreground"] is False and snapshot["loads_paused"] == 1
    assert "paused" in {c["id"]: c for c in snapshot["cells"]}[cell.id]["flags"]
    page = get(url, f"/?token={token}")[2]
    assert b"s.online" in page and b"s.foreground" in page
    rt.set_online(True)
    rt.set_foreground(True)
    assert load.value(WAIT) == b"v"
    snapshot = json.loads(get(url, f"/snapshot?token={token}")[2])
    assert snapshot["online"] is True and snapshot["foreground"] is True and snapshot["loads_paused"] == 0
