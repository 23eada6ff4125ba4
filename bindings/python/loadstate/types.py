"""Events and load options, and the header's constants (from :mod:`loadstate.enums`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Generic, Optional, Sequence, Tuple, TypeVar

from ._checks import I32_MAX, I32_MIN, U64_MAX, flag, instance, integer, invalid, member, milliseconds, sequence
from .enums import QUEUE_MAX, VALUE_MAX, CachePolicy, Delivery, Domain, EventType, Flags, LoadFlags, Status
from .errors import LoadFailed, load_error

__all__ = ["Status", "Flags", "EventType", "Domain", "Delivery", "CachePolicy", "Event", "Snapshot", "LoadOptions",
           "Limits", "VALUE_MAX", "QUEUE_MAX"]

T_co = TypeVar("T_co", covariant=True)

_BUSY = (Status.LOADING, Status.RUNNING)
# Plain ints: reading an enum member's value costs about 0.3 µs, on every load.
_SILENT = LoadFlags.SILENT.value
_SHARE = LoadFlags.SHARE.value

# The most interrupt delays of one load (lds_load_options.interrupt_count; more: LDS_EINVAL).
INTERRUPTS_MAX = 64


@dataclass(frozen=True)
class Event(Generic[T_co]):
    """One event of a cell, or a snapshot of its latest one; ``Event[T]`` for a cell of values ``T``.

    Fields mirror ``lds_event``; ``value`` and ``request`` are decoded with
    the cell's codecs (``bytes`` by default).

    Attributes:
        type: what happened (:class:`EventType`).
        cell: the cell's id.
        seq: 1 for the cell's first event, +1 for each later one (0 before any).
        status: the cell's status after the event.
        kind: process cells: the kind of the current or last run.
        flags: :class:`Flags` bits.
        value: the value when the status is ``LOADED``; in ``ERROR``, what the failed load
            produced, if anything (the http loader: the :class:`~loadstate.HttpResponse` of a
            status outside 2xx); else ``None``.
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
    value: Optional[T_co]
    request: Any
    error_domain: Domain
    error_code: int
    error_message: Optional[str]
    attempt: int
    elapsed_ms: int
    progress_done: int
    progress_total: int
    updated_at_ms: int

    # The flag properties test bits with int's own `&`: IntFlag's builds a
    # new member (`event.cancelled` took 1.4 us with it, 0.6 us with int's),
    # and `get()` reads `cancelled` of every state it returns.

    @property
    def loading(self) -> bool:
        """The status is ``LOADING`` or ``RUNNING``."""
        return self.status in _BUSY

    @property
    def partial(self) -> bool:
        """The value was yielded by a job that still runs."""
        return int.__and__(self.flags, Flags.PARTIAL) != 0

    @property
    def refreshing(self) -> bool:
        """A silent load or refresh runs over this state."""
        return int.__and__(self.flags, Flags.REFRESHING) != 0

    @property
    def cancelled(self) -> bool:
        """This state was restored because a load was cancelled."""
        return int.__and__(self.flags, Flags.CANCELLED) != 0

    @property
    def queued(self) -> bool:
        """The load waits for its loader's limits: the loader has not been called yet."""
        return int.__and__(self.flags, Flags.QUEUED) != 0

    @property
    def from_cache(self) -> bool:
        """The value came from a cache."""
        return int.__and__(self.flags, Flags.FROM_CACHE) != 0

    @property
    def stale(self) -> bool:
        """The cached value is older than its fresh time, or was invalidated."""
        return int.__and__(self.flags, Flags.STALE) != 0

    @property
    def revalidated(self) -> bool:
        """The cached value was confirmed current by its loader (an HTTP 304)."""
        return int.__and__(self.flags, Flags.REVALIDATED) != 0

    @property
    def optimistic(self) -> bool:
        """The value is an optimistic one of a write still running (:meth:`Process.mutate
        <loadstate.Process.mutate>`), not confirmed data."""
        return int.__and__(self.flags, Flags.OPTIMISTIC) != 0

    @property
    def rolled_back(self) -> bool:
        """This state came back because a write that showed an optimistic value failed or was
        cancelled."""
        return int.__and__(self.flags, Flags.ROLLED_BACK) != 0

    @property
    def previous(self) -> bool:
        """The value answers an earlier request (the one in :attr:`request`), kept while a load of
        another request runs (``keep_previous``); never the answer to that load."""
        return int.__and__(self.flags, Flags.PREVIOUS) != 0

    @property
    def placeholder(self) -> bool:
        """The value is the running load's placeholder (``placeholder=``), not a loaded value."""
        return int.__and__(self.flags, Flags.PLACEHOLDER) != 0

    @property
    def paused(self) -> bool:
        """The load waits for the runtime to be online: its loader has not been called for this attempt."""
        return int.__and__(self.flags, Flags.PAUSED) != 0

    @property
    def no_value(self) -> bool:
        """The load's job finished without a value: this is the state from before the load, whatever
        request it answers, not the load's answer (:class:`~loadstate.NoValue`)."""
        return int.__and__(self.flags, Flags.NO_VALUE) != 0

    @property
    def settled(self) -> bool:
        """A state event with no load under way: not loading, partial or refreshing."""
        return (self.type == EventType.STATE and self.status not in _BUSY
                and not self.flags & (Flags.PARTIAL | Flags.REFRESHING))

    @property
    def error(self) -> Optional[LoadFailed]:
        """The error as a :class:`LoadFailed`, or ``None`` when the error fields are empty: a
        :class:`~loadstate.LoadTimedOut` for a load's timeout, a :class:`~loadstate.LoadOSError` of the
        errno's :class:`OSError` subclass in :attr:`Domain.OS` (a :class:`ConnectionRefusedError`, a
        :class:`FileNotFoundError`, ...), an :class:`~loadstate.HTTPStatusError` in :attr:`Domain.HTTP`.

        Set in ``ERROR``/``FAILED``, and on a ``LOADED`` cached value whose
        revalidation failed (:attr:`CachePolicy.CACHE_THEN_LOAD`).
        """
        if self.error_domain == Domain.NONE:
            return None
        value = self.value if self.status == Status.ERROR else None
        return load_error(self.error_code, self.error_message, self.error_domain, value)

    def raise_for_error(self) -> None:
        """Raises the state's :class:`LoadFailed` (see :attr:`error`) when the status is ``ERROR`` or ``FAILED``."""
        if self.status == Status.ERROR or self.status == Status.FAILED:
            raise self.error or load_error(self.error_code, self.error_message, self.error_domain)


