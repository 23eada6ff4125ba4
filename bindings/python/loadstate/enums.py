"""The constants of ``include/loadstate.h`` as Python enums, and the library's limits.

This module imports nothing of the package: every other module names the
header's constants through it.

Members print as ``Class.NAME`` (``print(Status.LOADED)`` shows
``Status.LOADED``) and still compare equal to the header's integers.
"""

from __future__ import annotations

import enum

__all__ = ["Status", "CacheVerdict", "Flags", "EventType", "Domain", "Delivery", "CachePolicy", "Code", "RedisCode", "LoadFlags",
           "HttpFlags", "ExecFlags", "CacheFlags", "Observed", "JobOutcome", "VALUE_MAX", "QUEUE_MAX",
           "PRIORITY_PREFETCH", "REDIS_PENDING_MAX", "REDIS_KEYS_MAX", "CACHE_GET_MANY_MAX",
           "INSPECTOR_WAITING_MAX", "REDIS_REPLY_SLACK", "NAME_MAX", "MUTATION_KEYS_MAX"]

#: The largest value, request or message, in bytes, the library accepts (256 MiB).
VALUE_MAX = 256 * 1024 * 1024

#: The longest name of a loader or cell, in bytes of UTF-8 (128, ``LDS_NAME_MAX``); a longer one raises
#: :class:`loadstate.InvalidArgument`.
NAME_MAX = 128

#: The most optimistic values, and the most prefixes, of one write (64, ``LDS_MUTATION_KEYS_MAX``;
#: see :meth:`loadstate.Process.mutate`); more raise :class:`loadstate.InvalidArgument`.
MUTATION_KEYS_MAX = 64
#: The most pages one :class:`loadstate.PagesCell` holds (1,024, ``LDS_PAGES_MAX``).
PAGES_MAX = 1024

#: The longest page cursor, in bytes (4,096, ``LDS_CURSOR_MAX``); a page returning a longer one fails with
#: :class:`loadstate.TooBig`.
CURSOR_MAX = 4096

#: The most operations host threads may have waiting for a runtime's loop thread
#: (262,144); a call that would queue more raises :class:`loadstate.Busy` and changes nothing.
QUEUE_MAX = 262_144

#: The most commands of one Redis cache that may wait for a connection or a reply (65,536,
#: ``LDS_REDIS_PENDING_MAX``); more fail with :class:`loadstate.RedisError` (:attr:`RedisCode.EQUEUE`).
REDIS_PENDING_MAX = 65_536

#: The most keys a Redis cache lists (1,000,000, ``LDS_REDIS_KEYS_MAX``); more raise :class:`loadstate.TooBig`.
REDIS_KEYS_MAX = 1_000_000
#: What one reply from Redis may hold beyond a cache's ``max_value_bytes`` (1 MiB, ``LDS_REDIS_REPLY_SLACK``):
#: a larger reply drops its connection (:attr:`RedisCode.EPROTO`).
REDIS_REPLY_SLACK = 1 << 20
#: The most inspector connections still waiting for their request head (64, ``LDS_INSPECTOR_WAITING_MAX``);
#: a new one over it closes the oldest of them.
INSPECTOR_WAITING_MAX = 64

#: The most keys one call into the library looks up (4,096, ``LDS_CACHE_GET_MANY_MAX``):
#: :meth:`loadstate.Cache.get_many` asks for larger batches in calls of this many keys.
CACHE_GET_MANY_MAX = 4_096

#: The priority of a prefetch whose options leave it at 0 (``LDS_PRIORITY_PREFETCH``).
PRIORITY_PREFETCH = -100


class _Named(enum.IntEnum):
    """An int enum that prints its name, ``Class.NAME``, in ``str()`` and f-strings."""

    def __str__(self) -> str:
        return f"{type(self).__name__}.{self.name}"

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)


class Status(_Named):
    """The status of a cell (``LDS_ABSENT`` ... ``LDS_FAILED``)."""

    ABSENT = 0
    LOADING = 1
    LOADED = 2
    ERROR = 3
    IDLE = 4
    RUNNING = 5
    FINISHED = 6
    FAILED = 7


