"""Qt applications: runs a POLL-mode runtime's callbacks on Qt's thread, from Qt's own event loop.

:func:`attach` watches the runtime's :attr:`~loadstate.Runtime.fd` with a ``QSocketNotifier``: Qt wakes up only
when callbacks are pending, and the notifier is disabled and released before the descriptor closes, whichever
goes first: :meth:`QtAttachment.close` or the runtime's close. Qt comes from PySide6, or else PyQt6, imported when
:func:`attach` is called: this module imports without either, and the package depends on neither.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Optional

from .enums import Code, Delivery
from .errors import WrongState
from .runtime import Runtime

__all__ = ["QtAttachment", "attach", "binding", "BATCH"]

#: The most callbacks one activation of the notifier runs (see :data:`loadstate.tk.BATCH`).
BATCH = 1024


def binding() -> Any:
    """The ``QtCore`` module of PySide6, or of PyQt6 when PySide6 is not installed.

    Raises:
        ImportError: neither PySide6 nor PyQt6 can be imported.
    """
    try:
        from PySide6 import QtCore  # type: ignore[import-not-found, unused-ignore]
        return QtCore
    except ImportError as pyside:
        try:
            from PyQt6 import QtCore as PyQtCore  # type: ignore[import-not-found, unused-ignore]
            return PyQtCore
        except ImportError as pyqt:
            raise ImportError("loadstate.qt needs PySide6 or PyQt6 (pip install PySide6): "
                              f"PySide6: {pyside}; PyQt6: {pyqt}") from None


class QtAttachment:
    """A runtime watched by a ``QSocketNotifier`` (what :func:`attach` returns).

    :meth:`close` (or leaving a ``with`` block) stops the watch; so does the runtime's close, before the
    runtime's descriptor is freed. The runtime itself stays open.
    """

    def __init__(self, runtime: Runtime, parent: Any = None) -> None:
        qt = binding()
        self._runtime = runtime
        self._fd = runtime.fd
        self._lock = threading.Lock()
        self._closed = False
        notifier = qt.QSocketNotifier(self._fd, qt.QSocketNotifier.Type.Read, parent)
        notifier.activated.connect(self._activated)
        self._notifier: Optional[Any] = notifier
        self._remove_hook: Callable[[], None] = runtime.add_close_hook(self.close)

    @property
    def runtime(self) -> Runtime:
        """The watched runtime."""
        return self._runtime

    @property
    def notifier(self) -> Optional[Any]:
        """The ``QSocketNotifier``, or None once closed."""
        return self._notifier

    @property
    def closed(self) -> bool:
        """Whether the watch has stopped."""
        return self._closed

    def _activated(self, *args: Any) -> None:
        if self._closed:
            return
        self._runtime.dispatch(BATCH)

    def close(self) -> None:
        """Stops the watch: disables the notifier and releases it; harmless to call twice.

        Call it on Qt's thread (a runtime closed on another thread calls it there).
        """
        with self._lock:
            if self._closed:
                return
            self._closed = True
            notifier, self._notifier = self._notifier, None
        self._remove_hook()
        if notifier is None:
            return
        try:
            notifier.setEnabled(False)
            notifier.activated.disconnect(self._activated)
            notifier.setParent(None)
            notifier.deleteLater()
        except RuntimeError:
            pass  # the C++ object is already gone (its parent was deleted); so is its watch

    def __enter__(self) -> "QtAttachment":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<loadstate.qt.QtAttachment fd={self._fd} {'closed' if self._closed else 'watching'}>"


def attach(runtime: Runtime, parent: Any = None) -> QtAttachment:
    """Runs ``runtime``'s callbacks on Qt's thread: a ``QSocketNotifier`` on :attr:`Runtime.fd
    <loadstate.Runtime.fd>` calls :meth:`Runtime.dispatch <loadstate.Runtime.dispatch>` when callbacks are
    pending, so events, inline loaders and cancel hooks all run inside ``app.exec()``.

    Args:
        runtime: a runtime made with ``delivery=Delivery.POLL``, not attached to an asyncio loop or trio run.
        parent: an optional ``QObject`` parent of the notifier.

    Returns the :class:`QtAttachment`; the watch stops on its ``close()`` or when the runtime closes, always
    before the runtime frees its descriptor. Make it after the ``QApplication`` (or ``QCoreApplication``), on
    its thread; close the runtime after ``exec()`` returns, on that thread.

    Raises:
        ImportError: neither PySide6 nor PyQt6 is installed (the message names both).
        WrongState: the runtime's delivery is not ``POLL``.
        Closed: the runtime is closed.
    """
    if runtime.delivery != Delivery.POLL:
        raise WrongState(Code.ESTATE, "not allowed in the current state",
                         "loadstate.qt.attach needs a runtime with delivery=Delivery.POLL")
    return QtAttachment(runtime, parent)
