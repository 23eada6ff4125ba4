"""Constants, events and load options."""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass
from typing import Any, Optional, Sequence, Tuple

from .errors import InvalidArgument, LoadFailed

__all__ = ["Status", "Flags", "EventType", "Domain", "Delivery", "CachePolicy", "Event", "Snapshot", "LoadOptions",
           "VALUE_MAX", "QUEUE_MAX"]

#: The largest value, request or message, in bytes, the library accepts (256 MiB).
VALUE_MAX = 256 * 1024 * 1024

#: The most operations host threads may have waiting for a runtime's loop thread
#: (262,144); a call that would queue more raises :class:`loadstate.Busy` and changes nothing.
QUEUE_MAX = 262_144

LOAD_SILENT = 1 << 0
LOAD_SHARE = 1 << 1


class Status(enum.IntEnum):
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
    """Event flags (``LDS_FLAG_*``)."""

    NONE = 0
    REFRESHING = 1 << 0
    PARTIAL = 1 << 1
    STALE = 1 << 2
    FROM_CACHE = 1 << 3
    CANCELLED = 1 << 4


class EventType(enum.IntEnum):
    """What an event reports (``LDS_EVENT_*``)."""

    STATE = 1
    PROGRESS = 2
    INTERRUPT = 3


class Domain(enum.IntEnum):
    """Where an error comes from (``LDS_DOMAIN_*``); ``NONE`` when there is no error."""

    NONE = 0
    LOADSTATE = 1
    HOST = 2
    OS = 3
    HTTP = 4
    EXIT = 5


class Delivery(enum.IntEnum):
    """Where callbacks run (``LDS_DELIVER_*``).

    ``LOOP``: on the runtime's own loop thread. ``POLL``: on the thread that
    calls :meth:`Runtime.dispatch <loadstate.Runtime.dispatch>`, such as an
    asyncio loop watching :attr:`Runtime.fd <loadstate.Runtime.fd>`.
    """

    LOOP = 0
    POLL = 1


class CachePolicy(enum.IntEnum):
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


_BUSY = (Status.LOADING, Status.RUNNING)


@dataclass(frozen=True)
class Event:
    """One event of a cell, or a snapshot of its latest one.

    Fields mirror ``lds_event``; ``value`` and ``request`` are decoded with
    the cell's codec (``bytes`` by default).

    Attributes:
        type: what happened (:class:`EventType`).
        cell: the cell's id.
        seq: 1 for the cell's first event, +1 for each later one (0 before any).
        status: the cell's status after the event.
        kind: process cells: the kind of the current or last run.
        flags: :class:`Flags` bits.
        value: the value when the status is ``LOADED``, else ``None``.
        request: the request of the load this state belongs to, or ``None``.
        error_domain: the error's :class:`Domain` (``NONE`` unless ``ERROR``/``FAILED``).
        error_code: the error's code in its domain.
        error_message: the error's message, or ``None``.
        attempt: 1 for a load's first try, 2 for the first retry...; 0 when no load is involved.
        elapsed_ms: interrupt events: milliseconds since the load began.
        progress_done: progress events: units done.
        progress_total: progress events: units in all (0 when unknown).
        updated_at_ms: wall-clock time (ms since the epoch) the value or error was produced.
    """

    type: EventType
    cell: int
    seq: int
    status: Status
    kind: int
    flags: Flags
    value: Any
    request: Any
    error_domain: Domain
    error_code: int
    error_message: Optional[str]
    attempt: int
    elapsed_ms: int
    progress_done: int
    progress_total: int
    updated_at_ms: int

    @property
    def loading(self) -> bool:
        """The status is ``LOADING`` or ``RUNNING``."""
        return self.status in _BUSY

    @property
    def partial(self) -> bool:
        """The value was yielded by a job that still runs."""
        return bool(self.flags & Flags.PARTIAL)

    @property
    def refreshing(self) -> bool:
        """A silent load or refresh runs over this state."""
        return bool(self.flags & Flags.REFRESHING)

    @property
    def cancelled(self) -> bool:
        """This state was restored because a load was cancelled."""
        return bool(self.flags & Flags.CANCELLED)

    @property
    def from_cache(self) -> bool:
        """The value came from a cache."""
        return bool(self.flags & Flags.FROM_CACHE)

    @property
    def stale(self) -> bool:
        """The cached value is older than its fresh time, or was invalidated."""
        return bool(self.flags & Flags.STALE)

    @property
    def settled(self) -> bool:
        """A state event with no load under way: not loading, partial or refreshing."""
        return (self.type == EventType.STATE and self.status not in _BUSY
                and not self.flags & (Flags.PARTIAL | Flags.REFRESHING))

    @property
    def error(self) -> Optional[LoadFailed]:
        """The error as a :class:`LoadFailed`, or ``None`` when the error fields are empty.

        Set in ``ERROR``/``FAILED``, and on a ``LOADED`` cached value whose
        revalidation failed (:attr:`CachePolicy.CACHE_THEN_LOAD`).
        """
        if self.error_domain == Domain.NONE:
            return None
        return LoadFailed(self.error_code, self.error_message, self.error_domain)


