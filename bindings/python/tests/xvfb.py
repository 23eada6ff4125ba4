"""A virtual X display (Debian's Xvfb) for the GUI tests, and a way to run a GUI test's body in a process of
its own.

Xvfb starts on a free display number, which it picks and writes to a pipe once it accepts clients
(-displayfd), so nothing waits by sleeping; it is stopped when the fixture ends, whatever the test did, and
killed by the kernel if the process that started it dies first.

The toolkits never run in the pytest process itself (:func:`in_child`): Tk keeps its connection to an X
display open after its last window is destroyed, and once that display's server has stopped, the next Tk
event loop of the process gets a fatal X I/O error and Xlib exits the whole process (a later test's Tk
took down the pytest worker that way). A child process per test body also bounds a hang (a timeout kills
it) and a crash (reported as the test's failure, with faulthandler's trace).
"""

from __future__ import annotations

import ctypes
import functools
import json
import os
import select
import shutil
import signal
import subprocess
import sys
from typing import Callable, Iterator, List, Optional

import pytest

WAIT = 10.0
#: The process ids of the Xvfb servers this process started.
started: List[int] = []


def missing() -> Optional[str]:
    """Why no virtual display can start here, or None."""
    if shutil.which("Xvfb") is None:
        return "Xvfb is not installed (Debian: apt-get install xvfb)"
    return None


def _die_with_parent() -> None:
    """In Xvfb's process before exec: the kernel kills it when the process that started it ends, even by a
    crash that runs no finalizer (Linux's PR_SET_PDEATHSIG)."""
    ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def display() -> Iterator[str]:
    """Starts Xvfb, sets DISPLAY for the duration, yields it, stops Xvfb (for a pytest fixture)."""
    read_end, write_end = os.pipe()
    process = subprocess.Popen(["Xvfb", "-displayfd", str(write_end), "-nolisten", "tcp", "-screen", "0",
                                "640x480x24"], pass_fds=(write_end,), stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, preexec_fn=_die_with_parent)
    os.close(write_end)
    started.append(process.pid)
    try:
        text = b""
        while not text.endswith(b"\n"):
            ready, _, _ = select.select([read_end], [], [], WAIT)
            if not ready:
                pytest.fail(f"Xvfb did not report its display within {WAIT} s")
            chunk = os.read(read_end, 64)
            if not chunk:
                pytest.fail(f"Xvfb exited before reporting its display (rc {process.wait()})")
            text += chunk
        name = f":{int(text)}"
        old = os.environ.get("DISPLAY")
        os.environ["DISPLAY"] = name
        try:
            yield name
        finally:
            if old is None:
                os.environ.pop("DISPLAY", None)
            else:
                os.environ["DISPLAY"] = old
    finally:
        os.close(read_end)
        process.terminate()
        try:
            process.wait(WAIT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


#: The longest a test body may run in its child process.
CHILD_TIMEOUT = 60.0


_CHILD_CODE = ("import faulthandler, json, sys\n"
               "faulthandler.enable()\n"
               "faulthandler.dump_traceback_later(float(sys.argv[4]), exit=True)\n"
               "sys.path[:0] = json.loads(sys.argv[1])\n"
               "import importlib, _pytest.outcomes\n"
               "try:\n"
               "    function = getattr(importlib.import_module(sys.argv[2]), sys.argv[3])\n"
               "    getattr(function, 'body', function)()\n"
               "except _pytest.outcomes.Skipped as skip:\n"
               "    print(skip.msg, file=sys.stderr)\n"
               "    sys.exit(3)\n")


class Child:
    """A test body running in a python3 of its own (see :func:`in_child`); :meth:`result` waits for it."""

    def __init__(self, body: Callable[[], None], timeout: float = CHILD_TIMEOUT) -> None:
        self.name = body.__name__
        self.timeout = timeout
        env = dict(os.environ)
        self.process = subprocess.Popen([sys.executable, "-c", _CHILD_CODE, json.dumps(sys.path), body.__module__,
                                         body.__name__, str(max(timeout - 5, 1))], env=env,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def result(self) -> str:
        """The child's standard output once it has exited 0; fails (or skips) the test otherwise."""
        try:
            out, err = self.process.communicate(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            out, err = self.process.communicate()
            pytest.fail(f"{self.name} did not end within {self.timeout} s; its output:\n{out}{err}", pytrace=False)
        if self.process.returncode == 3:
            pytest.skip(err.strip())
        if self.process.returncode != 0:
            pytest.fail(f"{self.name} failed in its process (rc {self.process.returncode}):\n{out}{err}",
                        pytrace=False)
        return out

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def in_child(body: Callable[[], None]) -> Callable[..., None]:
    """Makes a test whose ``body`` runs in a fresh python3 (the ``display`` fixture's DISPLAY in its
    environment): the child imports the test module and calls ``body``. An assertion that fails, an
    exception, a crash or a hang (faulthandler dumps every thread and the child exits 5 s before
    :data:`CHILD_TIMEOUT`; the parent kills it at the limit) fails the test with the child's output;
    ``pytest.skip`` in the child skips it."""

    @functools.wraps(body)
    def test(display: str) -> None:
        Child(body).result()

    # pytest reads the signature: the test asks for the display, not for what body asks for.
    del test.__wrapped__
    test.body = body  # type: ignore[attr-defined]  # what the child calls
    return test
