"""loadstate.tk: a POLL-mode runtime driven by Tk's event loop, on a virtual display (Xvfb).

Each test runs ``root.mainloop()`` until the events it waits for have arrived (a callback calls
``root.quit()``; an ``after`` watchdog ends a test that waits too long). Only the CPU measurements wait for a
fixed time: they measure what the process does while nothing happens.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, List

import pytest

import loadstate

import xvfb

tkinter = pytest.importorskip("tkinter", reason="this python3 cannot import tkinter (Debian: python3-tk, "
                              "which also brings the Tcl/Tk libraries that a python3 of its own loads)")
if xvfb.missing():
    pytest.skip(xvfb.missing() or "", allow_module_level=True)

import loadstate.tk  # noqa: E402

WAIT = 10.0
PACKAGE_DIR = Path(loadstate.__file__).resolve().parent.parent
# Process CPU time allowed while idle or after a close: a spinning Tk notifier uses most of a core.
IDLE_CPU_PER_SECOND = 0.05


@pytest.fixture(scope="module")
def display() -> Any:
    yield from xvfb.display()


@pytest.fixture
def root(display: str) -> Any:
    window = tkinter.Tk()
    yield window
    try:
        window.destroy()
    except tkinter.TclError:
        pass  # the test destroyed it


class Errors(List[Any]):
    def __call__(self, exc: BaseException, context: str) -> None:
        self.append((exc, context))


def run_until(root: Any, done: Callable[[], bool], what: str) -> None:
    """Runs Tk's loop until ``done()`` (checked after every Tk callback the test makes), at most WAIT s."""
    if done():
        return
    timed_out: List[bool] = []

    def give_up() -> None:
        timed_out.append(True)
        root.quit()

    watchdog = root.after(int(WAIT * 1000), give_up)
    root.mainloop()
    root.after_cancel(watchdog)
    assert not timed_out, f"timed out waiting for {what}"
    assert done(), f"Tk's loop ended before {what}"


def idle_cpu(root: Any, seconds: float) -> float:
    """The process CPU time spent while Tk's loop runs ``seconds`` with nothing to do."""
    start = time.process_time()
    root.after(int(seconds * 1000), root.quit)
    root.mainloop()
    return time.process_time() - start


class App:
    """A cell and an inline loader whose jobs stay open until the test ends them; every callback records
    the thread it ran on, and calls ``root.quit()`` when the test's condition holds."""

    def __init__(self, root: Any, runtime: loadstate.Runtime) -> None:
        self.root = root
        self.runtime = runtime
        self.threads: List[int] = []
        self.events: List[loadstate.Event[bytes]] = []
        self.jobs: Dict[bytes, loadstate.Job] = {}
        self.cancelled: List[bytes] = []
        self.until: Callable[[], bool] = lambda: False

        def start(job: loadstate.Job) -> None:
            self.threads.append(threading.get_ident())
            job.on_cancel(lambda j: self._cancelled(j))
            job.detach()
            self.jobs[job.request] = job
            self._check()

        self.loader = runtime.loader(start, inline=True)
        self.cell = runtime.loadable(self.loader)
        self.unsubscribe = self.cell.subscribe(self._event)

    def _cancelled(self, job: loadstate.Job) -> None:
        self.threads.append(threading.get_ident())
        self.cancelled.append(job.request)
        self._check()

    def _event(self, event: loadstate.Event[bytes]) -> None:
        self.threads.append(threading.get_ident())
        self.events.append(event)
        self._check()

    def _check(self) -> None:
        if self.until():
            self.root.quit()

    def wait(self, done: Callable[[], bool], what: str) -> None:
        self.until = done
        try:
            run_until(self.root, done, what)
        finally:
            self.until = lambda: False

    def last(self) -> loadstate.Event[bytes]:
        return self.events[-1]


def test_loads_supersedes_cancels_interrupts_and_fails_on_tk_thread(root: Any) -> None:
    errors = Errors()
    ui_thread = threading.get_ident()
    with loadstate.Runtime(loadstate.Delivery.POLL, on_error=errors) as runtime:
        attachment = loadstate.tk.attach(root, runtime)
        app = App(root, runtime)

        # A load: loading, an interrupt while it runs, then its value.
        app.cell.load(b"a", interrupts=[0.05])
        app.wait(lambda: any(e.type is loadstate.EventType.INTERRUPT for e in app.events), "the interrupt")
        assert app.events[0].status is loadstate.Status.LOADING and app.events[0].request == b"a"
        interrupt = next(e for e in app.events if e.type is loadstate.EventType.INTERRUPT)
        assert interrupt.elapsed_ms >= 50 and interrupt.status is loadstate.Status.LOADING
        root.after(0, lambda: app.jobs[b"a"].succeed(b"A"))
        app.wait(lambda: app.last().status is loadstate.Status.LOADED, "the value of a")
        assert (app.last().value, app.last().request) == (b"A", b"a")

        # A load superseded by another: the first job is cancelled, the second one's value shows.
        app.cell.load(b"b")
        app.wait(lambda: b"b" in app.jobs, "the job of b")
        app.cell.load(b"c")
        app.wait(lambda: b"c" in app.jobs and b"b" in app.cancelled, "b superseded by c")
        root.after(0, lambda: app.jobs[b"c"].succeed(b"C"))
        app.wait(lambda: app.last().status is loadstate.Status.LOADED and app.last().request == b"c",
                 "the value of c")
        assert app.last().value == b"C"

        # A cancelled load: the cell shows the previous value again, flagged cancelled.
        app.cell.load(b"d")
        app.wait(lambda: b"d" in app.jobs, "the job of d")
        root.after(0, app.cell.cancel)
        app.wait(lambda: app.last().cancelled and b"d" in app.cancelled, "the cancel of d")
        assert (app.last().status, app.last().value, app.last().request) == (loadstate.Status.LOADED, b"C", b"c")

        # A failed load.
        app.cell.load(b"e")
        app.wait(lambda: b"e" in app.jobs, "the job of e")
        root.after(0, lambda: app.jobs[b"e"].fail(7, "no such thing"))
        app.wait(lambda: app.last().status is loadstate.Status.ERROR, "the error of e")
        assert (app.last().error_code, app.last().error_message, app.last().request) == (7, "no such thing", b"e")

        # Every callback ran on Tk's thread.
        assert len(app.threads) >= 12
        assert set(app.threads) == {ui_thread}
        attachment.close()
        assert attachment.closed
    assert errors == []


