"""loadstate.tk: a POLL-mode runtime driven by Tk's event loop, on a virtual display (Xvfb).

Each test's body runs in a python3 of its own (``xvfb.in_child``: Tk never runs in the pytest process, where
it would outlive its display), which runs ``root.mainloop()`` until the events it waits for have arrived (a
callback calls ``root.quit()``; an ``after`` watchdog ends a test that waits too long). Only the CPU
measurements wait for a fixed time: they measure what the process does while nothing happens. The 10 s
idle measurement starts with the module, in a process of its own, and runs while the other tests do.
"""

from __future__ import annotations

import contextlib
import os
import re
import resource
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List

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
# The idle measurement: this long, at most this much CPU time in all (1%: Tk sleeps in select).
IDLE_SECONDS = 10.0
IDLE_CPU_LIMIT = 0.1


@pytest.fixture(scope="module")
def display() -> Any:
    yield from xvfb.display()


@pytest.fixture(scope="module", autouse=True)
def idle(display: str) -> Iterator[xvfb.Child]:
    """The 10 s idle measurement (:func:`idle_for_10_s`), started with the module so that it overlaps the
    other tests; test_idle_attached_runtime_uses_no_cpu_over_10_s, the module's last test, reads it."""
    child = xvfb.Child(idle_for_10_s)
    try:
        yield child
    finally:
        child.kill()


@contextlib.contextmanager
def tk_root() -> Iterator[Any]:
    window = tkinter.Tk()
    try:
        yield window
    finally:
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


@xvfb.in_child
def test_loads_supersedes_cancels_interrupts_and_fails_on_tk_thread() -> None:
    with tk_root() as root:
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


def idle_for_10_s() -> None:
    """Prints the CPU time the process spends in Tk's loop over IDLE_SECONDS with an attached runtime that has
    a load in flight and nothing to deliver (run by the ``idle`` fixture in a process of its own)."""
    with tk_root() as root:
        with loadstate.Runtime(loadstate.Delivery.POLL) as runtime:
            attachment = loadstate.tk.attach(root, runtime)
            app = App(root, runtime)
            app.cell.load(b"x")  # one load first, so the descriptor has been readable and drained
            app.wait(lambda: b"x" in app.jobs, "the job of x")
            print(idle_cpu(root, IDLE_SECONDS))
            attachment.close()


@xvfb.in_child
def test_closing_the_window_mid_load_frees_cleanly() -> None:
    with tk_root() as root:
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


@xvfb.in_child
def test_closing_the_runtime_first_stops_the_watch_before_the_descriptor_closes() -> None:
    with tk_root() as root:
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


@xvfb.in_child
def test_attach_needs_a_poll_runtime() -> None:
    with tk_root() as root:
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


@xvfb.in_child
def test_a_kept_descriptor_closed_on_another_thread_leaves_tk_idle() -> None:
    """The close hook then runs on that thread, which must not call Tcl: the handler stops dispatching at
    once, the kept descriptor stays quiet, and the attachment's close on Tk's thread removes the handler."""
    with tk_root() as root:
        for in_loop in (False, True):  # Tk's thread waiting for the closing thread, or in its loop
            errors = Errors()
            runtime = loadstate.Runtime(loadstate.Delivery.POLL, on_error=errors, keep_fd=True)
            attachment = loadstate.tk.attach(root, runtime)
            app = App(root, runtime)
            app.cell.load(b"slow")
            app.wait(lambda: b"slow" in app.jobs, "the job of slow")
            closer = threading.Thread(target=runtime.close)
            if in_loop:
                root.after(0, closer.start)
            else:
                closer.start()
                closer.join(WAIT)
            used = idle_cpu(root, 1.0)
            closer.join(WAIT)
            assert attachment.closed and runtime.closed
            assert used < IDLE_CPU_PER_SECOND, f"in_loop={in_loop}: {used:.3f} s of CPU in the second after"
            attachment.close()  # on Tk's thread: removes the handler
            assert not attachment.watching
            os.close(attachment.fd)
            assert errors == []


@xvfb.in_child
def test_a_kept_descriptor_closed_on_tks_thread() -> None:
    """keep_fd=True, closed where it should be: the hook removes the handler before the free, the descriptor
    stays open for the application to close."""
    with tk_root() as root:
        runtime = loadstate.Runtime(loadstate.Delivery.POLL, keep_fd=True)
        attachment = loadstate.tk.attach(root, runtime)
        runtime.close()
        assert attachment.closed and not attachment.watching
        os.fstat(attachment.fd)  # still open
        used = idle_cpu(root, 0.5)
        assert used < IDLE_CPU_PER_SECOND, f"{used:.3f} s of CPU in the half second after"
        os.close(attachment.fd)