#: A snapshot (``lds_loadable_get``) has the same fields as an event.
Snapshot = Event

_EVENT_FIELDS = tuple(Event.__dataclass_fields__)
_new = object.__new__


def make_event(values: Tuple[Any, ...]) -> Event:
    """Builds an :class:`Event` from its field values in order.

    The same result as ``Event(*values)`` in a quarter of the time: events
    are built on the delivery thread for every load, and the frozen
    ``__init__`` sets each field through ``object.__setattr__``.
    """
    event = _new(Event)
    d = event.__dict__
    (d["type"], d["cell"], d["seq"], d["status"], d["kind"], d["flags"], d["value"], d["request"],
     d["error_domain"], d["error_code"], d["error_message"], d["attempt"], d["elapsed_ms"], d["progress_done"],
     d["progress_total"], d["updated_at_ms"]) = values
    return event


# make_event names the fields one by one: it must follow the class.
if _EVENT_FIELDS != ("type", "cell", "seq", "status", "kind", "flags", "value", "request", "error_domain",
                     "error_code", "error_message", "attempt", "elapsed_ms", "progress_done", "progress_total",
                     "updated_at_ms"):  # pragma: no cover - a change to Event without one to make_event
    raise ImportError("loadstate.types.make_event does not match the fields of Event")


def _milliseconds(name: str, seconds: Optional[float], limit: int = 0xFFFFFFFF) -> int:
    if seconds is None:
        return 0
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or math.isnan(seconds) or seconds < 0:
        raise InvalidArgument(-1, "invalid argument", f"{name} must be a number of seconds >= 0, not {seconds!r}")
    ms = round(seconds * 1000)
    if ms > limit:
        raise InvalidArgument(-1, "invalid argument", f"{name} is too long ({seconds!r} s)")
    return ms


@dataclass(frozen=True)
class LoadOptions:
    """Options of one load or run (``lds_load_options``); times are in seconds.

    Attributes:
        silent: keep the current state while loading; emit it flagged ``REFRESHING``.
        share: wait for a running job of the same loader and request instead of starting one
            (the job is cancelled only when every cell waiting for it has left it).
        timeout: cancel the job and make the cell an error ``LDS_ETIMEDOUT`` after this long.
        interrupts: delays between ``INTERRUPT`` events (at most 64).
        retries: extra attempts after a failure.
        retry_base: back-off before the first retry (library default 0.1 s).
        retry_max: upper bound of any back-off (library default 30 s).
        cache: a :class:`~loadstate.Cache` of the same runtime to use, or ``None``.
        cache_key: the entry's key (``bytes`` or ``str``); ``None``: the request is the key.
        policy: how the cache is used (:class:`CachePolicy`).
        fresh: entries younger than this many seconds are fresh; older are stale.
        max_age: entries older than this many seconds count as missing (``None``: no limit).
    """

    silent: bool = False
    share: bool = False
    timeout: Optional[float] = None
    interrupts: Sequence[float] = ()
    retries: int = 0
    retry_base: Optional[float] = None
    retry_max: Optional[float] = None
    cache: Any = None
    cache_key: Any = None
    policy: CachePolicy = CachePolicy.LOAD_ONLY
    fresh: Optional[float] = None
    max_age: Optional[float] = None

    def is_default(self) -> bool:
        """Whether these are the library's defaults (sent as a NULL pointer)."""
        return self == _DEFAULT_OPTIONS

    def _c_fields(self) -> Tuple[Any, ...]:
        if isinstance(self.retries, bool) or not isinstance(self.retries, int) or not 0 <= self.retries <= 0xFFFFFFFF:
            raise InvalidArgument(-1, "invalid argument", f"retries must be an int >= 0, not {self.retries!r}")
        delays = tuple(_milliseconds("interrupts", d) for d in self.interrupts)
        flags = (LOAD_SILENT if self.silent else 0) | (LOAD_SHARE if self.share else 0)
        key = self.cache_key
        if isinstance(key, str):
            key = key.encode("utf-8")
        elif key is not None:
            key = bytes(key)
        fresh = _milliseconds("fresh", self.fresh)
        if fresh > 0xFFFFFFFF:  # pragma: no cover - _milliseconds bounds it already
            raise InvalidArgument(-1, "invalid argument", "fresh is too long")
        return (flags, _milliseconds("timeout", self.timeout), delays, self.retries,
                _milliseconds("retry_base", self.retry_base), _milliseconds("retry_max", self.retry_max),
                self.cache.id if self.cache is not None else 0, key, int(self.policy), fresh,
                _milliseconds("max_age", self.max_age, limit=(1 << 64) - 1))


_DEFAULT_OPTIONS = LoadOptions()