def test_idle_attached_runtime_uses_no_cpu(root: Any) -> None:
    with loadstate.Runtime(loadstate.Delivery.POLL) as runtime:
        attachment = loadstate.tk.attach(root, runtime)
        app = App(root, runtime)
        app.cell.load(b"x")  # one load first, so the descriptor has been readable and drained
        app.wait(lambda: b"x" in app.jobs, "the job of x")
        used = idle_cpu(root, 2.0)
        assert used < 2.0 * IDLE_CPU_PER_SECOND, f"{used:.3f} s of CPU in 2 s while idle"
        attachment.close()


def test_closing_the_window_mid_load_frees_cleanly(root: Any) -> None:
    errors = Errors()
    runtime = loadstate.Runtime(loadstate.Delivery.POLL, on_error=errors)
    attachment = loadstate.tk.attach(root, runtime)
    app = App(root, runtime)
    load = app.cell.load(b"slow")
    app.wait(lambda: b"slow" in app.jobs, "the job of slow")
    destroyed: List[bool] = []

    def close_window() -> None:
        root.destroy()  # what the window manager's close button does
        destroyed.append(True)

    root.after(0, close_window)
    root.mainloop()  # returns once the window is gone
    assert destroyed and attachment.closed  # the <Destroy> binding stopped the watch
    job = app.jobs[b"slow"]
    runtime.close()
    assert job.cancelled
    with pytest.raises(loadstate.Closed):
        load.value(timeout=WAIT)
    assert errors == []


def test_closing_the_runtime_first_stops_the_watch_before_the_descriptor_closes(root: Any) -> None:
    runtime = loadstate.Runtime(loadstate.Delivery.POLL)
    attachment = loadstate.tk.attach(root, runtime)
    app = App(root, runtime)
    app.cell.load(b"slow")
    app.wait(lambda: b"slow" in app.jobs, "the job of slow")
    runtime.close()  # the close hook removed the file handler first
    assert attachment.closed
    used = idle_cpu(root, 1.0)  # Tk's loop goes on with the window open
    assert used < IDLE_CPU_PER_SECOND, f"{used:.3f} s of CPU in the second after the close"
    attachment.close()  # harmless again
    root.destroy()


def test_a_handler_left_on_a_freed_descriptor_spins(display: str) -> None:
    """The measurement of the tests above sees the mistake the helper avoids: without the helper, a handler
    left watching the descriptor that the runtime's close freed makes Tk's loop spin. In a process of its own,
    so that the spinning notifier does not outlive the test."""
    code = ("import time, tkinter, loadstate\n"
            "root = tkinter.Tk()\n"
            "runtime = loadstate.Runtime('poll')\n"
            "fd = runtime.fd\n"
            "root.tk.createfilehandler(fd, tkinter.READABLE, lambda *args: None)\n"
            "runtime.close()\n"
            "start = time.process_time()\n"
            "root.after(1000, root.quit)\n"
            "root.mainloop()\n"
            "print(time.process_time() - start)\n"
            "root.tk.deletefilehandler(fd)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=WAIT,
                            cwd=str(PACKAGE_DIR))
    assert result.returncode == 0, result.stderr
    used = float(result.stdout)
    assert used > 10 * IDLE_CPU_PER_SECOND, f"only {used:.3f} s of CPU: the spin was not seen"


def test_attach_needs_a_poll_runtime(root: Any) -> None:
    with loadstate.Runtime() as runtime:
        with pytest.raises(loadstate.WrongState):
            loadstate.tk.attach(root, runtime)
    closed = loadstate.Runtime(loadstate.Delivery.POLL)
    closed.close()
    with pytest.raises(loadstate.Closed):
        loadstate.tk.attach(root, closed)


def test_the_package_imports_without_tkinter() -> None:
    code = ("import sys; sys.modules['tkinter'] = None\n"
            "import loadstate, loadstate.tk\n"
            "rt = loadstate.Runtime('poll')\n"
            "try:\n"
            "    loadstate.tk.attach(None, rt)\n"
            "except ImportError:\n"
            "    print('ImportError')\n"
            "rt.close()\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=WAIT,
                            cwd=str(PACKAGE_DIR))
    assert result.returncode == 0, result.stderr
    assert result.stdout == "ImportError\n"