class Flags(enum.IntFlag):
    """Event flags (``LDS_FLAG_*``); ``str()`` names the flags set, ``Flags.PARTIAL|REFRESHING``."""

    NONE = 0
    REFRESHING = 1 << 0
    PARTIAL = 1 << 1
    STALE = 1 << 2
    FROM_CACHE = 1 << 3
    CANCELLED = 1 << 4
    QUEUED = 1 << 6
    REVALIDATED = 1 << 7
    OPTIMISTIC = 1 << 8
    ROLLED_BACK = 1 << 12
    PREVIOUS = 1 << 9
    PLACEHOLDER = 1 << 10
    PAGE_PREVIOUS = 1 << 11
    PAGES_DROPPED = 1 << 14
    #: A pages cell's first event of a :meth:`PagesCell.load <loadstate.PagesCell.load>`: one for each load.
    PAGES_LOAD = 1 << 16
    #: The load waits for the runtime to be online (:meth:`Runtime.set_online <loadstate.Runtime.set_online>`).
    PAUSED = 1 << 13
    #: The load's job finished without a value: the state from before the load came back
    #: (:class:`~loadstate.NoValue`).
    NO_VALUE = 1 << 15

    def __str__(self) -> str:
        return f"Flags.{self.name}" if self.name else "Flags.NONE"

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)


class EventType(_Named):
    """What an event reports (``LDS_EVENT_*``)."""

    STATE = 1
    PROGRESS = 2
    INTERRUPT = 3


class Domain(_Named):
    """Where an error comes from (``LDS_DOMAIN_*``); ``NONE`` when there is no error."""

    NONE = 0
    LOADSTATE = 1
    HOST = 2
    OS = 3
    HTTP = 4
    EXIT = 5
    REDIS = 6


class Observed(_Named):
    """What a runtime observer is told of (``lds_observation.what``: ``LDS_OBSERVE_*``)."""

    EVENT = 1
    JOB_START = 2
    JOB_END = 3


class JobOutcome(_Named):
    """How a job ended (``lds_observation.outcome``: ``LDS_JOB_*``)."""

    SUCCEEDED = 0
    FAILED = 1
    CANCELLED = 2


class Delivery(_Named):
    """Where callbacks run (``LDS_DELIVER_*``).

    ``LOOP``: on the runtime's own loop thread. ``POLL``: on the thread that
    calls :meth:`Runtime.dispatch <loadstate.Runtime.dispatch>`, such as an
    asyncio loop watching :attr:`Runtime.fd <loadstate.Runtime.fd>`.
    """

    LOOP = 0
    POLL = 1


class CachePolicy(_Named):
    """How a load with a cache uses it (``LDS_POLICY_*``).

    ``LOAD_ONLY``: always load; a success is stored. ``CACHE_FIRST``: a
    fresh entry is shown (``FROM_CACHE``) and nothing is loaded; otherwise
    load and store. ``CACHE_THEN_LOAD``: an entry is shown at once
    (``FROM_CACHE``, and ``STALE`` when not fresh), then a silent load
    revalidates it; a failed revalidation keeps the cached value and sets
    the error fields. ``CACHE_ONLY``: the entry, or an error ``NOT_FOUND``;
    nothing is loaded.
    """

    LOAD_ONLY = 0
    CACHE_FIRST = 1
    CACHE_THEN_LOAD = 2
    CACHE_ONLY = 3


class Code(_Named):
    """The library's return codes (``LDS_OK`` and the negative ``LDS_E*``)."""

    OK = 0
    EINVAL = -1
    ENOENT = -2
    ESTATE = -3
    ECANCELED = -4
    ETIMEDOUT = -5
    ENOMEM = -6
    ECLOSED = -7
    ETOOBIG = -8
    EIO = -9
    EAGAIN = -10
    EREDIS = -11
    ENOTSUP = -12
    EOFFLINE = -13


