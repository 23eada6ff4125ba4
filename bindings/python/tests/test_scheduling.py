"""Scheduling under asyncio: loader limits, priorities, QUEUED states, polling, prefetch."""

from __future__ import annotations

import asyncio
import http.server
import threading
import urllib.request
from typing import List

import pytest
from conftest import WAIT

import loadstate
from loadstate import Delivery, Flags, Limits, Status


def run(coroutine):
    return asyncio.run(asyncio.wait_for(coroutine, WAIT))


class Gate:
    """An async loader whose jobs wait until the test releases them, in order of their start."""

    def __init__(self) -> None:
        self.started: List[bytes] = []
        self.running = 0
        self.most = 0
        self.release: "asyncio.Queue[bytes]" = asyncio.Queue()
        self.changed = asyncio.Event()

    async def load(self, job: loadstate.Job) -> bytes:
        self.started.append(job.request)
        self.running += 1
        self.most = max(self.most, self.running)
        self.changed.set()
        try:
            return await self.release.get()
        finally:
            self.running -= 1

    async def starts(self, count: int) -> None:
        while len(self.started) < count:
            self.changed.clear()
            await self.changed.wait()


def test_loads_over_the_limit_wait_flagged_queued_and_start_in_priority_order(errors):
    async def main():
        async with loadstate.Runtime(Delivery.POLL, on_error=errors) as rt:
            gate = Gate()
            loader = rt.loader(gate.load, limits=Limits(max_concurrent=1))
            cells = [rt.loadable(loader) for _ in range(5)]
            loads = [cells[0].load(b"first")]
            await gate.starts(1)
            loads.append(cells[1].load(b"low", priority=-1))
            loads.append(cells[2].load(b"high", priority=5))
            loads.append(cells[3].load(b"plain"))
            loads.append(cells[4].load(b"moved"))
            stream = cells[4].events()
            event = await anext(stream)
            assert event.status is Status.LOADING and event.queued and Flags.QUEUED in event.flags
            cells[4].set_priority(9)
            for expected in (b"first", b"moved", b"high", b"plain", b"low"):
                await gate.starts(len(gate.started) + (0 if expected == b"first" else 1))
                assert gate.started[-1] == expected
                await gate.release.put(expected.upper())
            states = [await load for load in loads]
            assert [s.value for s in states] == [b"FIRST", b"LOW", b"HIGH", b"PLAIN", b"MOVED"]
            # The start of the queued load was announced without the flag.
            started = await anext(stream)
            assert started.status is Status.LOADING and not started.queued
            await stream.aclose()
            assert gate.most == 1

    run(main())
    assert errors.items == []


def test_a_cancelled_queued_load_never_calls_the_loader(errors):
    async def main():
        async with loadstate.Runtime(Delivery.POLL, on_error=errors) as rt:
            gate = Gate()
            loader = rt.loader(gate.load, limits=Limits(max_concurrent=1))
            running, queued = rt.loadable(loader), rt.loadable(loader)
            first = running.load(b"a")
            await gate.starts(1)
            waiting = queued.load(b"b")
            queued.cancel()
            assert (await waiting).cancelled
            await gate.release.put(b"A")
            assert (await first).value == b"A"
            after = running.load(b"after")
            await gate.starts(2)
            await gate.release.put(b"AFTER")
            assert (await after).value == b"AFTER"
            assert gate.started == [b"a", b"after"]

    run(main())
    assert errors.items == []


def test_the_rate_limit_spaces_the_starts(errors):
    async def main():
        async with loadstate.Runtime(Delivery.POLL, on_error=errors) as rt:
            loop = asyncio.get_running_loop()
            times: List[float] = []

            def stamp(job: loadstate.Job) -> bytes:
                times.append(loop.time())
                return job.request

            loader = rt.loader(stamp, inline=True, limits=Limits(rate_per_s=50, burst=2))
            cells = [rt.loadable(loader) for _ in range(12)]
            states = await asyncio.gather(*(cell.load(b"r") for cell in cells))
            assert all(s.status is Status.LOADED for s in states)
            # Two at once, then ten at 50 per second: 0.2 s, with a generous tolerance below.
            assert times[-1] - times[0] >= 0.15

    run(main())
    assert errors.items == []


