"""Exceptions raised by loadstate.

Every exception of the package derives from :class:`Error`. Those that
mean what a built-in exception means derive from it too, so that code
written against the built-ins catches them: :class:`TimedOut` is a
:class:`TimeoutError`, :class:`IOFailure` an :class:`OSError`,
:class:`InvalidArgument` a :class:`ValueError`, :class:`NotFound` a
:class:`LookupError`, :class:`OutOfMemory` a :class:`MemoryError`.

A failing call of the C library returns a negative code; the binding
raises the :class:`Error` subclass for that code (:func:`error_for_code`).
A failed *load* is a :class:`LoadFailed`: its error domain, code and
message, and what the load produced (an HTTP response outside 2xx). Some
are also the exception Python code already catches for the same failure:

* a load that timed out is a :class:`LoadTimedOut`, both a :class:`LoadFailed`
  and a :class:`TimedOut` (so a :class:`TimeoutError`);
* a failure of the ``os`` domain (an errno: a refused connection, a missing
  file, a program that cannot be started, ...) is a :class:`LoadOSError`,
  which is an :class:`OSError` of the subclass Python's own ``OSError(errno,
  ...)`` picks (:class:`ConnectionRefusedError`, :class:`FileNotFoundError`,
  :class:`PermissionError`, :class:`TimeoutError` for ``ETIMEDOUT``, ...), with
  ``errno`` and ``strerror`` set as Python sets them;
* an HTTP status outside 2xx is an :class:`HTTPStatusError`, with the
  ``response`` and its ``status``.
"""

from __future__ import annotations

import os
from typing import Any, Dict, List, Optional, Tuple, Type

from .enums import Code, Domain, RedisCode

__all__ = [
    "Error",
    "InvalidArgument",
    "NotFound",
    "WrongState",
    "Cancelled",
    "Superseded",
    "NoValue",
    "TimedOut",
    "OutOfMemory",
    "Closed",
    "TooBig",
    "IOFailure",
    "Busy",
    "RedisError",
    "LibraryNotFound",
    "LoadFailed",
    "LoadTimedOut",
    "LoadOSError",
    "HTTPStatusError",
    "error_for_code",
]


