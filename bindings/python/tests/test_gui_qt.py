"""loadstate.qt: a POLL-mode runtime driven by Qt's event loop, on a virtual display (Xvfb).

The binding is the one loadstate.qt.binding() picks: ``QT_API`` (``pyside6`` or ``pyqt6``) when set, else
PySide6, else PyQt6; ``make test-gui-qt`` installs both and runs this file once with each. Each test's body
runs in a python3 of its own (``xvfb.in_child``; see xvfb.py), which makes its ``QApplication`` and runs
``app.exec()`` until the events it waits for have arrived (a callback calls ``app.quit()``; a QTimer watchdog
ends a test that waits too long). Only the CPU measurements wait for a fixed time: they measure what the
process does while nothing happens; the 10 s idle one starts with the module, in a process of its own, and
runs while the other tests do.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List

import pytest

import loadstate
import loadstate.qt

import xvfb

try:
    QtCore = loadstate.qt.binding()
except ImportError as missing_qt:
    pytest.skip(f"{missing_qt} (make test-gui-qt installs PySide6 and PyQt6 and runs these tests)",
                allow_module_level=True)
if xvfb.missing():
    pytest.skip(xvfb.missing() or "", allow_module_level=True)

QtWidgets = __import__(QtCore.__name__.split(".")[0] + ".QtWidgets", fromlist=["QtWidgets"])
API = QtCore.__name__.split(".")[0].lower()

WAIT = 10.0
PACKAGE_DIR = Path(loadstate.__file__).resolve().parent.parent
IDLE_CPU_PER_SECOND = 0.05
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
def qt_app() -> Iterator[Any]:
    application = QtWidgets.QApplication(["test"])
    try:
        yield application
    finally:
        application.processEvents()


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


@xvfb.in_child
def test_loads_supersedes_cancels_interrupts_and_fails_on_qt_thread() -> None:
    with qt_app() as app:
        loads_supersedes_cancels_interrupts_and_fails(app)


def loads_supersedes_cancels_interrupts_and_fails(app: Any) -> None:
    errors = Errors()
    ui_thread = threading.get_ident()
    window = QtWidgets.QLabel("loadstate")
    window.show()
    with loadstate.Runtime(loadstate.Delivery.POLL, on_error=errors) as runtime:
        attachment = loadstate.qt.attach(runtime)
        assert attachment.api == API
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


def idle_for_10_s() -> None:
    """Prints the CPU time the process spends in Qt's loop over IDLE_SECONDS with an attached runtime that has
    a load in flight and nothing to deliver (run by the ``idle`` fixture in a process of its own)."""
    with qt_app() as app, loadstate.Runtime(loadstate.Delivery.POLL) as runtime:
        window = QtWidgets.QLabel("loadstate")
        window.show()
        attachment = loadstate.qt.attach(runtime)
        c = Cell(app, runtime)
        c.cell.load(b"x")
        c.wait(lambda: b"x" in c.jobs, "the job of x")
        print(idle_cpu(app, IDLE_SECONDS))
        attachment.close()
        window.close()


@xvfb.in_child
def test_closing_the_window_mid_load_frees_cleanly() -> None:
    with qt_app() as app:
        closing_the_window_mid_load_frees_cleanly(app)


def closing_the_window_mid_load_frees_cleanly(app: Any) -> None:
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


@xvfb.in_child
def test_attach_needs_a_poll_runtime_and_the_application_thread() -> None:
    with loadstate.Runtime(loadstate.Delivery.POLL) as runtime:
        with pytest.raises(RuntimeError, match="QApplication"):
            loadstate.qt.attach(runtime)  # no QApplication yet
        with qt_app():
            with loadstate.Runtime() as loop_runtime:
                with pytest.raises(loadstate.WrongState):
                    loadstate.qt.attach(loop_runtime)
            raised: List[BaseException] = []

            def attach() -> None:
                try:
                    loadstate.qt.attach(runtime)
                except BaseException as exc:  # noqa: BLE001
                    raised.append(exc)

            thread = threading.Thread(target=attach)
            thread.start()
            thread.join(WAIT)
            assert len(raised) == 1 and isinstance(raised[0], RuntimeError), raised
            assert "thread" in str(raised[0])


@xvfb.in_child
def test_a_kept_descriptor_closed_on_another_thread_leaves_qt_idle() -> None:
    """The close hook then runs on that thread, where the notifier cannot be disabled: the dispatching stops
    at once, the kept descriptor stays quiet, and the attachment's close on Qt's thread releases it."""
    with qt_app() as app:
        errors = Errors()
        runtime = loadstate.Runtime(loadstate.Delivery.POLL, on_error=errors, keep_fd=True)
        attachment = loadstate.qt.attach(runtime)
        c = Cell(app, runtime)
        c.cell.load(b"slow")
        c.wait(lambda: b"slow" in c.jobs, "the job of slow")
        closer = threading.Thread(target=runtime.close)
        closer.start()
        closer.join(WAIT)
        assert attachment.closed and runtime.closed and attachment.notifier is not None
        used = idle_cpu(app, 1.0)
        assert used < IDLE_CPU_PER_SECOND, f"{used:.3f} s of CPU in the second after the close"
        attachment.close()  # on Qt's thread: releases the notifier
        assert attachment.notifier is None
        os.close(attachment.fd)
        assert errors == []


@xvfb.in_child
def test_a_kept_descriptor_closed_on_qts_thread() -> None:
    """keep_fd=True, closed where it should be: the hook releases the notifier before the free, the
    descriptor stays open for the application to close."""
    with qt_app() as app:
        runtime = loadstate.Runtime(loadstate.Delivery.POLL, keep_fd=True)
        attachment = loadstate.qt.attach(runtime)
        runtime.close()
        assert attachment.closed and attachment.notifier is None
        os.fstat(attachment.fd)  # still open
        used = idle_cpu(app, 0.5)
        assert used < IDLE_CPU_PER_SECOND, f"{used:.3f} s of CPU in the half second after"
        os.close(attachment.fd)


def binding_in_a_child(env: Dict[str, str], code: str = "import loadstate.qt\n"
                       "print(loadstate.qt.binding().__name__)\n") -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if k != "QT_API"}
    environment.update(env)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=WAIT,
                          cwd=str(PACKAGE_DIR), env=environment)


def installed(package: str) -> bool:
    return binding_in_a_child({}, f"import {package}.QtCore").returncode == 0


@pytest.mark.parametrize("api, package", [("pyside6", "PySide6"), ("pyqt6", "PyQt6"), ("PyQt6", "PyQt6")])
def test_qt_api_chooses_the_binding(api: str, package: str) -> None:
    if not installed(package):
        pytest.skip(f"{package} is not installed")
    result = binding_in_a_child({"QT_API": api})
    assert (result.returncode, result.stdout) == (0, f"{package}.QtCore\n"), result.stderr
    # The argument wins over the variable.
    other = "pyqt6" if api.lower() == "pyside6" else "pyside6"
    result = binding_in_a_child({"QT_API": other}, f"import loadstate.qt\n"
                                f"print(loadstate.qt.binding({api!r}).__name__)\n")
    assert (result.returncode, result.stdout) == (0, f"{package}.QtCore\n"), result.stderr


def test_without_qt_api_the_binding_already_imported_comes_first() -> None:
    if not (installed("PySide6") and installed("PyQt6")):
        pytest.skip("needs both PySide6 and PyQt6")
    for package in ("PyQt6", "PySide6"):
        result = binding_in_a_child({}, f"import {package}.QtCore, loadstate.qt\n"
                                    "print(loadstate.qt.binding().__name__)\n")
        assert (result.returncode, result.stdout) == (0, f"{package}.QtCore\n"), result.stderr
    result = binding_in_a_child({})
    assert (result.returncode, result.stdout) == (0, "PySide6.QtCore\n"), result.stderr


def test_qt_api_naming_another_binding_is_an_import_error() -> None:
    result = binding_in_a_child({"QT_API": "pyqt5"})
    assert result.returncode != 0
    assert "ImportError" in result.stderr and "'pyqt5' is not one of pyside6, pyqt6" in result.stderr


def test_qt_api_naming_a_binding_that_is_missing_is_an_import_error() -> None:
    result = binding_in_a_child({"QT_API": "pyqt6"}, "import sys; sys.modules['PyQt6'] = None\n"
                                "import loadstate.qt\nloadstate.qt.binding()\n")
    assert result.returncode != 0
    assert "ImportError: loadstate.qt needs PyQt6" in result.stderr and "PySide6" not in result.stderr


def test_without_pyside6_or_pyqt6_the_error_names_both() -> None:
    code = ("import sys; sys.modules['PySide6'] = None; sys.modules['PyQt6'] = None\n"
            "import loadstate, loadstate.qt\n"
            "rt = loadstate.Runtime('poll')\n"
            "try:\n"
            "    loadstate.qt.attach(rt)\n"
            "except ImportError as e:\n"
            "    print(e)\n"
            "rt.close()\n")
    result = binding_in_a_child({}, code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("loadstate.qt needs PySide6 or PyQt6 (pip install PySide6-Essentials): ")
    assert "PySide6: " in result.stdout and "PyQt6: " in result.stdout


def test_idle_attached_runtime_uses_no_cpu_over_10_s(idle: xvfb.Child) -> None:
    """The last test of the module: the measurement started with the module and has run meanwhile."""
    used = float(idle.result())
    print(f"Qt ({API}): {used:.4f} s of CPU in {IDLE_SECONDS} s idle, attached")
    assert used < IDLE_CPU_LIMIT, f"{used:.3f} s of CPU in {IDLE_SECONDS} s while idle"