class RedisCode(_Named):
    """Why a Redis cache failed (``LDS_REDIS_E*``): the code of a :class:`loadstate.RedisError` and of a load's
    error in the ``REDIS`` domain.

    ``ECONNECT``: the connection could not be made or was lost. ``ETIMEDOUT``: no reply (or connection) in time.
    ``EAUTH``: AUTH or SELECT was refused. ``EREPLY``: Redis answered with an error or an unexpected reply.
    ``ETOOBIG``: the value is larger than the cache's ``max_value_bytes``; not stored. ``EDOWN``: not connected,
    the cache waits to try again. ``ECLOSED``: the cache was freed while the command waited. ``EQUEUE``: more
    than :data:`REDIS_PENDING_MAX` commands wait. ``EPROTO``: the server broke a bound: a reply larger than
    the cache accepts (its ``max_value_bytes`` and 1 MiB more), or one still incomplete a command timeout
    after it began to arrive; the connection was dropped. ``EREFUSED``: the server refused the connection
    (nothing listens there). ``EUNREACHABLE``: the host could not be reached (its name does not resolve, no
    route leads to it, no such unix socket).
    """

    ECONNECT = 1
    ETIMEDOUT = 2
    EAUTH = 3
    EREPLY = 4
    ETOOBIG = 5
    EDOWN = 6
    ECLOSED = 7
    EQUEUE = 8
    EPROTO = 9
    EREFUSED = 10
    EUNREACHABLE = 11


class LoadFlags(enum.IntFlag):
    """Flags of one load (``lds_load_options.flags``: ``LDS_LOAD_*``)."""

    NONE = 0
    SILENT = 1 << 0
    SHARE = 1 << 1
    POLL_ON_ERROR = 1 << 4
    IGNORE_CACHE_HEADERS = 1 << 5
    NO_PROGRESS = 1 << 6
    KEEP_PREVIOUS = 1 << 7
    REFRESH_ON_FOREGROUND = 1 << 8
    OFFLINE_FAIL = 1 << 9
    OFFLINE_RUN = 1 << 10
    POLL_IN_BACKGROUND = 1 << 11


class HttpFlags(enum.IntFlag):
    """Flags of an http request (``lds_http_request.flags``: ``LDS_HTTP_*``)."""

    NONE = 0
    INSECURE = 1 << 0
    NO_REDIRECTS = 1 << 1
    NO_COMPRESSION = 1 << 2
    HTTP2 = 1 << 3
    HTTP1 = 1 << 4
    NO_HEURISTIC_FRESHNESS = 1 << 5
    NO_STALE_ON_DISCONNECT = 1 << 6


class CacheVerdict(str, enum.Enum):
    """Why the http loader's cache served a response (:attr:`HttpResponse.cache
    <loadstate.HttpResponse.cache>`), read from the ``detail`` of the ``loadstate`` member of
    its ``Cache-Status`` field (RFC 9211). A ``str`` enum: ``response.cache == "fresh"`` holds."""

    #: Within its explicit lifetime (the response's ``max-age`` or ``Expires``).
    FRESH = "fresh"
    #: Fresh by the heuristic lifetime guessed from ``Last-Modified`` (RFC 9111 4.2.2).
    HEURISTIC = "heuristic"
    #: Served stale: allowed by the request's ``max-stale``, or the response's
    #: ``stale-while-revalidate`` or ``stale-if-error``.
    STALE = "stale"
    #: Stored, and confirmed by the server with a 304 to a conditional request.
    REVALIDATED = "revalidated"

    def __str__(self) -> str:
        return self.value


class ExecFlags(enum.IntFlag):
    """Flags of the exec loader (``lds_exec_options.flags``: ``LDS_EXEC_*``)."""

    NONE = 0
    STREAM_LINES = 1 << 0


class CacheFlags(enum.IntFlag):
    """Flags of a persistent cache (``lds_persistent_cache_options.flags``: ``LDS_CACHE_*``)."""

    NONE = 0
    REPLACE_DAMAGED = 1 << 0
