"""Code that mypy --strict must refuse; tests/test_typing.py runs it over this file and checks that each
line whose comment begins with "error:" gets one error, whose message contains the rest of the comment,
and that no other line gets one."""

from __future__ import annotations

from typing import Iterator

import loadstate


def text(job: loadstate.Job) -> str:
    return "a str"


async def async_text(job: loadstate.Job) -> str:
    return "a str"


def text_parts(job: loadstate.Job) -> Iterator[str]:
    yield "a str"


def main(rt: loadstate.Runtime) -> None:
    # Without a codec, a loader's values go through BYTES: its function must return bytes (or None).
    rt.loader(text)  # error: incompatible type "Callable[[Job], str]"
    rt.loader(async_text)  # error: incompatible type "Callable[[Job], Coroutine[Any, Any, str]]"
    rt.loader(text_parts, inline=True)  # error: incompatible type "Callable[[Job], Iterator[str]]"
    rt.loader(limits=loadstate.Limits(max_concurrent=1))(text)  # error: incompatible type "Callable[[Job], str]"
    loadstate.Loader(rt, text)  # error: incompatible type "Callable[[Job], str]"

    @rt.loader  # error: incompatible type "Callable[[Job], str]"
    def decorated(job: loadstate.Job) -> str:
        return "a str"

    # With one, the codec decides.
    rt.loader(text, codec=loadstate.TEXT)
    rt.loader(async_text, codec=loadstate.TEXT)
    rt.loader(codec=loadstate.TEXT)(text_parts)

    # A cache's values are those of its codec.
    rt.memory_cache()["k"] = "a str"  # error: incompatible type "str"; expected "bytes"
    rt.memory_cache(codec=loadstate.TEXT)["k"] = b"bytes"  # error: incompatible type "bytes"; expected "str"
    rt.persistent_cache("c.db", codec=loadstate.TEXT).put("k", b"bytes")  # error: incompatible type "bytes"; expected "str"
    rt.redis_cache("redis://127.0.0.1").put("k", "a str")  # error: incompatible type "str"; expected "bytes"