def test_polling_refreshes_until_cancelled_and_pauses_with_the_runtime(errors):
    async def main():
        async with loadstate.Runtime(Delivery.POLL, on_error=errors) as rt:
            count = 0

            def counter(job: loadstate.Job) -> bytes:
                nonlocal count
                count += 1
                return str(count).encode()

            cell = rt.loadable(rt.loader(counter, inline=True))
            stream = cell.events()
            assert (await cell.load(b"x", refresh_interval=0.01)).value == b"1"
            seen = []
            refreshing = 0
            async for event in stream:
                refreshing += event.refreshing
                if event.settled:
                    seen.append(event.value)
                if len(seen) == 4:
                    break
            assert seen == [b"1", b"2", b"3", b"4"]
            assert refreshing == 3  # each poll is a silent refresh
            rt.pause_polling()
            # A clock that runs on events: a load that times out.
            clock = rt.loadable()
            never = rt.loader(_never, inline=True)
            await clock.load(b"t", never, timeout=0.05)
            paused = count
            await clock.load(b"t", never, timeout=0.1)
            assert count == paused
            rt.resume_polling()
            while count < paused + 2:
                await anext(stream)
            cell.cancel()
            await clock.load(b"t", never, timeout=0.03)
            stopped = count
            await clock.load(b"t", never, timeout=0.1)
            assert count == stopped
            await stream.aclose()

    run(main())
    assert errors.items == []


def _never(job: loadstate.Job) -> None:
    job.detach()


def test_prefetch_then_load_calls_the_loader_once(errors):
    async def main():
        async with loadstate.Runtime(Delivery.POLL, on_error=errors) as rt:
            gate = Gate()
            loader = rt.loader(gate.load)
            cache = rt.memory_cache()
            rt.prefetch(loader, b"k", cache=cache, policy=loadstate.CachePolicy.CACHE_FIRST, fresh=60)
            await gate.starts(1)
            cell = rt.loadable(loader)
            pending = cell.load(b"k", cache=cache, policy=loadstate.CachePolicy.CACHE_FIRST, fresh=60)
            await gate.release.put(b"value")
            assert (await pending).value == b"value"
            later = await rt.loadable(loader).load(b"k", cache=cache, policy=loadstate.CachePolicy.CACHE_FIRST,
                                                   fresh=60)
            assert later.value == b"value" and later.from_cache
            assert gate.started == [b"k"]
            with pytest.raises(TypeError):
                rt.prefetch(loader, b"k", cache=None)  # type: ignore[arg-type]

    run(main())
    assert errors.items == []


def test_limits_and_priorities_are_checked(rt):
    with pytest.raises(TypeError):
        rt.loader(lambda job: None, limits=4)  # type: ignore[arg-type]
    with pytest.raises(loadstate.InvalidArgument):
        rt.loader(lambda job: None, limits=Limits(max_concurrent=-1))
    with pytest.raises(loadstate.InvalidArgument):
        rt.http_loader(max_per_host=1 << 40)
    rt.file_loader(limits=Limits(max_concurrent=2)).close()
    rt.exec_loader(limits=Limits(rate_per_s=5, burst=5)).close()
    rt.http_loader(limits=Limits(max_concurrent=8), max_per_host=2).close()
    cell = rt.loadable()
    with pytest.raises(TypeError):
        cell.set_priority("high")  # type: ignore[arg-type]
    with pytest.raises(loadstate.InvalidArgument):
        cell.set_priority(1 << 31)
    cell.set_priority(3)
    rt.process().set_priority(-3)
    cell.close()
    with pytest.raises(loadstate.NotFound):
        cell.set_priority(1)


class _Holds(http.server.BaseHTTPRequestHandler):
    """``/hold`` answers once ``/release`` was called; ``/held/N/MS`` answers, within MS ms,
    as soon as N requests are held, with how many are."""

    protocol_version = "HTTP/1.1"
    cv = threading.Condition()
    held = 0
    released = False

    def do_GET(self) -> None:
        parts = self.path.strip("/").split("/")
        cls = type(self)
        with cls.cv:
            if parts[0] == "hold":
                cls.held += 1
                cls.cv.notify_all()
                cls.cv.wait_for(lambda: cls.released, timeout=WAIT)
                cls.held -= 1
                body = b"held"
            elif parts[0] == "held":
                count, ms = int(parts[1]), int(parts[2])
                cls.cv.wait_for(lambda: cls.held >= count, timeout=ms / 1000)
                body = b"%d" % cls.held
            else:
                cls.released = True
                cls.cv.notify_all()
                body = b"released"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.mark.parametrize("per_host", [1, 0])
def test_max_per_host_holds_connections_to_one_host(rt, per_host):
    handler = type("Holds", (_Holds,), {"cv": threading.Condition(), "held": 0, "released": False})
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{httpd.server_address[1]}"
    try:
        loader = rt.http_loader(proxy="", max_per_host=per_host)
        loads = [rt.loadable(loader).load(f"{base}/hold") for _ in range(2)]

        direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))

        def held(count: int, ms: int) -> int:
            with direct.open(f"{base}/held/{count}/{ms}", timeout=WAIT) as answer:
                return int(answer.read())

        assert held(1, int(WAIT * 1000)) >= 1
        # With one connection per host the second request waits inside libcurl.
        assert held(2, 300) == (1 if per_host else 2)
        direct.open(f"{base}/release", timeout=WAIT).read()
        assert all(load.state(WAIT).status is Status.LOADED for load in loads)
    finally:
        httpd.shutdown()
        httpd.server_close()