@xvfb.in_child
def test_a_closed_descriptor_closed_on_another_thread_is_reported() -> None:
    """Without keep_fd, the descriptor closes under the handler: the error handler hears of it."""
    with tk_root() as root:
        errors = Errors()
        runtime = loadstate.Runtime(loadstate.Delivery.POLL, on_error=errors)
        attachment = loadstate.tk.attach(root, runtime)
        closer = threading.Thread(target=runtime.close)
        closer.start()
        closer.join(WAIT)
        assert attachment.closed and runtime.closed
        assert len(errors) == 1 and isinstance(errors[0][0], RuntimeError), errors
        assert "keep_fd=True" in str(errors[0][0])
        attachment.close()  # on Tk's thread: removes the handler
        assert not attachment.watching
        used = idle_cpu(root, 0.5)
        assert used < IDLE_CPU_PER_SECOND, f"{used:.3f} s of CPU in the half second after"


@xvfb.in_child
def test_attach_on_another_thread_than_tks_is_refused() -> None:
    with tk_root() as root, loadstate.Runtime(loadstate.Delivery.POLL) as runtime:
        raised: List[BaseException] = []

        def attach() -> None:
            try:
                loadstate.tk.attach(root, runtime)
            except BaseException as exc:  # noqa: BLE001
                raised.append(exc)

        thread = threading.Thread(target=attach)
        thread.start()
        thread.join(WAIT)
        assert len(raised) == 1 and isinstance(raised[0], RuntimeError), raised


@xvfb.in_child
def test_a_descriptor_beyond_fd_setsize_is_refused_not_an_abort() -> None:
    """Tcl 8.6 watches descriptors with select: FD_SET of a descriptor >= 1024 aborts the process."""
    with tk_root() as root:
        if not loadstate.tk._select_notifier(root):
            pytest.skip(f"Tcl {root.tk.call('info', 'patchlevel')} does not watch with select")
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if hard != resource.RLIM_INFINITY and hard < loadstate.tk.FD_SETSIZE + 64:
            pytest.skip(f"the descriptor limit is {hard}")
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, loadstate.tk.FD_SETSIZE + 64), hard))
        filler = []
        while not filler or filler[-1] < loadstate.tk.FD_SETSIZE:
            filler.append(os.open(os.devnull, os.O_RDONLY))
        with loadstate.Runtime(loadstate.Delivery.POLL) as runtime:
            assert runtime.fd >= loadstate.tk.FD_SETSIZE
            with pytest.raises(ValueError, match="below 1024"):
                loadstate.tk.attach(root, runtime)
        for fd in filler:
            os.close(fd)


def tk_outliving_its_display() -> None:
    """What took a pytest worker down once: a Tk whose display's server stopped, then another Tk."""
    displays = xvfb.display()
    next(displays)
    first = tkinter.Tk()
    first.update()
    first.destroy()  # Tk keeps its connection to the display
    displays.close()  # the server stops
    again = xvfb.display()
    next(again)
    print(f"Xvfb {xvfb.started[-1]}", flush=True)
    try:
        second = tkinter.Tk()
        second.update()  # Tk reads the dead connection: Xlib's fatal I/O error exits the process
        second.destroy()
    finally:
        again.close()


def test_a_toolkit_crash_fails_only_its_test_and_its_xvfb_goes_too(display: str) -> None:
    with pytest.raises(pytest.fail.Exception, match="XIO") as failure:
        xvfb.Child(tk_outliving_its_display).result()
    assert "failed in its process" in str(failure.value)
    # The crash ran no finalizer: the kernel killed the Xvfb the child had started.
    pid = int(re.search(r"Xvfb (\d+)", str(failure.value)).group(1))  # type: ignore[union-attr]
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline and alive(pid):
        time.sleep(0.01)
    assert not alive(pid), f"Xvfb {pid} outlived the process that started it"


def alive(pid: int) -> bool:
    """Whether the process runs (a zombie waiting for init to reap it does not)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_idle_attached_runtime_uses_no_cpu_over_10_s(idle: xvfb.Child) -> None:
    """The last test of the module: the measurement started with the module and has run meanwhile."""
    used = float(idle.result())
    print(f"Tk: {used:.4f} s of CPU in {IDLE_SECONDS} s idle, attached")
    assert used < IDLE_CPU_LIMIT, f"{used:.3f} s of CPU in {IDLE_SECONDS} s while idle"
