"""Tk applications: runs a POLL-mode runtime's callbacks on Tk's thread, from Tk's own event loop.

>>> import tkinter, loadstate, loadstate.tk                   # doctest: +SKIP
>>> root = tkinter.Tk()                                        # doctest: +SKIP
>>> runtime = loadstate.Runtime(loadstate.Delivery.POLL)       # doctest: +SKIP
>>> attachment = loadstate.tk.attach(root, runtime)            # doctest: +SKIP

:func:`attach` registers a Tcl file handler on the runtime's :attr:`~loadstate.Runtime.fd`: Tk wakes up only
when callbacks are pending (no polling with ``after``), and removes it again before the descriptor closes,
whichever goes first: :meth:`TkAttachment.close`, the root window's destruction or the runtime's close.
tkinter is imported when :func:`attach` is called, so this module imports without it.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Callable, Optional

from .enums import Code, Delivery
from .errors import WrongState
from .runtime import Runtime

if TYPE_CHECKING:
    import tkinter

__all__ = ["TkAttachment", "attach", "BATCH"]

#: The most callbacks one wake-up of Tk runs: the descriptor stays readable while more are pending, so Tk
#: calls again after it has handled its own events, and a steady stream of loads cannot freeze the window.
BATCH = 1024


class TkAttachment:
    """A runtime watched by a Tk interpreter (what :func:`attach` returns).

    :meth:`close` (or leaving a ``with`` block) stops the watch; so do the destruction of the root window and
    the runtime's close, each before the runtime's descriptor is freed. The runtime itself stays open.
    """

    def __init__(self, root: "tkinter.Misc", runtime: Runtime) -> None:
        import tkinter

        self._root: Optional["tkinter.Misc"] = root
        self._runtime = runtime
        self._fd = runtime.fd
        self._thread = threading.get_ident()
        self._lock = threading.Lock()
        self._closed = False
        root.tk.createfilehandler(self._fd, tkinter.READABLE, self._readable)
        self._remove_hook: Callable[[], None] = runtime.add_close_hook(self.close)
        self._destroy_binding: Optional[str] = root.bind("<Destroy>", self._destroyed, add="+")

    @property
    def runtime(self) -> Runtime:
        """The watched runtime."""
        return self._runtime

    @property
    def closed(self) -> bool:
        """Whether the watch has stopped."""
        return self._closed

    def _readable(self, fd: Any, mask: Any) -> None:
        if self._closed:
            return
        self._runtime.dispatch(BATCH)

    def _destroyed(self, event: "tkinter.Event[Any]") -> None:
        # The root's bindings also fire for its children's <Destroy>: only the root's own one counts.
        if event.widget is self._root:
            self.close()

    def close(self) -> None:
        """Stops the watch: removes the file handler and the ``<Destroy>`` binding; harmless to call twice.

        Call it on Tk's thread, like every Tk call (a runtime closed on another thread calls it there).
        """
        with self._lock:
            if self._closed:
                return
            self._closed = True
            root, self._root = self._root, None
        self._remove_hook()
        if root is None:
            return
        try:
            root.tk.deletefilehandler(self._fd)
        except Exception:  # noqa: BLE001  the interpreter is gone, and its handlers with it
            pass
        binding = self._destroy_binding
        self._destroy_binding = None
        if binding is not None:
            try:
                root.unbind("<Destroy>", binding)
            except Exception:  # noqa: BLE001  the window is being destroyed
                pass

    def __enter__(self) -> "TkAttachment":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<loadstate.tk.TkAttachment fd={self._fd} {'closed' if self._closed else 'watching'}>"


def attach(root: "tkinter.Misc", runtime: Runtime) -> TkAttachment:
    """Runs ``runtime``'s callbacks on Tk's thread: a file handler on :attr:`Runtime.fd
    <loadstate.Runtime.fd>` calls :meth:`Runtime.dispatch <loadstate.Runtime.dispatch>` when callbacks are
    pending, so events, inline loaders and cancel hooks all run inside ``root.mainloop()``.

    Args:
        root: the application's ``tkinter.Tk`` (or any widget of its interpreter; the watch stops when this
            widget is destroyed).
        runtime: a runtime made with ``delivery=Delivery.POLL``, not attached to an asyncio loop or trio run.

    Returns the :class:`TkAttachment`; the watch stops on its ``close()``, when ``root`` is destroyed, or when
    the runtime closes, always before the runtime frees its descriptor. Close the runtime after ``mainloop``
    returns, on Tk's thread.

    Raises:
        ImportError: tkinter is not installed.
        WrongState: the runtime's delivery is not ``POLL``.
        Closed: the runtime is closed.
    """
    if runtime.delivery != Delivery.POLL:
        raise WrongState(Code.ESTATE, "not allowed in the current state",
                         "loadstate.tk.attach needs a runtime with delivery=Delivery.POLL")
    return TkAttachment(root, runtime)
