"""A Tk window that shows the state of a cell.

Load asks for a greeting that takes two seconds (after one, an interrupt says it is still coming), Fail asks
for one that fails, and Cancel cancels the load in flight. Every callback runs on Tk's thread: the runtime is
attached to Tk's event loop, which sleeps while nothing happens.

    python3 gui_tk.py
"""

from __future__ import annotations

import time
import tkinter

import loadstate
import loadstate.tk

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


class Window:
    """A label that shows the cell's state, and the buttons that drive it."""

    def __init__(self, root: tkinter.Tk, runtime: loadstate.Runtime, loader: loadstate.Loader[str]) -> None:
        self.root = root
        self.cell = runtime.loadable(loader)
        self.label = tkinter.Label(root, text="nothing loaded", width=36, anchor="w", padx=8, pady=8)
        self.label.pack(fill="x")
        buttons = tkinter.Frame(root, padx=4, pady=4)
        buttons.pack(fill="x")
        self.load_button = tkinter.Button(buttons, text="Load", command=lambda: self.load("world"))
        self.fail_button = tkinter.Button(buttons, text="Fail", command=lambda: self.load("nobody"))
        self.cancel_button = tkinter.Button(buttons, text="Cancel", command=self.cell.cancel)
        for button in (self.load_button, self.fail_button, self.cancel_button):
            button.pack(side="left", padx=4)
        self.cell.subscribe(self.show_state)

    def load(self, who: str) -> None:
        self.cell.load(who, interrupts=[INTERRUPT_AFTER])

    def show_state(self, event: loadstate.Event[str]) -> None:  # on Tk's thread
        self.label["text"] = describe(event)


def main() -> None:
    root = tkinter.Tk()
    root.title("loadstate")
    with loadstate.Runtime(loadstate.Delivery.POLL) as runtime:
        loadstate.tk.attach(root, runtime)  # stops watching when the window or the runtime closes
        Window(root, runtime, runtime.loader(greet, codec=loadstate.TEXT))
        root.mainloop()
    # The window is gone, then the runtime closes (cancelling a load in flight), on Tk's thread.


if __name__ == "__main__":
    main()
