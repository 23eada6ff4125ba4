"""loadstate.qt: a POLL-mode runtime driven by Qt's event loop (PySide6), on a virtual display (Xvfb).

Each test runs ``app.exec()`` until the events it waits for have arrived (a callback calls ``app.quit()``; a
QTimer watchdog ends a test that waits too long). Only the CPU measurements wait for a fixed time: they
measure what the process does while nothing happens. ``make test-gui-qt`` installs PySide6 and runs them.
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

QtWidgets = pytest.importorskip("PySide6.QtWidgets", reason="PySide6 is not installed (make test-gui-qt "
                                "installs it and runs these tests)")
if xvfb.missing():
    pytest.skip(xvfb.missing() or "", allow_module_level=True)

from PySide6 import QtCore  # noqa: E402

import loadstate.qt  # noqa: E402

WAIT = 10.0
PACKAGE_DIR = Path(loadstate.__file__).resolve().parent.parent
IDLE_CPU_PER_SECOND = 0.05


@pytest.fixture(scope="session")
def app() -> Any:
    # For the whole session: the QApplication outlives any test, and must not outlive its display.
    for _ in xvfb.display():
        application = QtWidgets.QApplication.instance() or QtWidgets.QApplication(["test"])
        yield application


def run_until(app: Any, done: Callable[[], bool], what: str) -> None:
    if done():
        return
    timed_out: List[bool] = []

    def give_up() -> None:
        timed_out.append(True)
        app.quit()

    watchdog = QtCore.QTimer()
    watchdog.setSingleShot(True)
    watchdog.timeout.connect(give_up)
    watchdog.start(int(WAIT * 1000))
    app.exec()
    watchdog.stop()
    assert not timed_out, f"timed out waiting for {what}"
    assert done(), f"Qt's loop ended before {what}"


def idle_cpu(app: Any, seconds: float) -> float:
    start = time.process_time()
    QtCore.QTimer.singleShot(int(seconds * 1000), app.quit)
    app.exec()
    return time.process_time() - start


class Errors(List[Any]):
    def __call__(self, exc: BaseException, context: str) -> None:
        self.append((exc, context))


class Cell:
    """A cell and an inline loader whose jobs stay open until the test ends them (see test_gui_tk.App)."""

    def __init__(self, app: Any, runtime: loadstate.Runtime) -> None:
        self.app = app
        self.threads: List[int] = []
        self.events: List[loadstate.Event[bytes]] = []
        self.jobs: Dict[bytes, loadstate.Job] = {}
        self.cancelled: List[bytes] = []
        self.until: Callable[[], bool] = lambda: False

        def start(job: loadstate.Job) -> None:
            self.threads.append(threading.get_ident())
            job.on_cancel(self._cancelled)
            job.detach()
            self.jobs[job.request] = job
            self._check()

        self.cell = runtime.loadable(runtime.loader(start, inline=True))
        self.cell.subscribe(self._event)

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
            self.app.quit()

    def wait(self, done: Callable[[], bool], what: str) -> None:
        self.until = done
        try:
            run_until(self.app, done, what)
        finally:
            self.until = lambda: False

    def last(self) -> loadstate.Event[bytes]:
        return self.events[-1]


def later(fn: Callable[[], Any]) -> None:
    QtCore.QTimer.singleShot(0, fn)


def test_loads_supersedes_cancels_interrupts_and_fails_on_qt_thread(app: Any) -> None:
    errors = Errors()
    ui_thread = threading.get_ident()
    window = QtWidgets.QLabel("loadstate")
    window.show()
    with loadstate.Runtime(loadstate.Delivery.POLL, on_error=errors) as runtime:
        attachment = loadstate.qt.attach(runtime)
        c = Cell(app, runtime)

        c.cell.load(b"a", interrupts=[0.05])
        c.wait(lambda: any(e.type is loadstate.EventType.INTERRUPT for e in c.events), "the interrupt")
        assert c.events[0].status is loadstate.Status.LOADING and c.events[0].request == b"a"
        later(lambda: c.jobs[b"a"].succeed(b"A"))
        c.wait(lambda: c.last().status is loadstate.Status.LOADED, "the value of a")
        assert (c.last().value, c.last().request) == (b"A", b"a")

        c.cell.load(b"b")
        c.wait(lambda: b"b" in c.jobs, "the job of b")
        c.cell.load(b"c")
        c.wait(lambda: b"c" in c.jobs and b"b" in c.cancelled, "b superseded by c")
        later(lambda: c.jobs[b"c"].succeed(b"C"))
        c.wait(lambda: c.last().status is loadstate.Status.LOADED and c.last().request == b"c", "the value of c")
        assert c.last().value == b"C"

        c.cell.load(b"d")
        c.wait(lambda: b"d" in c.jobs, "the job of d")
        later(c.cell.cancel)
        c.wait(lambda: c.last().cancelled and b"d" in c.cancelled, "the cancel of d")
        assert (c.last().status, c.last().value) == (loadstate.Status.LOADED, b"C")

        c.cell.load(b"e")
        c.wait(lambda: b"e" in c.jobs, "the job of e")
        later(lambda: c.jobs[b"e"].fail(7, "no such thing"))
        c.wait(lambda: c.last().status is loadstate.Status.ERROR, "the error of e")
        assert (c.last().error_code, c.last().error_message) == (7, "no such thing")

        assert len(c.threads) >= 12
        assert set(c.threads) == {ui_thread}
        attachment.close()
        assert attachment.closed and attachment.notifier is None
    window.close()
    assert errors == []


def test_idle_attached_runtime_uses_no_cpu(app: Any) -> None:
    with loadstate.Runtime(loadstate.Delivery.POLL) as runtime:
        attachment = loadstate.qt.attach(runtime)
        c = Cell(app, runtime)
        c.cell.load(b"x")
        c.wait(lambda: b"x" in c.jobs, "the job of x")
        used = idle_cpu(app, 2.0)
        assert used < 2.0 * IDLE_CPU_PER_SECOND, f"{used:.3f} s of CPU in 2 s while idle"
        attachment.close()


def test_closing_the_window_mid_load_frees_cleanly(app: Any) -> None:
    errors = Errors()
    window = QtWidgets.QLabel("loadstate")
    window.show()
    runtime = loadstate.Runtime(loadstate.Delivery.POLL, on_error=errors)
    attachment = loadstate.qt.attach(runtime, parent=window)
    c = Cell(app, runtime)
    load = c.cell.load(b"slow")
    c.wait(lambda: b"slow" in c.jobs, "the job of slow")
    closed: List[bool] = []

    def close_window() -> None:
        window.close()
        closed.append(True)
        app.quit()

    later(close_window)
    app.exec()
    assert closed
    runtime.close()  # the close hook disabled the notifier first
    assert attachment.closed
    assert c.jobs[b"slow"].cancelled
    with pytest.raises(loadstate.Closed):
        load.value(timeout=WAIT)
    used = idle_cpu(app, 1.0)
    assert used < IDLE_CPU_PER_SECOND, f"{used:.3f} s of CPU in the second after the close"
    assert errors == []


def test_attach_needs_a_poll_runtime(app: Any) -> None:
    with loadstate.Runtime() as runtime:
        with pytest.raises(loadstate.WrongState):
            loadstate.qt.attach(runtime)


def test_without_pyside6_or_pyqt6_the_error_names_both() -> None:
    code = ("import sys; sys.modules['PySide6'] = None; sys.modules['PyQt6'] = None\n"
            "import loadstate, loadstate.qt\n"
            "rt = loadstate.Runtime('poll')\n"
            "try:\n"
            "    loadstate.qt.attach(rt)\n"
            "except ImportError as e:\n"
            "    print(e)\n"
            "rt.close()\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=WAIT,
                            cwd=str(PACKAGE_DIR))
    assert result.returncode == 0, result.stderr
    assert "PySide6" in result.stdout and "PyQt6" in result.stdout
