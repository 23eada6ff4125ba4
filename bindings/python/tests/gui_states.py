"""Drives the example programs examples/gui_tk.py and examples/gui_qt.py through every state a cell shows, by
their own buttons, and optionally saves a PNG of the window in each state (docs/images/gui/).

The loader is an inline one whose jobs stay open until the driver ends them, so each state holds while it is
looked at; the driver waits on the cell's events, never on time. A Tk window is grabbed from the X server
(Qt's QScreen.grabWindow, so PySide6 or PyQt6 is needed for Tk's pictures too), a Qt window renders itself
(QWidget.grab). Run on a display (make gui-screenshots-python runs it under Xvfb):

    python3 tests/gui_states.py tk|qt [DIRECTORY]
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE.parent / "examples")]

import loadstate  # noqa: E402

WAIT = 10.0
#: The states, in the order the driver shows them, and what the label says in each.
STATES: List[Tuple[str, str]] = [
    ("idle", "nothing loaded"),
    ("loading", "loading world..."),
    ("interrupt", "still loading world..."),
    ("loaded", "hello, world"),
    ("cancelled", "hello, world (load cancelled)"),
    ("error", "error 404: nobody to greet"),
]


class Jobs:
    """An inline loader whose jobs the driver ends; records the events of the cell it is given to."""

    def __init__(self, runtime: loadstate.Runtime) -> None:
        self.jobs: Dict[str, loadstate.Job] = {}
        self.events: List[loadstate.Event[str]] = []
        self.changed: Callable[[], None] = lambda: None  # called after each job start and event

        def start(job: loadstate.Job) -> None:
            job.detach()
            self.jobs[job.request] = job
            self.changed()

        self.loader = runtime.loader(start, inline=True, codec=loadstate.TEXT)

    def record(self, event: loadstate.Event[str]) -> None:
        self.events.append(event)
        self.changed()


def walk(jobs: Jobs, window: Any, label: Callable[[], str], wait: Callable[[Callable[[], bool], str], None],
         later: Callable[[Callable[[], None]], None], click: Callable[[Any], None],
         shoot: Callable[[str], None]) -> List[str]:
    """Takes the window through STATES; returns the label's text in each."""
    seen: List[str] = []

    def state(name: str) -> None:
        seen.append(label())
        shoot(name)

    def last() -> Optional[loadstate.Event[str]]:
        return jobs.events[-1] if jobs.events else None

    state("idle")
    click(window.load_button)
    wait(lambda: "world" in jobs.jobs and last() is not None and last().loading, "loading")  # type: ignore
    state("loading")
    wait(lambda: last().type is loadstate.EventType.INTERRUPT, "the interrupt")  # type: ignore[union-attr]
    state("interrupt")
    job = jobs.jobs.pop("world")
    later(lambda: job.succeed("hello, world"))
    wait(lambda: last().status is loadstate.Status.LOADED, "the value")  # type: ignore[union-attr]
    state("loaded")
    click(window.load_button)
    wait(lambda: "world" in jobs.jobs, "the second load")
    click(window.cancel_button)
    wait(lambda: last().cancelled, "the cancel")  # type: ignore[union-attr]
    state("cancelled")
    click(window.fail_button)
    wait(lambda: "nobody" in jobs.jobs, "the failing load")
    failing = jobs.jobs.pop("nobody")
    later(lambda: failing.fail(404, "nobody to greet"))
    wait(lambda: last().status is loadstate.Status.ERROR, "the error")  # type: ignore[union-attr]
    state("error")
    return seen