#: A snapshot (``lds_loadable_get``) has the same fields as an event.
Snapshot = Event

_EVENT_FIELDS = tuple(Event.__dataclass_fields__)


def make_event(values: Tuple[Any, ...]) -> Event[Any]:
    """Builds an :class:`Event` from its field values in order.

    The same result as ``Event(*values)`` in a quarter of the time: events
    are built on the delivery thread for every load, and the frozen
    ``__init__`` sets each field through ``object.__setattr__``.
    """
    event: Event[Any] = object.__new__(Event)
    d = event.__dict__
    (d["type"], d["cell"], d["seq"], d["status"], d["kind"], d["flags"], d["value"], d["request"],
     d["error_domain"], d["error_code"], d["error_message"], d["attempt"], d["elapsed_ms"], d["progress_done"],
     d["progress_total"], d["updated_at_ms"]) = values
    return event


# The enum members by value, for event_from_raw: a dict lookup instead of
# an enum call (which costs about ten times as much) for every event.
_TYPES = {int(member): member for member in EventType}
_STATUSES = {int(member): member for member in Status}
_DOMAINS = {int(member): member for member in Domain}
_FLAGS: Dict[int, Flags] = {}


def event_from_raw(cell: int, raw: Tuple[Any, ...], value: Any, request: Any, message: Optional[bytes]) -> Event[Any]:
    """Builds the :class:`Event` of an unpacked ``lds_event`` (``raw``), with its value, request and
    message already copied (and decoded) by the caller.

    Runs on the delivery thread for every event that Python code sees, so
    it sets the fields itself as :func:`make_event` does (one call less),
    and the integers become enum members through lookup tables; unknown
    ones stay integers.
    """
    flags = _FLAGS.get(raw[5])
    if flags is None:
        flags = _FLAGS[raw[5]] = Flags(raw[5])
    event: Event[Any] = object.__new__(Event)
    d = event.__dict__
    (d["type"], d["cell"], d["seq"], d["status"], d["kind"], d["flags"], d["value"], d["request"],
     d["error_domain"], d["error_code"], d["error_message"], d["attempt"], d["elapsed_ms"], d["progress_done"],
     d["progress_total"], d["updated_at_ms"]) = (
        _TYPES.get(raw[0], raw[0]), cell, raw[2], _STATUSES.get(raw[3], raw[3]), raw[4], flags, value, request,
        _DOMAINS.get(raw[10], raw[10]), raw[11], message.decode("utf-8", "replace") if message is not None else None,
        raw[13], raw[14], raw[15], raw[16], raw[17])
    return event


