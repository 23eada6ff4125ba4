"""Runtime.add_close_hook: hooks run when the runtime closes, before its descriptor is freed."""

from __future__ import annotations

import os
from typing import Any, List

import pytest

import loadstate


def test_hooks_run_before_the_descriptor_is_freed_the_last_added_first() -> None:
    runtime = loadstate.Runtime(loadstate.Delivery.POLL)
    fd = runtime.fd
    seen: List[Any] = []

    def hook(name: str) -> Any:
        def run() -> None:
            os.fstat(fd)  # raises OSError (EBADF) once the descriptor is closed
            seen.append((name, runtime.closed))
        return run

    runtime.add_close_hook(hook("first"))
    runtime.add_close_hook(hook("second"))
    runtime.close()
    assert seen == [("second", False), ("first", False)]
    runtime.close()  # a second close runs nothing again
    assert len(seen) == 2


def test_a_removed_hook_does_not_run() -> None:
    runtime = loadstate.Runtime(loadstate.Delivery.POLL)
    seen: List[str] = []
    remove = runtime.add_close_hook(lambda: seen.append("removed"))
    runtime.add_close_hook(lambda: seen.append("kept"))
    remove()
    remove()  # harmless twice
    runtime.close()
    remove()  # and after the close
    assert seen == ["kept"]


def test_a_hook_that_raises_goes_to_the_error_handler_and_the_close_goes_on() -> None:
    errors: List[Any] = []
    runtime = loadstate.Runtime(loadstate.Delivery.POLL, on_error=lambda exc, context: errors.append((exc, context)))
    seen: List[str] = []
    runtime.add_close_hook(lambda: seen.append("ran"))

    def broken() -> None:
        raise ValueError("broken hook")

    runtime.add_close_hook(broken)
    runtime.close()
    assert runtime.closed and seen == ["ran"]
    assert len(errors) == 1 and isinstance(errors[0][0], ValueError) and errors[0][1] == "a close hook"


def test_add_close_hook_checks_its_argument_and_the_runtime() -> None:
    runtime = loadstate.Runtime()
    with pytest.raises(TypeError):
        runtime.add_close_hook(42)  # type: ignore[arg-type]
    runtime.close()
    with pytest.raises(loadstate.Closed):
        runtime.add_close_hook(lambda: None)
