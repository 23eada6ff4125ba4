"""Code typed as a user of the binding writes it; tests/test_typing.py runs mypy --strict over it
and compares each reveal_type with the type named in the comment on its line (builtins without
"builtins.")."""

from __future__ import annotations

from typing import Iterator

import loadstate


async def main(url: str) -> None:
    async with loadstate.Runtime(loadstate.Delivery.POLL) as rt:
        http = rt.http_loader()
        reveal_type(http)  # loadstate.loaders.Loader[loadstate.builtin.HttpResponse]
        pages = rt.loadable(http)
        reveal_type(pages)  # loadstate.cells.Loadable[loadstate.builtin.HttpResponse]
        response = await pages.get(url)
        reveal_type(response)  # loadstate.builtin.HttpResponse
        load = pages.load(loadstate.HttpRequest(url, headers=[("Accept", "text/html")]))
        reveal_type(load)  # loadstate.cells.Load[loadstate.builtin.HttpResponse]
        reveal_type(load.value())  # loadstate.builtin.HttpResponse
        state = await load
        reveal_type(state)  # loadstate.types.Event[loadstate.builtin.HttpResponse]
        reveal_type(state.value)  # loadstate.builtin.HttpResponse | None
        reveal_type(response.age)  # int | None
        reveal_type(response.cache)  # loadstate.enums.CacheVerdict | None
        directives = loadstate.CacheControl(max_age=60, max_stale=True)
        reveal_type(directives.max_stale)  # None | int
        pages.load(loadstate.HttpRequest(url, cache_control=directives, flags=loadstate.HTTP_NO_HEURISTIC_FRESHNESS))
        try:
            await pages.get(url)
        except loadstate.LoadFailed as failed:
            reveal_type(failed.code)  # int
        async for event in pages.events():
            reveal_type(event)  # loadstate.types.Event[loadstate.builtin.HttpResponse]
            break

        text = rt.loadable(codec=loadstate.TEXT)
        reveal_type(text)  # loadstate.cells.Loadable[str]
        reveal_type(await text.get())  # str
        raw = rt.loadable(rt.loader(lambda job: job.raw_request))
        reveal_type(raw)  # loadstate.cells.Loadable[bytes]
        reveal_type(rt.loader(lambda job: "x", codec=loadstate.TEXT))  # loadstate.loaders.Loader[str]
        files = rt.loadable(rt.file_loader())
        reveal_type(files.snapshot())  # loadstate.types.Event[bytes]
        runs = rt.process(rt.loader(lambda job: None))
        reveal_type(runs.run(kind=1))  # loadstate.cells.Load[None]

        @rt.loader
        def fetch_bytes(job: loadstate.Job) -> bytes:
            return b"bytes"

        reveal_type(fetch_bytes)  # loadstate.loaders.Loader[bytes]

        @rt.loader(inline=True)
        def finish(job: loadstate.Job) -> None:
            job.yield_(b"partial")

        reveal_type(finish)  # loadstate.loaders.Loader[bytes]

        named = rt.loader(lambda job: "x", codec=loadstate.TEXT, name="users")
        reveal_type(named)  # loadstate.loaders.Loader[str]
        reveal_type(named.name)  # str | None
        reveal_type(rt.loadable(named, name="profile"))  # loadstate.cells.Loadable[str]
        reveal_type(rt.process(name="save").name)  # str | None
        reveal_type(rt.http_loader(name="api"))  # loadstate.loaders.Loader[loadstate.builtin.HttpResponse]

        @rt.loader(name="decorated")
        def decorated(job: loadstate.Job) -> bytes:
            return b"bytes"

        reveal_type(decorated)  # loadstate.loaders.Loader[bytes]

        @rt.loader
        async def fetch_async(job: loadstate.Job) -> bytes:
            return b"bytes"

        reveal_type(fetch_async)  # loadstate.loaders.Loader[bytes]

        @rt.loader
        def chunks(job: loadstate.Job) -> Iterator[bytes]:
            yield b"chunk"

        reveal_type(chunks)  # loadstate.loaders.Loader[bytes]

        @rt.loader(codec=loadstate.TEXT)
        def greet(job: loadstate.Job) -> str:
            return "hello"

        reveal_type(greet)  # loadstate.loaders.Loader[str]
        reveal_type(loadstate.Loader(rt, lambda job: b"x"))  # loadstate.loaders.Loader[bytes]
        reveal_type(loadstate.Loader(rt, lambda job: "x", codec=loadstate.TEXT))  # loadstate.loaders.Loader[str]

        with rt.memory_cache(codec=loadstate.JSON) as cache:
            cache["user:7"] = {"name": "Ada"}
            reveal_type(len(cache))  # int
        reveal_type(rt.memory_cache())  # loadstate.cache.Cache[bytes]
        reveal_type(rt.memory_cache("names", ttl=60)["k"])  # bytes
        reveal_type(rt.memory_cache(codec=loadstate.TEXT))  # loadstate.cache.Cache[str]
        reveal_type(rt.memory_cache(codec=loadstate.TEXT).get("k"))  # str | None
        reveal_type(rt.persistent_cache("cache.db"))  # loadstate.cache.Cache[bytes]
        reveal_type(rt.persistent_cache("cache.db", codec=loadstate.TEXT)["k"])  # str
        reveal_type(rt.persistent_cache("cache.db", codec=loadstate.TEXT).popitem())  # tuple[bytes, str]
        reveal_type(rt.redis_cache("redis://127.0.0.1:6379/0"))  # loadstate.redis_cache.RedisCache[bytes]
        reveal_type(rt.redis_cache("redis://127.0.0.1:6379/0", codec=loadstate.TEXT)["k"])  # str
        reveal_type(loadstate.RedisCache(rt, "redis://127.0.0.1:6379/0"))  # loadstate.redis_cache.RedisCache[bytes]

        shared = rt.redis_cache("redis://127.0.0.1:6379/0", key_prefix="app:", ttl=60, codec=loadstate.JSON)
        reveal_type(shared)  # loadstate.redis_cache.RedisCache[Any]
        reveal_type(shared.status().last_error_code)  # int | None
        try:
            shared["user:7"] = {"name": "Ada"}
        except loadstate.RedisError as failed_redis:
            reveal_type(failed_redis.redis_code)  # int | None
