"""Loader.fetch: the one-shot call, each caller its own request's outcome, overlapping calls sharing one load."""

from __future__ import annotations

import asyncio

import pytest
from conftest import WAIT

import loadstate
from loadstate import Delivery


def run(coroutine):
    return asyncio.run(asyncio.wait_for(coroutine, WAIT))


def test_fetch_returns_each_callers_own_value_for_many_requests(errors):
    async def main():
        async with loadstate.Runtime(Delivery.POLL, on_error=errors) as rt:
            @rt.loader
            async def body(job):
                await asyncio.sleep(0.001)
                return b"body of " + job.request

            urls = [f"/page/{n}".encode() for n in range(50)]
            results = await asyncio.gather(*(body.fetch(url) for url in urls))
            assert results == [b"body of " + url for url in urls]

    run(main())


def test_overlapping_fetches_of_one_request_run_the_loader_once(errors):
    async def main():
        async with loadstate.Runtime(Delivery.POLL, on_error=errors) as rt:
            release = asyncio.Event()
            calls = []

            @rt.loader
            async def slow(job):
                calls.append(job.request)
                await release.wait()
                return b"v"

            gathered = asyncio.gather(*(slow.fetch(b"k") for _ in range(100)), slow.fetch(b"other"))
            await asyncio.sleep(0)
            release.set()
            values = await gathered
            assert values == [b"v"] * 101
            assert sorted(calls) == [b"k", b"other"]
            # Once ended, a new fetch loads again.
            assert await slow.fetch(b"k") == b"v" and len(calls) == 3

    run(main())


def test_fetch_without_share_loads_for_every_call(errors):
    async def main():
        async with loadstate.Runtime(Delivery.POLL, on_error=errors) as rt:
            calls = []

            @rt.loader
            async def count(job):
                calls.append(job.request)
                await asyncio.sleep(0.001)
                return b"v"

            assert await asyncio.gather(*(count.fetch(b"k", share=False) for _ in range(5))) == [b"v"] * 5
            assert len(calls) == 5

    run(main())


def test_fetch_raises_the_failure_for_every_waiter(errors):
    async def main():
        async with loadstate.Runtime(Delivery.POLL, on_error=errors) as rt:
            @rt.loader
            def refuse(job):
                raise loadstate.LoadFailed(7, "no")

            results = await asyncio.gather(*(refuse.fetch(b"k") for _ in range(3)), return_exceptions=True)
            assert all(isinstance(r, loadstate.LoadFailed) and r.code == 7 for r in results)

            @rt.loader
            def broken(job):
                raise KeyError("missing")

            with pytest.raises(KeyError):
                await broken.fetch(b"k")

    run(main())


def test_fetch_honours_timeout_and_cache(errors):
    async def main():
        async with loadstate.Runtime(Delivery.POLL, on_error=errors) as rt:
            calls = []

            @rt.loader
            async def slow(job):
                calls.append(job.request)
                if job.request == b"hang":
                    await asyncio.sleep(30)
                return b"v:" + job.request

            with pytest.raises(loadstate.LoadTimedOut):
                await slow.fetch(b"hang", timeout=0.05)
            cache = rt.memory_cache()
            policy = loadstate.CachePolicy.CACHE_FIRST
            assert await slow.fetch(b"a", cache=cache, policy=policy, fresh=60) == b"v:a"
            assert await slow.fetch(b"a", cache=cache, policy=policy, fresh=60) == b"v:a"
            assert calls.count(b"a") == 1

    run(main())


def test_cancelling_one_waiter_leaves_the_others_and_the_last_cancels_the_load(errors):
    async def main():
        async with loadstate.Runtime(Delivery.POLL, on_error=errors) as rt:
            release = asyncio.Event()
            cancelled = asyncio.Event()

            @rt.loader
            async def slow(job):
                try:
                    await release.wait()
                except asyncio.CancelledError:
                    cancelled.set()
                    raise
                return b"v"

            first = asyncio.ensure_future(slow.fetch(b"k"))
            second = asyncio.ensure_future(slow.fetch(b"k"))
            await asyncio.sleep(0.01)
            first.cancel()
            with pytest.raises(asyncio.CancelledError):
                await first
            release.set()
            assert await second == b"v"
            release.clear()
            only = asyncio.ensure_future(slow.fetch(b"k2"))
            await asyncio.sleep(0.01)
            only.cancel()
            with pytest.raises(asyncio.CancelledError):
                await only
            await asyncio.wait_for(cancelled.wait(), 10)

    run(main())


def test_fetch_decodes_with_the_loaders_codecs(errors):
    async def main():
        async with loadstate.Runtime(Delivery.POLL, on_error=errors) as rt:
            shout = rt.loader(lambda job: job.request.upper(), codec=loadstate.TEXT)
            assert await shout.fetch("hi") == "HI"

    run(main())


def test_fetch_from_a_thread_runtime_without_asyncio_loop_attached(rt):
    # LOOP delivery, awaited on a loop the runtime is not attached to.
    upper = rt.loader(lambda job: job.request.upper())

    async def main():
        return await asyncio.gather(upper.fetch(b"a"), upper.fetch(b"a"), upper.fetch(b"b"))

    assert asyncio.run(main()) == [b"A", b"A", b"B"]
