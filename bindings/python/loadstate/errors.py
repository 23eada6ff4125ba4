"""Exceptions raised by loadstate.

Every failing call of the C library returns a negative code; the binding
turns it into an instance of the :class:`Error` subclass for that code,
carrying the code and the library's own message (``lds_strerror``).
"""

from __future__ import annotations

from typing import Optional

__all__ = [
    "Error",
    "InvalidArgument",
    "NotFound",
    "WrongState",
    "Cancelled",
    "TimedOut",
    "OutOfMemory",
    "Closed",
    "TooBig",
    "IOFailure",
    "LibraryNotFound",
    "LoadFailed",
    "error_for_code",
]


class Error(Exception):
    """A call into loadstate failed.

    Attributes:
        code: the library's return code (a negative ``LDS_E*`` value).
        message: the library's description of the code.
        detail: what the binding was doing, or ``None``.
    """

    code: int = 0

    def __init__(self, code: Optional[int] = None, message: str = "", detail: Optional[str] = None) -> None:
        if code is not None:
            self.code = code
        self.message = message
        self.detail = detail
        super().__init__(self.code, message, detail)

    def __str__(self) -> str:
        text = self.message or "loadstate error"
        if self.detail:
            text = f"{self.detail}: {text}"
        return f"{text} (code {self.code})"

    def __reduce__(self):  # keep pickling (and copying) working with the custom __init__
        return (type(self), (self.code, self.message, self.detail))


class InvalidArgument(Error, ValueError):
    """``LDS_EINVAL``: an argument is invalid."""

    code = -1


class NotFound(Error, LookupError):
    """``LDS_ENOENT``: no object of that kind has this id (never created, freed, or of another kind)."""

    code = -2


class WrongState(Error):
    """``LDS_ESTATE``: the call is not allowed in the current state."""

    code = -3


class Cancelled(Error):
    """``LDS_ECANCELED``: the job no longer runs (cancelled, superseded, timed out or already completed).

    Raised by the job operations of a job that no longer runs. A loader may
    also raise it to cancel its own job.
    """

    code = -4


class TimedOut(Error):
    """``LDS_ETIMEDOUT``: a load took longer than its timeout, or a wait timed out."""

    code = -5


class OutOfMemory(Error, MemoryError):
    """``LDS_ENOMEM``: out of memory or of an operating-system resource."""

    code = -6


class Closed(Error):
    """``LDS_ECLOSED``: the runtime (or the cell) is being closed or has been closed."""

    code = -7


class TooBig(Error, ValueError):
    """``LDS_ETOOBIG``: a value, request or message is larger than :data:`loadstate.VALUE_MAX`."""

    code = -8


class IOFailure(Error):
    """``LDS_EIO``: an operating-system call failed."""

    code = -9


class Busy(Error):
    """``LDS_EAGAIN``: too many operations wait for the runtime's loop thread (:data:`loadstate.QUEUE_MAX`).

    Nothing was done; the call may be made again once the loop has caught up.
    """

    code = -10


_BY_CODE = {cls.code: cls for cls in
            (InvalidArgument, NotFound, WrongState, Cancelled, TimedOut, OutOfMemory, Closed, TooBig, IOFailure,
             Busy)}


def error_for_code(code: int, message: str, detail: Optional[str] = None) -> Error:
    """The exception for a return code: the subclass for a known code, :class:`Error` otherwise."""
    return _BY_CODE.get(code, Error)(code, message, detail)


class LibraryNotFound(OSError):
    """``libloadstate.so`` could not be loaded from any of the places tried.

    Attributes:
        attempts: ``(place, reason)`` pairs, in the order they were tried.
    """

    def __init__(self, attempts: "list[tuple[str, str]]") -> None:
        self.attempts = list(attempts)
        lines = ["libloadstate.so could not be loaded; tried:"]
        lines += [f"  {place}: {reason}" for place, reason in self.attempts]
        lines.append("Install the loadstate wheel, install libloadstate (a Debian package or `make install`), "
                     "or set LOADSTATE_LIBRARY to the path of libloadstate.so.")
        super().__init__("\n".join(lines))


class LoadFailed(Exception):
    """The error of a failed load, and the way a loader fails with a chosen code.

    Raise it from a loader to fail the job with ``code`` and ``message``
    (domain :attr:`Domain.HOST <loadstate.Domain.HOST>`); with ``final``,
    the load is not retried even if it has retries left. :attr:`Event.error
    <loadstate.Event.error>` returns one for an event in the error state.

    Attributes:
        code: the error's code in its domain.
        message: the error's message, or ``None``.
        domain: the error domain (:class:`loadstate.Domain`, or an int).
        final: whether retrying is pointless.
    """

    def __init__(self, code: int, message: Optional[str] = None, domain: int = 2, final: bool = False) -> None:
        super().__init__(code, message, domain)
        self.code = code
        self.message = message
        self.domain = domain
        self.final = final

    def __str__(self) -> str:
        from .types import Domain  # local import: types imports this module

        try:
            name = Domain(self.domain).name.lower()
        except ValueError:
            name = str(self.domain)
        text = f"{name} error {self.code}"
        return f"{text}: {self.message}" if self.message else text

    def __reduce__(self):
        return (type(self), (self.code, self.message, self.domain, self.final))