class Error(Exception):
    """A call into loadstate failed, or a load did (:class:`LoadFailed`).

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

    def __reduce__(self) -> Tuple[Any, ...]:  # keep pickling (and copying) working with the custom __init__
        return (type(self), (self.code, self.message, self.detail))


class InvalidArgument(Error, ValueError):
    """``LDS_EINVAL``: an argument has the right type but an invalid value."""

    code = Code.EINVAL


class NotFound(Error, LookupError):
    """``LDS_ENOENT``: no object of that kind has this id (never created, freed, or of another kind)."""

    code = Code.ENOENT


class WrongState(Error):
    """``LDS_ESTATE``: the call is not allowed in the current state."""

    code = Code.ESTATE


class Cancelled(Error):
    """``LDS_ECANCELED``: the job no longer runs (cancelled, superseded, timed out or already completed).

    Raised by the job operations of a job that no longer runs, and by
    :meth:`Load.value <loadstate.Load.value>` for a load that was cancelled
    or reset. A loader may also raise it to cancel its own job.
    """

    code = Code.ECANCELED


class Superseded(Cancelled):
    """A load of another request replaced the awaited load on its cell before it ended.

    Raised by awaiting the :class:`~loadstate.Load` (and by :meth:`Load.value <loadstate.Load.value>`,
    :meth:`Load.state <loadstate.Load.state>` and :meth:`Loadable.get <loadstate.Loadable.get>`), so
    that a caller never receives the value of a request it did not ask for. A load superseded by a load
    of the *same* request is not superseded: it takes that load's outcome, and
    :meth:`~loadstate.Loadable.set_loaded` / :meth:`~loadstate.Loadable.set_error` (full manual control)
    give theirs to the loads still waiting.

    Attributes:
        request: the request of the load that replaced the awaited one, decoded with the cell's request
            codec.
    """

    def __init__(self, code: Optional[int] = None, message: str = "", detail: Optional[str] = None,
                 request: Any = None) -> None:
        super().__init__(code, message, detail)
        self.request = request

    def __reduce__(self) -> Tuple[Any, ...]:
        return (type(self), (self.code, self.message, self.detail, self.request))


class NoValue(Cancelled):
    """The awaited load's job finished without a value (it yielded nothing before it finished).

    The cell went back to its state from before the load (flagged :attr:`Flags.NO_VALUE
    <loadstate.Flags.NO_VALUE>`), which may show the value of an earlier request, a kept previous value
    or nothing: never this load's answer. :meth:`Load.value <loadstate.Load.value>` and
    :meth:`Loadable.get <loadstate.Loadable.get>` raise it; awaiting the :class:`~loadstate.Load` (and
    :meth:`Load.state <loadstate.Load.state>`) returns that restored state.

    Attributes:
        request: the request of the load that ended without a value, decoded with the cell's request
            codec (``None`` when not known).
    """

    def __init__(self, code: Optional[int] = None, message: str = "", detail: Optional[str] = None,
                 request: Any = None) -> None:
        super().__init__(code, message, detail)
        self.request = request

    def __reduce__(self) -> Tuple[Any, ...]:
        return (type(self), (self.code, self.message, self.detail, self.request))


class TimedOut(Error, TimeoutError):
    """``LDS_ETIMEDOUT``: a load took longer than its timeout, or a wait timed out."""

    code = Code.ETIMEDOUT


class OutOfMemory(Error, MemoryError):
    """``LDS_ENOMEM``: out of memory or of an operating-system resource."""

    code = Code.ENOMEM


class Closed(Error):
    """``LDS_ECLOSED``: the runtime (or the cell) is being closed or has been closed."""

    code = Code.ECLOSED


class TooBig(Error, ValueError):
    """``LDS_ETOOBIG``: a value, request or message is larger than :data:`loadstate.VALUE_MAX`."""

    code = Code.ETOOBIG


class IOFailure(Error, OSError):
    """``LDS_EIO``: an operating-system call failed."""

    code = Code.EIO


class Busy(Error):
    """``LDS_EAGAIN``: too many operations wait for the runtime's loop thread (:data:`loadstate.QUEUE_MAX`).

    Nothing was done; the call may be made again once the loop has caught up.
    """

    code = Code.EAGAIN


def redis_reason(value: Optional[int]) -> Optional[int]:
    """``value`` as a :class:`RedisCode` member when it is one, else as it is; ``None`` for 0 (no reason)."""
    if not value:
        return None
    try:
        return RedisCode(value)
    except ValueError:
        return value


class RedisError(Error):
    """``LDS_EREDIS``: a call on a Redis cache failed: Redis is unreachable, did not answer in time, refused
    the connection's AUTH or SELECT, answered with an error, or the value is over the cache's
    ``max_value_bytes``.

    Loads never fail with it: a load whose Redis cache cannot answer calls its loader (a ``CACHE_ONLY``
    load, which has no loader to fall back on, ends in a :class:`LoadFailed` of domain ``Domain.REDIS``).

    Attributes:
        redis_code: the reason, a :class:`~loadstate.RedisCode` (``LDS_REDIS_E*``), read from the cache's
            :meth:`~loadstate.RedisCache.status` when the error was raised; ``None`` when unknown.
        redis_message: the cache's message for that failure (``lds_redis_status.last_error``), or ``None``.
    """

    code = Code.EREDIS

    def __init__(self, code: Optional[int] = None, message: str = "", detail: Optional[str] = None,
                 redis_code: Optional[int] = None, redis_message: Optional[str] = None) -> None:
        super().__init__(code, message, detail)
        self.redis_code = redis_reason(redis_code)
        self.redis_message = redis_message or None
        self.args = (self.code, message, detail, self.redis_code, self.redis_message)  # repr() shows the reason

    def __str__(self) -> str:
        text = super().__str__()
        if self.redis_code is None:
            return text
        name = self.redis_code.name if isinstance(self.redis_code, RedisCode) else str(self.redis_code)
        return f"{text}: {name}: {self.redis_message}" if self.redis_message else f"{text}: {name}"

    def __reduce__(self) -> Tuple[Any, ...]:
        return (type(self), (self.code, self.message, self.detail, self.redis_code, self.redis_message))


class NotSupported(Error):
    """``LDS_ENOTSUP``: a feature this build of the library lacks, such as ``rediss://`` (TLS to Redis: the
    hiredis it is built with has none)."""

    code = Code.ENOTSUP


class Offline(Error):
    """``LDS_EOFFLINE``: the runtime is offline (:meth:`Runtime.set_online <loadstate.Runtime.set_online>`) and
    the load asked to fail then (``offline="fail"``). A load that fails so raises a :class:`LoadFailed` whose
    ``code`` is ``Code.EOFFLINE`` (domain ``LOADSTATE``)."""

    code = Code.EOFFLINE


_BY_CODE: Dict[int, Type[Error]] = {cls.code: cls for cls in
                                    (InvalidArgument, NotFound, WrongState, Cancelled, TimedOut, OutOfMemory,
                                     Closed, TooBig, IOFailure, Busy, RedisError, NotSupported, Offline)}


def error_for_code(code: int, message: str, detail: Optional[str] = None) -> Error:
    """The exception for a return code: the subclass for a known code, :class:`Error` otherwise."""
    return _BY_CODE.get(code, Error)(code, message, detail)


class LibraryNotFound(Error, OSError):
    """``libloadstate.so`` could not be loaded from any of the places tried.

    Attributes:
        attempts: ``(place, reason)`` pairs, in the order they were tried.
    """

    def __init__(self, attempts: List[Tuple[str, str]]) -> None:
        self.attempts = list(attempts)
        lines = ["libloadstate.so could not be loaded; tried:"]
        lines += [f"  {place}: {reason}" for place, reason in self.attempts]
        lines.append("Install the loadstate wheel, install libloadstate (a Debian package or `make install`), "
                     "or set LOADSTATE_LIBRARY to the path of libloadstate.so.")
        super().__init__(Code.EIO, "\n".join(lines))

    def __str__(self) -> str:
        return self.message

    def __reduce__(self) -> Tuple[Any, ...]:
        return (type(self), (self.attempts,))


def _domain(value: int) -> int:
    """``value`` as a :class:`Domain` member when it is one, else as it is."""
    try:
        return Domain(value)
    except ValueError:
        return value


class LoadFailed(Error):
    """The error of a failed load, and the way a loader fails with a chosen code.

    :meth:`Load.value <loadstate.Load.value>` and :meth:`Loadable.get
    <loadstate.Loadable.get>` raise it for a load that ends in ``ERROR``
    (``FAILED``); :attr:`Event.error <loadstate.Event.error>` and
    :meth:`Event.raise_for_error <loadstate.Event.raise_for_error>` make
    one from an event (a :class:`LoadTimedOut` for a load that timed
    out). Raise it from a loader to fail the job with ``code``
    and ``message`` (domain :attr:`Domain.HOST <loadstate.Domain.HOST>`);
    with ``final``, the load is not retried even if it has retries left.

    Attributes:
        code: the error's code in its domain (an HTTP status, an errno, an exit status, ...).
        message: the error's message, or ``None``.
        domain: the error domain (:class:`loadstate.Domain`).
        final: whether retrying is pointless.
        value: what the failed load produced, decoded like a loaded value; for the http
            loader the :class:`~loadstate.HttpResponse` of a status outside 2xx. ``None``
            when the load produced nothing.
    """

    def __init__(self, code: int, message: Optional[str] = None, domain: int = Domain.HOST, final: bool = False,
                 value: Any = None) -> None:
        super().__init__(code, message or "", None)
        self.message: Optional[str] = message  # type: ignore[assignment]
        self.domain = _domain(domain)
        self.final = final
        self.value = value

    @property
    def response(self) -> Any:
        """The http loader: the :class:`~loadstate.HttpResponse` the server sent; ``None`` otherwise."""
        return self.value if self.domain == Domain.HTTP else None

    def __str__(self) -> str:
        name = self.domain.name.lower() if isinstance(self.domain, Domain) else str(self.domain)
        text = f"{name} error {self.code}"
        return f"{text}: {self.message}" if self.message else text

    def __repr__(self) -> str:
        """``LoadFailed(domain=Domain.HTTP, code=404, message='HTTP 404', value=<HttpResponse>)``: the
        value by its type only, ``final`` only when set."""
        text = f"{type(self).__name__}(domain={self.domain}, code={int(self.code)}, message={self.message!r}"
        if self.final:
            text += ", final=True"
        if self.value is not None:
            text += f", value=<{type(self.value).__name__}>"
        return text + ")"

    def __reduce__(self) -> Tuple[Any, ...]:
        return (type(self), (self.code, self.message, self.domain, self.final, self.value))


class LoadTimedOut(LoadFailed, TimedOut):
    """A load that took longer than its timeout: ``LDS_ETIMEDOUT`` in :attr:`Domain.LOADSTATE
    <loadstate.Domain.LOADSTATE>`.

    Raised by :meth:`Load.value <loadstate.Load.value>` and :meth:`Loadable.get
    <loadstate.Loadable.get>` for a load that failed for its own ``timeout``
    (or, for the http loader, a transfer that timed out). It is a
    :class:`LoadFailed`, with the state's domain, code and message, and a
    :class:`TimedOut`, so ``except TimeoutError`` catches it.
    """


class HTTPStatusError(LoadFailed):
    """An http load whose final response has a status outside 2xx (domain :attr:`Domain.HTTP
    <loadstate.Domain.HTTP>`, the status as ``code``).

    Raised by :meth:`Load.value <loadstate.Load.value>` and :meth:`Loadable.get
    <loadstate.Loadable.get>` for such a load, and by :meth:`HttpResponse.raise_for_status
    <loadstate.HttpResponse.raise_for_status>`. It is a :class:`LoadFailed`, so code that
    catches that still does.

    Attributes:
        status: the response's status (``404``), the same as ``code``.
        response: the :class:`~loadstate.HttpResponse` the server sent (its headers and body), as
            ``value``; ``None`` when the load produced none.
    """

    def __init__(self, code: int, message: Optional[str] = None, domain: int = Domain.HTTP, final: bool = False,
                 value: Any = None) -> None:
        super().__init__(code, message, domain, final, value)

    @property
    def status(self) -> int:
        """The HTTP status."""
        return int(self.code)


class LoadOSError(LoadFailed, OSError):
    """A load that failed in :attr:`Domain.OS <loadstate.Domain.OS>`: the code is an errno.

    The built-in loaders report in this domain a refused or failed connection (http: the
    socket's errno, ``ECONNREFUSED``, ``ENETUNREACH``, ...), a file that cannot be read (file:
    ``ENOENT``, ``EACCES``, ``EISDIR``, ...), and a program that cannot be started (exec:
    ``ENOENT`` for one not found in ``PATH``, ``EACCES`` for one not executable).

    The error raised is of a class made once per :class:`OSError` subclass, deriving from this
    one and from the subclass Python's own ``OSError(errno, ...)`` picks for the errno:
    ``ECONNREFUSED`` gives a ``LoadConnectionRefusedError``, both a :class:`LoadOSError` and a
    :class:`ConnectionRefusedError`; ``ENOENT`` a :class:`FileNotFoundError`, ``EACCES`` and
    ``EPERM`` a :class:`PermissionError`, ``ETIMEDOUT`` a :class:`TimeoutError`, and an errno
    without a subclass a :class:`LoadOSError` only (an :class:`OSError`). So ``except
    ConnectionRefusedError``, ``except OSError`` and ``except loadstate.LoadFailed`` all catch a
    refused connection.

    Attributes:
        errno: the errno (as ``code``).
        strerror: the operating system's text for it (``os.strerror``), as Python sets it.
        message: the loader's message (for the http loader libcurl's, with the URL; for the
            file loader it names the path).
        filename: ``None``.
    """

    def __init__(self, code: int, message: Optional[str] = None, domain: int = Domain.OS, final: bool = False,
                 value: Any = None) -> None:
        super().__init__(code, message, domain, final, value)
        # OSError's own: the errno (set from the arguments) and its text, as Python's OSError has them.
        self.errno = int(code)
        self.strerror = _strerror(int(code))

    def __str__(self) -> str:
        return LoadFailed.__str__(self)

    def __reduce__(self) -> Tuple[Any, ...]:
        # The class is made at run time: rebuilt from the errno, not found by its name.
        return (_os_load_failed, (self.code, self.message, self.domain, self.final, self.value))


def _strerror(number: int) -> str:
    try:
        return os.strerror(number)
    except ValueError:  # out of the C library's range
        return f"Unknown error {number}"


# The LoadOSError class of each OSError subclass, made once.
_OS_CLASSES: Dict[Type[OSError], Type[LoadOSError]] = {OSError: LoadOSError}


def os_error_class(number: int) -> Type[LoadOSError]:
    """The :class:`LoadOSError` class of an errno: also the :class:`OSError` subclass Python's own
    ``OSError(number, ...)`` is (:class:`ConnectionRefusedError` for ``ECONNREFUSED``, ...)."""
    try:
        base = type(OSError(number, ""))
    except (OverflowError, TypeError):
        base = OSError
    cls = _OS_CLASSES.get(base)
    if cls is None:
        cls = type(f"Load{base.__name__}", (LoadOSError, base), {
            "__module__": __name__,
            "__doc__": f"A load that failed in the os domain with an errno Python maps to :class:`{base.__name__}`."})
        _OS_CLASSES[base] = cls
    return cls


def _os_load_failed(code: int, message: Optional[str], domain: int, final: bool, value: Any) -> LoadOSError:
    return os_error_class(int(code))(code, message, domain, final, value)


def load_error(code: int, message: Optional[str], domain: int, value: Any = None) -> LoadFailed:
    """The :class:`LoadFailed` of a failed state: a :class:`LoadTimedOut` for ``LDS_ETIMEDOUT`` in
    :attr:`Domain.LOADSTATE <loadstate.Domain.LOADSTATE>`, a :class:`LoadOSError` of the errno's
    class (:func:`os_error_class`) in :attr:`Domain.OS <loadstate.Domain.OS>`, an
    :class:`HTTPStatusError` in :attr:`Domain.HTTP <loadstate.Domain.HTTP>`."""
    if domain == Domain.LOADSTATE and code == Code.ETIMEDOUT:
        return LoadTimedOut(code, message, domain, value=value)
    if domain == Domain.OS:
        return os_error_class(code)(code, message, domain, value=value)
    if domain == Domain.HTTP:
        return HTTPStatusError(code, message, domain, value=value)
    return LoadFailed(code, message, domain, value=value)
