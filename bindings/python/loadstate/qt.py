"""Qt applications: runs a POLL-mode runtime's callbacks on Qt's thread, from Qt's own event loop.

:func:`attach` watches the runtime's :attr:`~loadstate.Runtime.fd` with a ``QSocketNotifier``: Qt wakes up only
when callbacks are pending, and the notifier is disabled and released before the descriptor closes, whichever
goes first: :meth:`QtAttachment.close` or the runtime's close. Qt comes from PySide6 or PyQt6, imported when
:func:`attach` is called: this module imports without either, and the package depends on neither.

Which binding (see :func:`binding`): the one named by ``attach(..., api=)``, else by the ``QT_API`` environment
variable (``pyside6`` or ``pyqt6``), else the one the application has already imported, else PySide6 when
it is installed, else PyQt6.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Any, Callable, Optional

from .enums import Code, Delivery
from .errors import WrongState
from .runtime import Runtime

__all__ = ["QtAttachment", "attach", "binding", "BATCH", "APIS"]

#: The most callbacks one activation of the notifier runs (see :data:`loadstate.tk.BATCH`).
BATCH = 1024

#: The bindings :func:`binding` knows, by the names ``QT_API`` and ``api=`` take, and their packages.
APIS = {"pyside6": "PySide6", "pyqt6": "PyQt6"}


def binding(api: Optional[str] = None) -> Any:
    """The ``QtCore`` module of the Qt binding to use.

    Args:
        api: ``"pyside6"`` or ``"pyqt6"`` (any case); ``None``: the ``QT_API`` environment variable when it is
            set and not empty, else the binding already imported (PySide6 first), else PySide6 when it can be
            imported, else PyQt6.

    Raises:
        ImportError: the binding asked for cannot be imported, or with no choice made, neither can (the
            message names both); ``api`` or ``QT_API`` names another binding.
    """
    if api is None:
        api = os.environ.get("QT_API") or None
        source = "QT_API"
    else:
        source = "api"
    if api is not None:
        package = APIS.get(api.lower())
        if package is None:
            raise ImportError(f"loadstate.qt: {source}={api!r} is not one of {', '.join(APIS)}")
        candidates = [package]
    else:
        imported = [name for name in APIS.values() if sys.modules.get(name) is not None]
        candidates = imported[:1] or list(APIS.values())
    failures = []
    for package in candidates:
        try:
            return __import__(f"{package}.QtCore", fromlist=["QtCore"])
        except ImportError as exc:
            failures.append(f"{package}: {exc}")
    raise ImportError(f"loadstate.qt needs {' or '.join(candidates)} (pip install {candidates[0]}"
                      f"{'-Essentials' if candidates[0] == 'PySide6' else ''}): " + "; ".join(failures))


class QtAttachment:
    """A runtime watched by a ``QSocketNotifier`` (what :func:`attach` returns).

    :meth:`close` (or leaving a ``with`` block) stops the watch; so does the runtime's close, before the
    runtime's descriptor is freed. The runtime itself stays open.
    """

    def __init__(self, runtime: Runtime, parent: Any = None, api: Optional[str] = None) -> None:
        qt = binding(api)
        application = qt.QCoreApplication.instance()
        if application is None:
            raise RuntimeError("loadstate.qt.attach: make the QApplication (or QCoreApplication) first")
        owner = parent if parent is not None else application
        if qt.QThread.currentThread() is not owner.thread():
            raise RuntimeError("loadstate.qt.attach: call it on the thread of "
                               f"{'the parent' if parent is not None else 'the QApplication'}")
        self._qt = qt
        self._runtime = runtime
        self._fd = runtime.fd
        self._thread = threading.get_ident()
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

    @property
    def fd(self) -> int:
        """The watched descriptor (the runtime's :attr:`~loadstate.Runtime.fd`)."""
        return self._fd

    @property
    def api(self) -> str:
        """The binding in use: ``"pyside6"`` or ``"pyqt6"``."""
        return str(self._qt.__name__.split(".")[0].lower())

    def _activated(self, *args: Any) -> None:
        if self._closed:
            # Closed on another thread, which could not touch the notifier: Qt's thread releases it now.
            self.close()
            return
        self._runtime.dispatch(BATCH)

    def close(self) -> None:
        """Stops the watch: disables the notifier and releases it; harmless to call twice.

        On Qt's thread it does it all. On another thread (a runtime closed there runs it there) it stops the
        dispatching at once, but a notifier can only be disabled from its own thread: Qt's thread releases
        it at its next activation, or at a :meth:`close` there. A runtime made with ``keep_fd=True`` never
        activates it again after its close; without it, the descriptor is closed and Qt activates the
        notifier once (or disables it itself, warning about an invalid socket).
        """
        with self._lock:
            first = not self._closed
            self._closed = True
            notifier = None
            if threading.get_ident() == self._thread:
                notifier, self._notifier = self._notifier, None
        if first:
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


def attach(runtime: Runtime, parent: Any = None, api: Optional[str] = None) -> QtAttachment:
    """Runs ``runtime``'s callbacks on Qt's thread: a ``QSocketNotifier`` on :attr:`Runtime.fd
    <loadstate.Runtime.fd>` calls :meth:`Runtime.dispatch <loadstate.Runtime.dispatch>` when callbacks are
    pending, so events, inline loaders and cancel hooks all run inside ``app.exec()``.

    Args:
        runtime: a runtime made with ``delivery=Delivery.POLL``, not attached to an asyncio loop or trio run.
        parent: an optional ``QObject`` parent of the notifier.
        api: the binding, ``"pyside6"`` or ``"pyqt6"``; by default ``QT_API``, else the one imported, else
            PySide6, else PyQt6 (see :func:`binding`).

    Returns the :class:`QtAttachment`; the watch stops on its ``close()`` or when the runtime closes, always
    before the runtime frees its descriptor. Make it after the ``QApplication`` (or ``QCoreApplication``), on
    its thread (or on ``parent``'s), and close the runtime after ``exec()`` returns, on that thread: then
    either kind of runtime is right. When the runtime may close on another thread, make it with
    ``keep_fd=True`` and ``os.close(attachment.fd)`` after ``attachment.close()`` on Qt's thread: the
    descriptor then stays open and quiet until Qt's thread has released the notifier (see
    :meth:`QtAttachment.close`).

    Raises:
        ImportError: the binding cannot be imported (with no choice made, the message names PySide6 and PyQt6).
        WrongState: the runtime's delivery is not ``POLL``.
        Closed: the runtime is closed.
        RuntimeError: there is no ``QCoreApplication`` yet, or this is not its thread (or ``parent``'s).
    """
    if runtime.delivery != Delivery.POLL:
        raise WrongState(Code.ESTATE, "not allowed in the current state",
                         "loadstate.qt.attach needs a runtime with delivery=Delivery.POLL")
    return QtAttachment(runtime, parent, api)
