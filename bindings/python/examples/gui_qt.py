"""A Qt window that shows the state of a cell (gui_tk.py with Qt).

Load asks for a greeting that takes two seconds (after one, an interrupt says it is still coming), Fail asks
for one that fails, and Cancel cancels the load in flight. Every callback runs on Qt's thread: the runtime is
attached to Qt's event loop, which sleeps while nothing happens. PySide6 or PyQt6 (QT_API chooses).

    python3 gui_qt.py
"""

from __future__ import annotations

import sys
import time
from typing import Any

import loadstate
import loadstate.qt

QtCore = loadstate.qt.binding()
QtWidgets: Any = __import__(QtCore.__name__.split(".")[0] + ".QtWidgets", fromlist=["QtWidgets"])

SLOW_SECONDS = 2.0
INTERRUPT_AFTER = 1.0


def greet(job: loadstate.Job) -> str:
    """The loader, on a worker thread: a slow greeting, or a failure for nobody."""
    time.sleep(SLOW_SECONDS)
    if job.request == "nobody":
        raise loadstate.LoadFailed(404, "nobody to greet")
    return f"hello, {job.request}"


def describe(event: loadstate.Event[str]) -> str:
    """The text that shows a cell's state."""
    if event.type is loadstate.EventType.INTERRUPT:
        return f"still loading {event.request}..."
    if event.loading:
        return f"loading {event.request}..."
    if event.status is loadstate.Status.ERROR:
        return f"error {event.error_code}: {event.error_message}"
    if event.status is loadstate.Status.LOADED:
        return f"{event.value}" + (" (load cancelled)" if event.cancelled else "")
    return "cancelled" if event.cancelled else "nothing loaded"


class Window(QtWidgets.QWidget):  # type: ignore[misc]
    """A label that shows the cell's state, and the buttons that drive it."""

    def __init__(self, runtime: loadstate.Runtime, loader: loadstate.Loader[str]) -> None:
        super().__init__()
        self.setWindowTitle("loadstate")
        self.cell = runtime.loadable(loader)
        self.label = QtWidgets.QLabel("nothing loaded")
        self.label.setMinimumWidth(300)
        self.load_button = QtWidgets.QPushButton("Load")
        self.fail_button = QtWidgets.QPushButton("Fail")
        self.cancel_button = QtWidgets.QPushButton("Cancel")
        self.load_button.clicked.connect(lambda: self.load("world"))
        self.fail_button.clicked.connect(lambda: self.load("nobody"))
        self.cancel_button.clicked.connect(lambda: self.cell.cancel())
        buttons = QtWidgets.QHBoxLayout()
        for button in (self.load_button, self.fail_button, self.cancel_button):
            buttons.addWidget(button)
        buttons.addStretch()
        layout = QtWidgets.QVBoxLayout(self)
        layout.addWidget(self.label)
        layout.addLayout(buttons)
        self.cell.subscribe(self.show_state)

    def load(self, who: str) -> None:
        self.cell.load(who, interrupts=[INTERRUPT_AFTER])

    def show_state(self, event: loadstate.Event[str]) -> None:  # on Qt's thread
        self.label.setText(describe(event))


def main() -> None:
    app = QtWidgets.QApplication(sys.argv)
    with loadstate.Runtime(loadstate.Delivery.POLL) as runtime:
        loadstate.qt.attach(runtime)  # stops watching when the runtime closes
        window = Window(runtime, runtime.loader(greet, codec=loadstate.TEXT))
        window.show()
        app.exec()
    # The window is closed and the loop has returned, then the runtime closes, on Qt's thread.


if __name__ == "__main__":
    main()
