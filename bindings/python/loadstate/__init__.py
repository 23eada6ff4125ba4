"""loadstate: loading states for Python, driven by the loadstate C library.

A :class:`Runtime` owns cells and loaders. A :class:`Loadable` cell goes
absent -> loading -> loaded | error; a :class:`Process` cell goes idle ->
running(kind) -> finished(kind) | failed(kind). Loaders are Python
callables receiving a :class:`Job`, or the library's own (file, exec,
http). Every state change is an :class:`Event`.

``await cell.get(request)`` (or ``cell.load(request).value()``) returns the
value and raises on failure; ``await cell.load(request)`` (or
``.state()``) returns the settled state, failures included.

>>> import loadstate
>>> with loadstate.Runtime() as rt:
...     upper = rt.loader(lambda job: job.request.upper())
...     cell = rt.loadable(upper)
...     cell.load(b"hello").value(timeout=5)
b'HELLO'
"""

from typing import Tuple

from ._library import ENV_VAR, LIBRARY_NAME, Library, host_ca_certificates, load_library
from .builtin import (EXEC_REQUEST, HTTP_HTTP1, HTTP_HTTP2, HTTP_INSECURE, HTTP_NO_COMPRESSION,
                      HTTP_NO_HEURISTIC_FRESHNESS, HTTP_NO_REDIRECTS,
                      HTTP_NO_STALE_ON_DISCONNECT, HTTP_REQUEST, HTTP_RESPONSE, PATH, CacheControl,
                      ExecRequest, HttpRequest, HttpResponse)
from .cache import Cache, CacheEntry, CacheStats
from .cells import Cell, EventStream, Load, Loadable, Process
from .codec import BYTES, JSON, TEXT, Codec
from .enums import (CACHE_GET_MANY_MAX, CacheVerdict, INSPECTOR_WAITING_MAX, PRIORITY_PREFETCH, QUEUE_MAX, REDIS_KEYS_MAX, REDIS_PENDING_MAX,
                    REDIS_REPLY_SLACK, VALUE_MAX, NAME_MAX, MUTATION_KEYS_MAX, PAGES_MAX, CURSOR_MAX, CachePolicy,
                    Code,
                    Delivery, Domain, EventType, Flags, HttpFlags, JobOutcome, LoadFlags, Observed, RedisCode, Status)
from .errors import (Busy, Cancelled, Closed, Error, HTTPStatusError, InvalidArgument, IOFailure, LibraryNotFound,
                     LoadFailed, LoadOSError, LoadTimedOut, NotFound, NotSupported, Offline, OutOfMemory, RedisError, Superseded, NoValue, TimedOut, TooBig, WrongState, error_for_code)
from .loaders import EXCEPTION_CODE, Job, Loader
from .metrics import LoadMetrics, RuntimeStats
from .observer import Observation, Observer
from .pages import Page, PageRequest, PagesCell, PagesLoad, page_loader, succeed_page
from .redis_cache import RedisCache, RedisStatus
from .runtime import Runtime
from .types import Event, Limits, LoadOptions, Snapshot

__version__ = "0.4.0"


def version() -> Tuple[int, int, int]:
    """The loaded library's version as ``(major, minor, patch)``."""
    return load_library().version


def strerror(code: int) -> str:
    """The library's message for a return code."""
    return load_library().strerror(code)


__all__ = [
    "Runtime", "Loader", "Job", "Cell", "Loadable", "Process", "Load", "EventStream", "Cache", "CacheEntry",
    "CacheStats", "RedisCache", "RedisStatus", "LoadMetrics", "RuntimeStats", "Observation", "Observer", "Observed",
    "JobOutcome",
    "Event", "Snapshot", "LoadOptions", "Status", "Flags", "EventType", "Domain", "Delivery", "CachePolicy", "Code",
    "RedisCode", "REDIS_PENDING_MAX", "INSPECTOR_WAITING_MAX", "REDIS_REPLY_SLACK", "REDIS_KEYS_MAX", "CACHE_GET_MANY_MAX", "VALUE_MAX", "QUEUE_MAX", "NAME_MAX", "MUTATION_KEYS_MAX", "Limits", "LoadFlags",
    "PRIORITY_PREFETCH",
    "PagesCell", "PagesLoad", "Page", "PageRequest", "page_loader", "succeed_page", "PAGES_MAX", "CURSOR_MAX",
    "Codec", "BYTES", "TEXT", "JSON", "PATH", "EXEC_REQUEST", "HTTP_REQUEST", "HTTP_RESPONSE",
    "ExecRequest", "HttpRequest", "HttpResponse", "HttpFlags", "HTTP_INSECURE", "HTTP_NO_REDIRECTS",
    "HTTP_NO_COMPRESSION", "HTTP_HTTP2", "HTTP_HTTP1", "HTTP_NO_HEURISTIC_FRESHNESS", "HTTP_NO_STALE_ON_DISCONNECT", "CacheControl", "CacheVerdict",
    "Error", "InvalidArgument", "NotFound", "WrongState", "Cancelled", "Superseded", "NoValue", "TimedOut", "OutOfMemory",
    "Closed", "TooBig", "IOFailure", "Busy", "RedisError", "NotSupported", "Offline", "LibraryNotFound", "LoadFailed", "LoadTimedOut", "LoadOSError",
    "HTTPStatusError", "error_for_code",
    "EXCEPTION_CODE",
    "Library", "load_library", "host_ca_certificates", "ENV_VAR", "LIBRARY_NAME", "version", "strerror",
]
