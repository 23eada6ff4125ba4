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

__all__ = ["TkAttachment", "attach", "BATCH", "FD_SETSIZE"]

#: The most callbacks one wake-up of Tk runs: the descriptor stays readable while more are pending, so Tk
#: calls again after it has handled its own events, and a steady stream of loads cannot freeze the window.
BATCH = 1024


#: Tcl 8.6's notifier watches descriptors with ``select``, whose sets hold descriptors below this number only: a
#: larger one aborts the process (glibc: "bit out of range 0 - FD_SETSIZE on fd_set"). Tcl 8.7 and 9 use epoll.
FD_SETSIZE = 1024


def _select_notifier(root: "tkinter.Misc") -> bool:
    version = str(root.tk.call("info", "patchlevel"))
    major, minor = (int(part) for part in version.split(".")[:2])
    return (major, minor) < (8, 7)


class TkAttachment:
    """A runtime watched by a Tk interpreter (what :func:`attach` returns).

    :meth:`close` (or leaving a ``with`` block) stops the watch; so do the destruction of the root window and
    the runtime's close, each before the runtime's descriptor is freed. The runtime itself stays open.
    """

    def __init__(self, root: "tkinter.Misc", runtime: Runtime) -> None:
        import tkinter

        self._runtime = runtime
        self._fd = runtime.fd
        if self._fd >= FD_SETSIZE and _select_notifier(root):
            raise ValueError(f"loadstate.tk.attach: the runtime's descriptor is {self._fd}, and Tcl "
                             f"{root.tk.call('info', 'patchlevel')} watches descriptors below {FD_SETSIZE} only; "
                             "make the runtime before the process opens that many descriptors")
        self._thread = threading.get_ident()
        self._lock = threading.Lock()
        self._closed = False
        # tkinter raises RuntimeError here when this is not the interpreter's thread (a threaded Tcl).
        root.tk.createfilehandler(self._fd, tkinter.READABLE, self._readable)
        self._root: Optional["tkinter.Misc"] = root  # until the file handler is deleted
        self._remove_hook: Callable[[], None] = runtime.add_close_hook(self.close)
        self._destroy_binding: Optional[str] = root.bind("<Destroy>", self._destroyed, add="+")

    @property
    def runtime(self) -> Runtime:
        """The watched runtime."""
        return self._runtime

    @property
    def fd(self) -> int:
        """The watched descriptor (the runtime's :attr:`~loadstate.Runtime.fd`)."""
        return self._fd

    @property
    def closed(self) -> bool:
        """Whether the watch has stopped: no callback is dispatched from it any more."""
        return self._closed

    @property
    def watching(self) -> bool:
        """Whether Tk still has the file handler: False once :meth:`close` ran on Tk's thread."""
        return self._root is not None

    def _readable(self, fd: Any, mask: Any) -> None:
        if self._closed:
            # Closed on another thread, which could not touch Tcl: Tk's thread removes the handler now.
            self.close()
            return
        self._runtime.dispatch(BATCH)

    def _destroyed(self, event: "tkinter.Event[Any]") -> None:
        # The root's bindings also fire for its children's <Destroy>: only the root's own one counts.
        if event.widget is self._root:
            self.close()

    def close(self) -> None:
        """Stops the watch: removes the file handler and the ``<Destroy>`` binding; harmless to call twice.

        On Tk's thread it does it all. On another thread (a runtime closed there runs it there) it stops the
        dispatching at once but cannot remove the handler itself. With a runtime made with ``keep_fd=True``,
        the descriptor stays open and never readable: Tk stays idle, and the handler goes at a :meth:`close`
        on Tk's thread or at the root's destruction. Without it, the descriptor is about to close under the
        handler, which can spin Tcl's notifier (Tk's thread removes the handler if Tcl calls it, not if Tcl
        spins without calling it): it raises ``RuntimeError`` (which the runtime's close passes to its
        ``on_error``), after stopping the dispatching.
        """
        with self._lock:
            first = not self._closed
            self._closed = True
            on_tk_thread = threading.get_ident() == self._thread
            root = self._root if on_tk_thread else None
            if on_tk_thread:
                self._root = None
        if first:
            self._remove_hook()
        if not on_tk_thread:
            self._close_later()
            return
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

    def _close_later(self) -> None:
        if self._root is None or self._runtime.keep_fd:
            return  # a kept descriptor stays quiet until Tk's thread removes the handler
        # The runtime is about to close the descriptor under the handler. Tk's thread removes it if Tcl calls it
        # (_readable), but when that thread is not in its loop at the moment of the close, Tcl 8.6's notifier
        # later spins on the closed descriptor without calling it. Say so: the error handler logs it.
        raise RuntimeError("loadstate.tk: a runtime without keep_fd=True was closed on another thread than Tk's, "
                           "which cannot remove its file handler; close it on Tk's thread, or make it with "
                           "keep_fd=True")

    def __enter__(self) -> "TkAttachment":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "watching" if not self._closed else ("closed" if self._root is None else "closing")
        return f"<loadstate.tk.TkAttachment fd={self._fd} {state}>"


def attach(root: "tkinter.Misc", runtime: Runtime) -> TkAttachment:
    """Runs ``runtime``'s callbacks on Tk's thread: a file handler on :attr:`Runtime.fd
    <loadstate.Runtime.fd>` calls :meth:`Runtime.dispatch <loadstate.Runtime.dispatch>` when callbacks are
    pending, so events, inline loaders and cancel hooks all run inside ``root.mainloop()``.

    Args:
        root: the application's ``tkinter.Tk`` (or any widget of its interpreter; the watch stops when this
            widget is destroyed).
        runtime: a runtime made with ``delivery=Delivery.POLL``, not attached to an asyncio loop or trio run.

    Returns the :class:`TkAttachment`; the watch stops on its ``close()``, when ``root`` is destroyed, or when
    the runtime closes, always before the runtime frees its descriptor. Call it on Tk's thread (the thread
    that made ``root``; tkinter itself refuses another one with ``RuntimeError``), and close the runtime
    after ``mainloop`` returns, on that thread: then either kind of runtime is right. When the runtime may
    close on another thread (a worker, a signal handler's thread, the garbage collector), make it with
    ``keep_fd=True`` and ``os.close(attachment.fd)`` after ``attachment.close()`` on Tk's thread: the
    descriptor then stays open and quiet until Tk's thread has removed its handler (see
    :meth:`TkAttachment.close`).

    Raises:
        ImportError: tkinter is not installed.
        WrongState: the runtime's delivery is not ``POLL``.
        Closed: the runtime is closed.
        ValueError: the descriptor is too large for Tcl 8.6's notifier (see :data:`FD_SETSIZE`).
        RuntimeError: (from tkinter) called on a thread other than the interpreter's.
    """
    if runtime.delivery != Delivery.POLL:
        raise WrongState(Code.ESTATE, "not allowed in the current state",
                         "loadstate.tk.attach needs a runtime with delivery=Delivery.POLL")
    return TkAttachment(root, runtime)