def drive_tk(directory: Optional[Path] = None) -> List[str]:
    import tkinter

    import gui_tk
    import loadstate.tk

    qt_app = None
    if directory is not None:
        import loadstate.qt

        QtCore = loadstate.qt.binding()
        QtGui = __import__(QtCore.__name__.split(".")[0] + ".QtGui", fromlist=["QtGui"])
        qt_app = QtGui.QGuiApplication(["gui_states"])
    root = tkinter.Tk()
    root.title("loadstate")
    try:
        with loadstate.Runtime(loadstate.Delivery.POLL) as runtime:
            attachment = loadstate.tk.attach(root, runtime)
            jobs = Jobs(runtime)
            window = gui_tk.Window(root, runtime, jobs.loader)

            done: List[Optional[Callable[[], bool]]] = [None]

            def changed() -> None:
                if done[0] is not None and done[0]():
                    root.quit()

            jobs.changed = changed
            window.cell.subscribe(jobs.record)

            def wait(condition: Callable[[], bool], what: str) -> None:
                if condition():
                    return
                timed_out: List[bool] = []
                done[0] = condition
                watchdog = root.after(int(WAIT * 1000), lambda: (timed_out.append(True), root.quit()))
                root.mainloop()
                root.after_cancel(watchdog)
                done[0] = None
                if timed_out:
                    raise TimeoutError(f"Tk: no {what} within {WAIT} s")

            def shoot(name: str) -> None:
                root.update()
                root.winfo_pointerxy()  # a round trip: the X server has drawn what Tk sent
                if directory is not None and qt_app is not None:
                    screen = qt_app.primaryScreen()
                    picture = screen.grabWindow(root.winfo_id())
                    if not picture.save(str(directory / f"tk-{name}.png"), "PNG"):
                        raise OSError(f"could not save tk-{name}.png")

            root.update()
            seen = walk(jobs, window, lambda: str(window.label["text"]), wait,
                        lambda fn: root.after(0, fn), lambda button: button.invoke(), shoot)
            attachment.close()
            return seen
    finally:
        root.destroy()


def drive_qt(directory: Optional[Path] = None) -> List[str]:
    import gui_qt
    import loadstate.qt

    QtCore = gui_qt.QtCore
    app = gui_qt.QtWidgets.QApplication(["gui_states"])
    with loadstate.Runtime(loadstate.Delivery.POLL) as runtime:
        attachment = loadstate.qt.attach(runtime)
        jobs = Jobs(runtime)
        window = gui_qt.Window(runtime, jobs.loader)
        done: List[Optional[Callable[[], bool]]] = [None]

        def changed() -> None:
            if done[0] is not None and done[0]():
                app.quit()

        jobs.changed = changed
        window.cell.subscribe(jobs.record)
        window.show()

        def wait(condition: Callable[[], bool], what: str) -> None:
            if condition():
                return
            timed_out: List[bool] = []
            done[0] = condition
            watchdog = QtCore.QTimer()
            watchdog.setSingleShot(True)
            watchdog.timeout.connect(lambda: (timed_out.append(True), app.quit()))
            watchdog.start(int(WAIT * 1000))
            app.exec()
            watchdog.stop()
            done[0] = None
            if timed_out:
                raise TimeoutError(f"Qt: no {what} within {WAIT} s")

        def shoot(name: str) -> None:
            app.processEvents()
            if directory is not None and not window.grab().save(str(directory / f"qt-{name}.png"), "PNG"):
                raise OSError(f"could not save qt-{name}.png")

        app.processEvents()
        seen = walk(jobs, window, lambda: str(window.label.text()), wait,
                    lambda fn: QtCore.QTimer.singleShot(0, fn), lambda button: button.click(), shoot)
        attachment.close()
        window.close()
        delete(QtCore, app, window)
        return seen


def delete(QtCore: Any, app: Any, window: Any) -> None:
    """Deletes the window while the application lives: left to the collector at exit, after the
    application, Qt would abort the process."""
    window.deleteLater()
    app.sendPostedEvents(None, QtCore.QEvent.Type.DeferredDelete)


def main(argv: List[str]) -> int:
    if len(argv) not in (2, 3) or argv[1] not in ("tk", "qt"):
        print(__doc__, file=sys.stderr)
        return 2
    directory = Path(argv[2]) if len(argv) == 3 else None
    if directory is not None:
        directory.mkdir(parents=True, exist_ok=True)
    seen = (drive_tk if argv[1] == "tk" else drive_qt)(directory)
    for (name, expected), text in zip(STATES, seen):
        print(f"{argv[1]} {name}: {text}")
        if text != expected:
            print(f"{argv[1]} {name}: expected {expected!r}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