# make_event and event_from_raw name the fields one by one: they must follow the class.
if _EVENT_FIELDS != ("type", "cell", "seq", "status", "kind", "flags", "value", "request", "error_domain",
                     "error_code", "error_message", "attempt", "elapsed_ms", "progress_done", "progress_total",
                     "updated_at_ms"):  # pragma: no cover - a change to Event without one to make_event
    raise ImportError("loadstate.types.make_event and event_from_raw do not match the fields of Event")


@dataclass(frozen=True, eq=False)
class LoadOptions:
    """Options of one load or run (``lds_load_options``); times are in seconds.

    Options compare equal when their fields do, the cache by identity (the very cache, not a cache with
    the same entries), and hash accordingly.

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
        priority: where the job waits when its loader is at its limits: higher first, in call
            order within one priority (any 32-bit signed int; default 0).
        refresh_interval: poll: after each successful load, refresh silently this many seconds
            after it ended (``None``: no polling).
        poll_on_error: keep polling after a failed load, with the retry back-off, instead of stopping.
        ignore_cache_headers: with a cache, the http loader's rules from its responses'
            ``Cache-Control``, ``Expires`` and ``Vary`` do not apply: ``fresh`` alone decides
            and every response is stored (``LDS_LOAD_IGNORE_CACHE_HEADERS``).
        keep_previous: a non-silent load of a request other than that of the loaded value shown
            keeps that value shown, flagged ``PREVIOUS | REFRESHING`` (:attr:`Event.previous`),
            instead of ``LOADING`` (``LDS_LOAD_KEEP_PREVIOUS``).
        placeholder: a value (encoded with the cell's codec) shown ``LOADED`` flagged
            ``PLACEHOLDER | REFRESHING`` (:attr:`Event.placeholder`) while a non-silent load runs
            and nothing else would be shown; never stored in a cache. ``None``: none. Compared by
            identity, like the cache.
        refresh_on_foreground: when the runtime returns to the foreground
            (:meth:`Runtime.set_foreground <loadstate.Runtime.set_foreground>`), a loaded value at least
            ``fresh`` old (any age without ``fresh``) refreshes silently, at most once per
            ``foreground_throttle`` (``LDS_LOAD_REFRESH_ON_FOREGROUND``).
        offline: what the load does while the runtime is offline (:meth:`Runtime.set_online
            <loadstate.Runtime.set_online>`): ``"wait"`` (the default: the loader is not called, the state is
            flagged ``PAUSED``, the load starts when online), ``"fail"`` (an error ``EOFFLINE`` at once, for the
            load or a retry falling due) or ``"run"`` (ignore the signal: loaders that need no network).
        poll_in_background: polling goes on while the runtime is in the background.
        foreground_throttle: with ``refresh_on_foreground``, the least time in seconds between two such
            refreshes of the cell (``None``: 5 s).

    Every option but ``cache`` (checked by the load) is checked when the options are made (a
    :class:`TypeError` or an :class:`~loadstate.InvalidArgument` naming it); ``interrupts`` are kept as a tuple and
    ``policy`` as a :class:`CachePolicy`. The flags are ``bool``: ``share="yes"`` is refused.
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
    priority: int = 0
    refresh_interval: Optional[float] = None
    poll_on_error: bool = False
    ignore_cache_headers: bool = False
    keep_previous: bool = False
    placeholder: Any = None
    refresh_on_foreground: bool = False
    offline: str = "wait"
    poll_in_background: bool = False
    foreground_throttle: Optional[float] = None
    # What the library is given, set by __post_init__ (see _c_fields).
    _c: Tuple[Any, ...] = field(init=False, repr=False, compare=False, default=())

    def __post_init__(self) -> None:
        """Checks every option, and keeps what the library is given (all but the cache's id) in ``_c``."""
        interrupts = sequence("interrupts", self.interrupts, "a sequence of numbers of seconds")
        if len(interrupts) > INTERRUPTS_MAX:
            raise invalid(f"interrupts must hold at most {INTERRUPTS_MAX} delays, not {len(interrupts)}")
        policy = member("policy", self.policy, CachePolicy)
        key = self.cache_key
        if isinstance(key, str):
            key = key.encode("utf-8")
        elif isinstance(key, (bytes, bytearray, memoryview)):
            key = bytes(key)
        elif key is not None:
            raise TypeError(f"cache_key must be bytes, str or None, not {type(key).__name__}")
        flags = ((LoadFlags.SILENT if flag("silent", self.silent) else 0)
                 | (LoadFlags.SHARE if flag("share", self.share) else 0)
                 | (LoadFlags.POLL_ON_ERROR if flag("poll_on_error", self.poll_on_error) else 0)
                 | (LoadFlags.IGNORE_CACHE_HEADERS if flag("ignore_cache_headers", self.ignore_cache_headers) else 0)
                 | (LoadFlags.KEEP_PREVIOUS if flag("keep_previous", self.keep_previous) else 0)
                 | (LoadFlags.REFRESH_ON_FOREGROUND if flag("refresh_on_foreground", self.refresh_on_foreground)
                    else 0)
                 | (LoadFlags.POLL_IN_BACKGROUND if flag("poll_in_background", self.poll_in_background) else 0)
                 | _offline_flag(self.offline))
        c_fields = (int(flags), milliseconds("timeout", self.timeout),
                    tuple(milliseconds("interrupts", delay) for delay in interrupts),
                    integer("retries", self.retries), milliseconds("retry_base", self.retry_base),
                    milliseconds("retry_max", self.retry_max), key, int(policy), milliseconds("fresh", self.fresh),
                    milliseconds("max_age", self.max_age, U64_MAX),
                    integer("priority", self.priority, I32_MIN, I32_MAX),
                    milliseconds("refresh_interval", self.refresh_interval),
                    milliseconds("foreground_throttle", self.foreground_throttle))
        set_field = object.__setattr__
        set_field(self, "interrupts", interrupts)
        set_field(self, "policy", policy)
        set_field(self, "_c", c_fields)

    def _compared(self) -> Tuple[Any, ...]:
        """The fields as equality and hashing see them: a :class:`~loadstate.Cache` is a mutable mapping,
        which compares its entries and has no hash, so the cache is named by its ``id`` (it lives as long
        as these options)."""
        return (self.silent, self.share, self.timeout, self.interrupts, self.retries, self.retry_base,
                self.retry_max, None if self.cache is None else id(self.cache), self.cache_key, self.policy,
                self.fresh, self.max_age, self.priority, self.refresh_interval, self.poll_on_error,
                self.ignore_cache_headers, self.keep_previous,
                None if self.placeholder is None else id(self.placeholder),
                self.refresh_on_foreground, self.offline, self.poll_in_background,
                self.foreground_throttle)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._compared() == other._compared()

    def __hash__(self) -> int:
        return hash(self._compared())

    def is_default(self) -> bool:
        """Whether these are the library's defaults (sent as a NULL pointer)."""
        return self._compared() == _DEFAULT_COMPARED

    def only_flags(self) -> bool:
        """Whether these options are the defaults but for ``silent`` and ``share`` (a batch's load carries
        those two)."""
        expected = _FLAG_ONLY_COMPARED.get((self.silent, self.share))
        return expected is not None and self._compared() == expected

    def load_flags(self) -> int:
        """``lds_load_options.flags``: :data:`LoadFlags.SILENT` and :data:`LoadFlags.SHARE`."""
        return (_SILENT if self.silent else 0) | (_SHARE if self.share else 0)

    def _c_fields(self) -> Tuple[Any, ...]:
        """The fields of ``lds_load_options`` from ``flags`` on, in order, the pointers' targets as Python objects:
        flags, timeout, interrupts, retries, retry base and max, cache, cache key, policy, fresh, max age,
        priority, refresh interval and foreground throttle."""
        (flags, timeout_ms, delays, retries, base_ms, max_ms, key, policy, fresh_ms, max_age_ms, priority,
         interval_ms, throttle_ms) = self._c
        return (flags, timeout_ms, delays, retries, base_ms, max_ms, self.cache.id if self.cache is not None else 0,
                key, policy, fresh_ms, max_age_ms, priority, interval_ms, throttle_ms)


# The flag of each ``offline`` choice of LoadOptions.
_OFFLINE_FLAGS = {"wait": 0, "fail": int(LoadFlags.OFFLINE_FAIL), "run": int(LoadFlags.OFFLINE_RUN)}


def _offline_flag(offline: object) -> int:
    """The flag of an ``offline`` choice: ``"wait"``, ``"fail"`` or ``"run"``."""
    if not isinstance(offline, str):
        raise TypeError(f"offline must be a str, not {type(offline).__name__}")
    found = _OFFLINE_FLAGS.get(offline)
    if found is None:
        raise invalid(f"offline must be 'wait', 'fail' or 'run', not {offline!r}")
    return found


_DEFAULT_OPTIONS = LoadOptions()
_FLAG_ONLY_OPTIONS = {(silent, share): LoadOptions(silent=silent, share=share)
                      for silent in (False, True) for share in (False, True)}
_DEFAULT_COMPARED = _DEFAULT_OPTIONS._compared()
_FLAG_ONLY_COMPARED = {flags: options._compared() for flags, options in _FLAG_ONLY_OPTIONS.items()}


@dataclass(frozen=True)
class Limits:
    """The limits of a loader's jobs (``max_concurrent``, ``rate_per_s``, ``burst`` of its options).

    A job that may not start yet waits in the loader's queue (higher
    priority first); its cells' states are flagged ``QUEUED`` meanwhile.

    Attributes:
        max_concurrent: the most jobs of the loader running at once (0: no limit).
        rate_per_s: jobs started per second, on average (0: no limit).
        burst: jobs that may start at once after a pause (0: 1).

    Each is an int from 0 to 2**32 - 1, checked when the limits are made.
    """

    max_concurrent: int = 0
    rate_per_s: int = 0
    burst: int = 0

    def __post_init__(self) -> None:
        for name in ("max_concurrent", "rate_per_s", "burst"):
            integer(name, getattr(self, name))

    def _c_fields(self) -> Tuple[int, int, int]:
        return int(self.max_concurrent), int(self.rate_per_s), int(self.burst)


NO_LIMITS = Limits()


def limits_fields(limits: Limits) -> Tuple[int, int, int]:
    """The loader options' ``max_concurrent``, ``rate_per_s`` and ``burst`` of a ``limits`` argument, which must be
    a :class:`Limits`."""
    checked: Limits = instance("limits", limits, Limits, "a loadstate.Limits")
    return checked._c_fields()
