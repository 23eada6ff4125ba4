"""Cells: loadable and process state machines, their loads and event streams."""

from __future__ import annotations

import asyncio
import collections
import os
import sys
import threading
import time
import warnings
import weakref
from ctypes import POINTER, byref, c_uint32, c_uint64, c_void_p, cast, create_string_buffer, sizeof, string_at
from threading import get_ident
from typing import (TYPE_CHECKING, Any, Callable, Deque, Generator, Generic, Iterable, List, Mapping, Optional,
                    Sequence, Tuple, TypeVar, Union)

from . import _core, _trio
from ._checks import I32_MAX, I32_MIN, flag, handle_name, integer, seconds
from ._library import (MUTATE_POPULATE, OP_LOAD, CachePrefixC, CacheUpdateC, CellOptionsC, LoadOptionsC,
                       MutationOptionsC, SnapshotC)
from .builtin import HttpRequest
from .cache import Cache
from .codec import BYTES, Codec, encode_request
from .enums import (MUTATION_KEYS_MAX, VALUE_MAX, CachePolicy, Code, Delivery, Domain, EventType, Flags, LoadFlags,
                    Status)
from .errors import Cancelled, Closed, Error, InvalidArgument, NoValue, Superseded, TimedOut, WrongState
from .loaders import Loader
from .types import _FLAG_ONLY_OPTIONS, Event, LoadOptions, event_from_raw

if TYPE_CHECKING:
    from .runtime import Runtime

__all__ = ["Cell", "Loadable", "Process", "Load", "EventStream"]

T = TypeVar("T")
EventCallback = Callable[[Event[Any]], Any]

# The defaults of Loadable.load's arguments that the path without an options struct compares by identity.
_DEFAULT_INTERRUPTS: Sequence[float] = ()
_ZERO = 0
# A load without a cache, as the int the hot path compares (an enum member costs a lookup on every load).
_LOAD_ONLY = CachePolicy.LOAD_ONLY.value

# Guards the hand-over between a load's resolution and its waiters.
_WAIT_LOCK = threading.Lock()
_END = object()


def options_struct(options: LoadOptions) -> Tuple[LoadOptionsC, Any]:
    (flags, timeout_ms, delays, retries, base_ms, max_ms, cache, key, policy, fresh_ms, max_age_ms, priority,
     interval_ms, throttle_ms) = options._c_fields()
    array = (c_uint32 * len(delays))(*delays) if delays else None
    struct = LoadOptionsC(sizeof(LoadOptionsC), flags, timeout_ms,
                          cast(array, POINTER(c_uint32)) if array is not None else None,
                          len(delays), retries, base_ms, max_ms, cache, key, len(key) if key is not None else 0,
                          policy, fresh_ms, max_age_ms, priority, interval_ms, foreground_throttle_ms=throttle_ms)
    return struct, (array, key)  # what the struct points to must outlive the call


# Values at least this large are decoded straight from the library's memory by codecs that can.
_DECODE_IN_PLACE = 64 * 1024
_PROGRESS = EventType.PROGRESS.value
_NO_PROGRESS = LoadFlags.NO_PROGRESS.value
# The options of a load with no option but LDS_LOAD_NO_PROGRESS (read only: shared by every thread).
_NO_PROGRESS_OPTIONS = byref(LoadOptionsC(sizeof(LoadOptionsC), _NO_PROGRESS))
# No value decoded in place.
_NOT_DECODED: Any = object()

# Decoded requests of these types are shared by the events that carry the same request.
_IMMUTABLE = frozenset({str, bytes, int, float, bool, type(None), tuple, HttpRequest})


class _CellState:
    """What the runtime keeps for a cell: the delivery side, shared by the public object.

    It holds no reference to the public :class:`Cell`, so a cell the user
    drops is collected (and freed in C) even while the runtime lives.
    """

    __slots__ = ("core", "id", "c_id", "process", "codec", "request_codec", "latest", "value", "request", "message",
                 "_event", "waiters", "subscribers", "streams", "progress", "gen", "loader_id", "closed",
                 "_request_seen", "decoded", "__weakref__")

    def __init__(self, core: _core.Core, process: bool, codec: Codec[Any], request_codec: Codec[Any]) -> None:
        self.core = core
        self.id = 0
        self.c_id = c_uint64(0)
        self.process = process
        self.codec = codec
        self.request_codec = request_codec
        status = Status.IDLE if process else Status.ABSENT
        # The latest event: the unpacked lds_event (its pointers no longer valid)
        # and copies of its value, request and message.
        self.latest: Tuple[Any, ...] = (EventType.STATE, 0, 0, status, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                        int(time.time() * 1000))
        self.value: Optional[bytes] = None
        self.request: Optional[bytes] = None
        self.message: Optional[bytes] = None
        self._event: Optional[Event[Any]] = None
        self.waiters: List[Load[Any]] = []
        # (callback, wants PROGRESS events) pairs.
        self.subscribers: Tuple[Tuple[EventCallback, bool], ...] = ()
        # Weak references, so that a stream the user drops stops receiving.
        self.streams: Tuple["weakref.ref[EventStream[Any]]", ...] = ()
        # Whether the library sends the cell's PROGRESS events (its default).
        self.progress = True
        # Bumped by every operation issued through the binding; a load may
        # cancel the cell only while it is still the latest operation.
        self.gen = 0
        # The id of the loader of the latest load issued through the binding (0: none yet).
        self.loader_id = 0
        self.closed = False
        # The last request decoded, as (bytes, decoded value): the events of a
        # load repeat its request, which is then decoded once per load.
        self._request_seen: Tuple[Optional[bytes], Any] = (None, None)
        # The latest value already decoded (from the library's memory), or _NOT_DECODED.
        self.decoded: Any = _NOT_DECODED

    def deliver(self, raw: Tuple[Any, ...]) -> None:
        """Runs on the delivery thread for every event of the cell, with the unpacked ``lds_event``."""
        if self.closed:
            return
        # Copy what the event points to: the pointers die with the callback.
        pointer = raw[6]
        value: Optional[bytes]
        if pointer and raw[7] >= _DECODE_IN_PLACE and self.codec.decodes_views:
            value, self.decoded = None, self._decode_view(memoryview(_core.memory_at(pointer)).cast("B")[:raw[7]])
        else:
            value = _core.memory_at(pointer)[:raw[7]] if pointer else None  # type: ignore[assignment]
            self.decoded = _NOT_DECODED
        pointer = raw[8]
        request: Optional[bytes] = _core.memory_at(pointer)[:raw[9]] if pointer else None  # type: ignore[assignment]
        message = raw[12]
        message = string_at(message, -1) if message else None
        self.latest = raw
        self.value = value
        self.request = request
        self.message = message
        subscribers = self.subscribers
        if subscribers or self.streams:
            event = self._event = self._build(raw, value, request, message)
            for callback, wants_progress in subscribers:
                if not wants_progress and raw[0] == EventType.PROGRESS:
                    continue
                try:
                    callback(event)
                except BaseException as exc:  # noqa: BLE001
                    self.core.report(exc, f"the event callback {getattr(callback, '__qualname__', callback)!r}")
            for ref in self.streams:
                stream = ref()
                if stream is not None and (stream.progress or raw[0] != EventType.PROGRESS):
                    stream._push(event)
        else:
            self._event = None
            if raw[0] == _PROGRESS and self.progress:
                # A PROGRESS event of a cell nobody listens to, whose loads did not turn them off (a
                # refresh, a load refused by the library): the library stops sending them.
                try:
                    self.listen_for_progress()
                except Error as exc:
                    self.core.report(exc, f"turning off the progress events of cell {self.id}")
        # Loads last: once a load's outcome is visible, every callback has seen it.
        waiters = self.waiters
        if waiters:
            if len(waiters) == 1:
                waiters[0]._feed(raw, request, self)
            else:
                for load in tuple(waiters):
                    load._feed(raw, request, self)

    def event(self) -> Event[Any]:
        """The latest event as an :class:`Event` (built once, on demand)."""
        event = self._event
        if event is None:
            event = self._event = self._build(self.latest, self.value, self.request, self.message)
        return event

    def build_event(self, raw: Tuple[Any, ...], value: Optional[bytes], request: Optional[bytes],
                    message: Optional[bytes]) -> Event[Any]:
        """An :class:`Event` of the cell from an unpacked ``lds_event`` and copies of what it points to, decoded
        with the cell's codecs (for the runtime observer)."""
        return self._build(raw, value, request, message)

    def _build(self, raw: Tuple[Any, ...], value: Optional[bytes], request: Optional[bytes],
               message: Optional[bytes]) -> Event[Any]:
        decoded_value: Any = value
        decoded_request: Any = request
        if self.decoded is not _NOT_DECODED and raw is self.latest:
            decoded_value = self.decoded
        elif value is not None and self.codec is not BYTES:
            decoded_value = self._decode(self.codec, value, "value")
        if request is not None and self.request_codec is not BYTES:
            seen, decoded = self._request_seen
            if request == seen and type(decoded) in _IMMUTABLE:
                decoded_request = decoded
            else:
                decoded_request = self._decode(self.request_codec, request, "request") if request else None
                self._request_seen = (request, decoded_request)
        return event_from_raw(self.id, raw, decoded_value, decoded_request, message)

    def _decode_view(self, view: memoryview) -> Any:
        """Decodes a value in the library's memory, valid during this callback only."""
        try:
            return self.codec.decode(view)  # type: ignore[arg-type]
        except Exception as exc:  # noqa: BLE001 - reported; the event keeps the raw bytes
            self.core.report(exc, f"decoding the value of cell {self.id} with the {self.codec.name} codec")
            return bytes(view)

    def _decode(self, codec: Codec[Any], data: bytes, what: str) -> Any:
        try:
            return codec.decode(data)
        except Exception as exc:  # noqa: BLE001 - reported; the event keeps the raw bytes
            self.core.report(exc, f"decoding the {what} of cell {self.id} with the {codec.name} codec")
            return data

    def listen_for_progress(self) -> None:
        """Asks the library for PROGRESS events exactly when a subscriber or stream wants them."""
        wanted = any(wants for _, wants in self.subscribers) or any(
            stream.progress for stream in (ref() for ref in self.streams) if stream is not None)
        if wanted == self.progress or self.closed or self.core.closed:
            return
        core = self.core
        set_progress = core.dll.lds_process_set_progress if self.process else core.dll.lds_loadable_set_progress
        rc = set_progress(core.c_handle, self.c_id, int(wanted))
        if rc == 0:
            self.progress = wanted
        elif rc != Code.ECLOSED and rc != Code.ENOENT:
            raise core.lib.error(rc, "progress events")

    def end(self, error: Error) -> None:
        """The cell is gone: wake every waiter with ``error``, end every stream."""
        self.closed = True
        waiters, self.waiters = self.waiters, []
        for load in waiters:
            load._resolve(None, error)
        streams, self.streams = self.streams, ()
        for ref in streams:
            stream = ref()
            if stream is not None:
                stream._push(_END)
        self.subscribers = ()

    def add_stream(self, stream: "EventStream[Any]") -> None:
        self.streams = self.streams + (weakref.ref(stream, self._drop_stream),)
        self.listen_for_progress()

    def drop_stream(self, stream: "EventStream[Any]") -> None:
        self.streams = tuple(ref for ref in self.streams if ref() is not stream and ref() is not None)
        self.listen_for_progress()

    def _drop_stream(self, ref: "weakref.ref[EventStream[Any]]") -> None:
        self.streams = tuple(r for r in self.streams if r is not ref)
        try:
            self.listen_for_progress()
        except Error as exc:
            self.core.report(exc, f"turning off the progress events of cell {self.id}")

    def runtime_closed(self) -> None:
        self.end(self.core.lib.error(Code.ECLOSED, f"cell {self.id}: the runtime was closed"))


def _free_cell(core: _core.Core, state: _CellState) -> None:
    """Finalizer of a cell the user dropped without closing it."""
    if state.closed or core.closed:
        return
    core.cells.pop(state.id, None)
    free = core.dll.lds_process_free if state.process else core.dll.lds_loadable_free
    free(core.c_handle, state.id)
    state.end(core.lib.error(Code.ECLOSED, f"cell {state.id} was closed"))


class Cell(Generic[T]):
    """What loadable and process cells share: identity, events, cancel, reset, close.

    A cell is created by :meth:`Runtime.loadable` or :meth:`Runtime.process`
    and lives until :meth:`close` (or until it is garbage-collected, or its
    runtime closes). It is a context manager that closes it. ``T`` is the
    type of its values (what its codec decodes).

    Attributes:
        name: the name given when the cell was made (``name=``), or ``None``; the inspector shows it.
    """

    _process = False

    def __init__(self, runtime: "Runtime", loader: Optional[Loader[Any]] = None, *,
                 codec: Optional[Codec[Any]] = None, request_codec: Optional[Codec[Any]] = None,
                 on_event: Optional[EventCallback] = None, name: Optional[str] = None) -> None:
        c_name = handle_name(name)
        if loader is not None and not isinstance(loader, Loader):
            raise TypeError(f"loader must be a loadstate.Loader or None, not {type(loader).__name__}")
        for parameter, given in (("codec", codec), ("request_codec", request_codec)):
            if given is not None and not isinstance(given, Codec):
                raise TypeError(f"{parameter} must be a loadstate.Codec or None, not {type(given).__name__}")
        if on_event is not None and not callable(on_event):
            raise TypeError(f"on_event must be callable or None, not {type(on_event).__name__}")
        core = runtime._core
        self._runtime = runtime
        self._core = core
        self._loader = loader
        self._last_loader = loader
        if request_codec is None:
            request_codec = loader.request_codec if loader is not None else codec or BYTES
        if codec is None:
            codec = loader.codec if loader is not None else BYTES
        state = _CellState(core, self._process, codec, request_codec)
        if on_event is not None:
            state.subscribers = ((on_event, True),)
        out = c_uint64()
        if c_name is None:
            new = core.dll.lds_process_new if self._process else core.dll.lds_loadable_new
            core.check(new(core.c_handle, _core.event_callback, core.token, byref(out)),
                       "lds_process_new" if self._process else "lds_loadable_new")
        else:
            options = CellOptionsC(sizeof(CellOptionsC), _core.event_callback, core.token, c_name)
            new = core.dll.lds_process_new_ex if self._process else core.dll.lds_loadable_new_ex
            core.check(new(core.c_handle, byref(options), byref(out)),
                       "lds_process_new_ex" if self._process else "lds_loadable_new_ex")
        self.name: Optional[str] = name if c_name is not None else None
        state.id = out.value
        state.c_id = out
        core.cells[state.id] = state
        self._state = state
        # PROGRESS events are turned off by the first load of a cell that nobody listens to (see _begin),
        # not here: one call into the library fewer for every cell made.

    @property
    def id(self) -> int:
        """The cell's id in its runtime."""
        return self._state.id

    @property
    def runtime(self) -> "Runtime":
        """The runtime the cell belongs to."""
        return self._runtime

    @property
    def loader(self) -> Optional[Loader[Any]]:
        """The loader used when a load names none."""
        return self._loader

    @property
    def closed(self) -> bool:
        """Whether the cell (or its runtime) was closed."""
        return self._state.closed

    @property
    def latest(self) -> Event[T]:
        """The latest event delivered to Python (seq 0 and the initial status before any).

        ``PROGRESS`` events reach Python only while a subscriber or stream
        asks for them, so without one the latest event is a state or an
        interrupt.
        """
        return self._state.event()

    def subscribe(self, callback: Callable[[Event[T]], Any], *, progress: bool = True) -> Callable[[], None]:
        """Calls ``callback(event)`` for every later event, on the delivery thread.

        Args:
            callback: the function to call.
            progress: whether ``callback`` gets ``PROGRESS`` events too. The
                library sends a cell's ``PROGRESS`` events to Python only
                while some subscriber or stream asks for them.

        Returns a function that unsubscribes. An exception the callback raises
        goes to the runtime's error handler.
        """
        if not callable(callback):
            raise TypeError(f"callback must be callable, not {type(callback).__name__}")
        state = self._state
        entry = (callback, flag("progress", progress))
        state.subscribers = state.subscribers + (entry,)
        state.listen_for_progress()

        def unsubscribe() -> None:
            state.subscribers = tuple(item for item in state.subscribers if item is not entry)
            state.listen_for_progress()

        return unsubscribe

    def events(self, maxlen: Optional[int] = None, *, progress: bool = True) -> "EventStream[T]":
        """An async iterator over the cell's events from now on.

        Call it inside a running asyncio loop or trio run; use it with ``async for``,
        ``anext()``, or ``async with`` to stop it on exit. The iteration
        ends when the cell or its runtime closes. With ``maxlen``, only the
        newest ``maxlen`` undelivered events are kept; with ``progress=False``
        the stream leaves out ``PROGRESS`` events.
        """
        return EventStream(self._state, maxlen, progress)

    def cancel(self) -> None:
        """Cancels the running job, if any: the state before the load returns, flagged ``CANCELLED``."""
        state = self._state
        state.gen += 1
        fn = self._core.dll.lds_process_cancel if self._process else self._core.dll.lds_loadable_cancel
        self._core.check(fn(self._core.c_handle, state.id), "cancel")

    def reset(self) -> None:
        """Cancels the running job and makes the cell absent (process: idle)."""
        state = self._state
        state.gen += 1
        fn = self._core.dll.lds_process_reset if self._process else self._core.dll.lds_loadable_reset
        self._core.check(fn(self._core.c_handle, state.id), "reset")

    def set_priority(self, priority: int) -> None:
        """Gives the load under way another priority (``lds_loadable_set_priority``).

        A load that waits for its loader's limits (its state is flagged
        ``QUEUED``) moves to its place for the new priority; a load that runs
        is not affected. The priority is kept for :meth:`Loadable.refresh`.
        """
        priority = integer("priority", priority, I32_MIN, I32_MAX)
        core = self._core
        fn = core.dll.lds_process_set_priority if self._process else core.dll.lds_loadable_set_priority
        core.check(fn(core.c_handle, self._state.id, priority), "set_priority")

    def close(self) -> None:
        """Frees the cell: its job is cancelled, no more events, pending loads raise :class:`Closed`."""
        state = self._state
        if state.closed:
            return
        core = self._core
        core.cells.pop(state.id, None)
        if not core.closed:
            free = core.dll.lds_process_free if self._process else core.dll.lds_loadable_free
            rc = free(core.c_handle, state.id)
            if rc < 0 and rc != Code.ECLOSED:
                raise core.lib.error(rc, "close")
        state.end(core.lib.error(Code.ECLOSED, f"cell {state.id} was closed"))

    def __del__(self) -> None:
        # A cell the user dropped without closing it is freed in the library (the runtime's own close
        # frees every cell). Cheaper than a weakref.finalize made for every cell.
        state = self.__dict__.get("_state")
        if state is not None and not state.closed:
            _free_cell(state.core, state)

    def __enter__(self: "CellT") -> "CellT":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def _begin(self, loader: Optional[Loader[Any]], request: Any, options: Optional[LoadOptions],
               kind: Optional[int], what: str, mutation: Optional[MutationOptionsC] = None) -> "Load[T]":
        loader = loader or self._loader
        if loader is None:
            raise InvalidArgument(InvalidArgument.code, "invalid argument",
                                  f"{what}: the cell has no loader and none was given")
        if not isinstance(loader, Loader):
            raise TypeError(f"loader must be a loadstate.Loader or None, not {type(loader).__name__}")
        core = self._core
        if loader._core is not core:
            raise InvalidArgument(InvalidArgument.code, "invalid argument",
                                  f"{what}: the loader belongs to another runtime")
        state = self._state
        raw = request if type(request) is bytes and state.request_codec is BYTES else encode_request(
            state.request_codec, request)
        # On the attached asyncio loop a load with no options but its flags
        # joins the batch submitted at the end of the loop's current callback
        # (Core.defer; the op's code carries the flags).
        deferred = (kind is None and (options is None or options.only_flags()) and core.batch_thread == get_ident()
                    and not loader._closed and not state.closed and len(raw) <= VALUE_MAX)
        c_options = keep = None
        silent = False
        policy = _LOAD_ONLY
        if deferred and options is not None:
            silent = options.silent
        elif options is not None and not options.is_default():
            if options.cache is not None and not isinstance(options.cache, Cache):
                raise TypeError(f"cache must be a loadstate.Cache or None, not {type(options.cache).__name__}")
            if options.cache is not None and options.cache._core is not core:
                raise InvalidArgument(InvalidArgument.code, "invalid argument",
                                      f"{what}: the cache belongs to another runtime")
            struct, keep = options_struct(options)
            if options.placeholder is not None:
                if kind is not None:
                    raise InvalidArgument(InvalidArgument.code, "invalid argument",
                                          f"{what}: a process run has no placeholder")
                try:
                    shown = state.codec.encode(options.placeholder)
                except TypeError as exc:
                    raise TypeError(f"placeholder: {exc}") from None
                buffer = create_string_buffer(shown, len(shown) or 1)
                struct.placeholder = cast(buffer, c_void_p)
                struct.placeholder_len = len(shown)
                keep = (keep, buffer)
            c_options = byref(struct)
            silent = options.silent
            if options.cache is not None:
                policy = options.policy
        load: Load[T] = Load(self, state, raw, silent, kind, policy, loader.id)
        if options is not None and options.keep_previous and not silent:
            load._keeps = True
        state.gen = load._gen = state.gen + 1
        previous_loader, state.loader_id = state.loader_id, loader.id
        waiters = state.waiters
        waiters.append(load)  # before the call: the start event may come at once
        # A cell nobody listens to has its PROGRESS events turned off by its first load (no call of its own).
        quiet = state.progress and not state.subscribers and not state.streams
        if deferred:
            core.defer(OP_LOAD, state.id, loader.id, raw, load,
                       (options.load_flags() if options is not None else 0) | (_NO_PROGRESS if quiet else 0))
            rc = 0
        else:
            if quiet:
                if c_options is None:
                    c_options = _NO_PROGRESS_OPTIONS
                else:
                    struct.flags |= _NO_PROGRESS
            if kind is None:
                rc = core.dll.lds_loadable_load(core.c_handle, state.c_id, loader._c_id, raw, len(raw), c_options)
            elif mutation is not None:
                rc = core.dll.lds_process_mutate(core.c_handle, state.c_id, kind, loader._c_id, raw, len(raw),
                                                 c_options, byref(mutation))
            else:
                rc = core.dll.lds_process_run(core.c_handle, state.c_id, kind, loader._c_id, raw, len(raw),
                                              c_options)
        del keep
        if rc >= 0 and quiet:
            state.progress = False
        if rc < 0:
            if load in waiters:
                waiters.remove(load)
            state.loader_id = previous_loader
            raise core.lib.error(rc, what)
        if len(waiters) > 1:
            _supersede(waiters, load, raw)
        self._last_loader = loader
        return load


CellT = TypeVar("CellT", bound=Cell[Any])


def _supersede(waiters: "List[Load[Any]]", load: "Load[Any]", request: bytes) -> None:
    """``load`` of ``request`` was issued: the earlier loads still waiting that asked for another request
    are superseded by it. Each ends with :class:`Superseded` once the cell's events show it (the
    superseding load's start, or an outcome of another request), or with its own outcome if that comes
    first (the library ran it before the new load)."""
    for waiter in waiters:
        if waiter is not load and waiter._asked is not None and waiter._asked != request:
            waiter._superseded_by = request


def _take_by_hand(state: _CellState) -> None:
    """``set_loaded`` / ``set_error``: the host sets the outcome of the loads still waiting (full manual
    control), whatever they asked for."""
    for waiter in state.waiters:
        waiter._asked = None


def _options(options: Optional[LoadOptions], **fields: Any) -> Optional[LoadOptions]:
    """The options of a load: ``options`` if given, else the keyword arguments (``None`` when all default)."""
    if options is not None:
        if not isinstance(options, LoadOptions):
            raise TypeError(f"options must be a loadstate.LoadOptions or None, not {type(options).__name__}")
        return options
    built = LoadOptions(**fields)
    return None if built.is_default() else built


class Loadable(Cell[T]):
    """A loadable cell of values ``T``: absent -> loading -> loaded | error.

    Create one with :meth:`Runtime.loadable`. :meth:`get` loads and returns
    the value, raising on failure; :meth:`load` starts a load and returns a
    :class:`Load`, whose settled state tells failure from success without
    raising.
    """

    async def get(self, request: Any = None, loader: Optional[Loader[Any]] = None, *, silent: bool = False,
                  share: bool = False, timeout: Optional[float] = None, interrupts: Sequence[float] = (),
                  retries: int = 0, retry_base: Optional[float] = None, retry_max: Optional[float] = None,
                  cache: Optional[Cache[Any]] = None, cache_key: Union[bytes, str, None] = None,
                  policy: CachePolicy = CachePolicy.LOAD_ONLY, fresh: Optional[float] = None,
                  max_age: Optional[float] = None, priority: int = 0, refresh_interval: Optional[float] = None,
                  poll_on_error: bool = False, keep_previous: bool = False, placeholder: Any = None,
                  refresh_on_foreground: bool = False, offline: str = "wait",
                  poll_in_background: bool = False, foreground_throttle: Optional[float] = None,
                  options: Optional[LoadOptions] = None) -> T:
        """Loads ``request`` and returns the value: ``value = await cell.get(request)``.

        Arguments are those of :meth:`load`. Cancelling the awaiting task
        cancels the load.

        Raises:
            LoadFailed: the load ended in ``ERROR``; it carries the domain, code,
                message and what the load produced (:attr:`LoadFailed.response
                <loadstate.LoadFailed.response>` for the http loader). A
                :class:`~loadstate.LoadTimedOut`, also a :class:`TimeoutError`, when
                ``timeout`` ended the load.
            Exception: a loader of this process raised it: the very exception, as
                awaiting an asyncio task raises it.
            Cancelled: the load was cancelled or reset before it ended.
            NoValue: the load's job finished without a value (a :class:`Cancelled`); the cell shows its
                state from before the load again.
            Closed: the cell or its runtime was closed first.
        """
        load = self.load(request, loader, silent=silent, share=share, timeout=timeout, interrupts=interrupts,
                         retries=retries, retry_base=retry_base, retry_max=retry_max, cache=cache,
                         cache_key=cache_key, policy=policy, fresh=fresh, max_age=max_age, priority=priority,
                         refresh_interval=refresh_interval, poll_on_error=poll_on_error,
                         keep_previous=keep_previous, placeholder=placeholder,
                         refresh_on_foreground=refresh_on_foreground, offline=offline,
                         poll_in_background=poll_in_background, foreground_throttle=foreground_throttle,
                         options=options)
        state = await load
        return load._value_of(state)

    def load(self, request: Any = None, loader: Optional[Loader[Any]] = None, *, silent: bool = False,
             share: bool = False, timeout: Optional[float] = None, interrupts: Sequence[float] = (),
             retries: int = 0, retry_base: Optional[float] = None, retry_max: Optional[float] = None,
             cache: Optional[Cache[Any]] = None, cache_key: Union[bytes, str, None] = None,
             policy: CachePolicy = CachePolicy.LOAD_ONLY, fresh: Optional[float] = None,
             max_age: Optional[float] = None, priority: int = 0, refresh_interval: Optional[float] = None,
             poll_on_error: bool = False, keep_previous: bool = False, placeholder: Any = None,
             refresh_on_foreground: bool = False, offline: str = "wait",
             poll_in_background: bool = False, foreground_throttle: Optional[float] = None,
             options: Optional[LoadOptions] = None) -> "Load[T]":
        """Starts a load: cancels the running job, emits ``LOADING`` (or, silent, the current state
        flagged ``REFRESHING``), and starts a job of ``loader`` (default: the cell's loader).

        Args:
            request: what to load, encoded with the cell's request codec (``None``: no bytes).
            loader: the loader to use instead of the cell's.
            silent: keep the current state visible while loading.
            share: wait for a running job of the same loader and request, if
                any, instead of starting one (it runs once for every cell that
                waits for it, and is cancelled when the last of them leaves it).
            timeout: seconds before the job is cancelled and the cell becomes an error ``TIMEDOUT``
                (:meth:`Load.value` and :meth:`get` raise :class:`~loadstate.LoadTimedOut`).
            interrupts: delays, in seconds, between ``INTERRUPT`` events.
            retries: extra attempts after a failure, with back-off between ``retry_base`` and ``retry_max`` s.
            cache, cache_key, policy, fresh, max_age: a :class:`~loadstate.Cache` and how to use
                it (see :class:`LoadOptions` and :class:`CachePolicy`).
            priority: where the job waits while its loader is at its limits (higher first).
            refresh_interval, poll_on_error: polling (see :class:`LoadOptions`).
            keep_previous: keep the loaded value of another request shown, flagged ``PREVIOUS``,
                while this one loads (see :class:`LoadOptions`). The load settles with this
                request's outcome, never with the previous value.
            placeholder: a value shown, flagged ``PLACEHOLDER``, while the load runs and nothing
                else would be shown; never cached (see :class:`LoadOptions`).
            refresh_on_foreground, offline, poll_in_background, foreground_throttle: the host's signals
                (see :class:`LoadOptions` and :meth:`Runtime.set_online <loadstate.Runtime.set_online>`).
            options: a :class:`LoadOptions`, instead of the keyword arguments.

        Returns:
            A :class:`Load`: ``await`` it (or call :meth:`Load.state`) for the settled state,
            or call :meth:`Load.value` for the value, raising on failure.

        Raises:
            TypeError: an argument of the wrong type (a request the request codec cannot encode).

        On the attached asyncio loop a load without options joins the batch
        of calls submitted when the loop's current callback ends (see the
        README, "asyncio"); a refusal only the library can detect then fails
        the awaited load instead of raising here.
        """
        if (options is None and cache is None and timeout is None and retry_base is None and retry_max is None
                and refresh_interval is None and fresh is None and max_age is None and cache_key is None
                and interrupts is _DEFAULT_INTERRUPTS and retries is _ZERO and priority is _ZERO
                and policy is CachePolicy.LOAD_ONLY and poll_on_error is False
                and keep_previous is False and placeholder is None
                and refresh_on_foreground is False and offline == "wait" and poll_in_background is False
                and foreground_throttle is None
                and silent.__class__ is bool and share.__class__ is bool):
            # The defaults, or flags only: no options struct at all. The arguments are compared with the
            # defaults by identity: any other value, even an equal one of another type, is checked by LoadOptions.
            flags = _FLAG_ONLY_OPTIONS[silent, share] if silent or share else None
            return self._begin(loader, request, flags, None, "load")
        return self._begin(loader, request, _options(
            options, silent=silent, share=share, timeout=timeout, interrupts=interrupts, retries=retries,
            retry_base=retry_base, retry_max=retry_max, cache=cache, cache_key=cache_key, policy=policy, fresh=fresh,
            max_age=max_age, priority=priority, refresh_interval=refresh_interval, poll_on_error=poll_on_error,
            keep_previous=keep_previous, placeholder=placeholder,
            refresh_on_foreground=refresh_on_foreground, offline=offline, poll_in_background=poll_in_background,
            foreground_throttle=foreground_throttle),
            None, "load")

    def refresh(self) -> "Load[T]":
        """Reloads the last request silently (same loader and options); the current state stays visible.

        Raises:
            WrongState: the cell was never loaded.
            NotFound: the last load's loader was freed.
        """
        state = self._state
        core = self._core
        loader_id = self._last_loader.id if self._last_loader is not None else 0
        load: Load[T] = Load(self, state, None, True, None, loader_id=loader_id)
        # A refresh asks for the request the state shows.
        load._asked = state.request
        state.gen += 1
        load._gen = state.gen
        previous_loader, state.loader_id = state.loader_id, loader_id
        state.waiters.append(load)
        rc = core.dll.lds_loadable_refresh(core.c_handle, state.id)
        if rc < 0:
            try:
                state.waiters.remove(load)
            except ValueError:
                pass
            state.loader_id = previous_loader
            raise core.lib.error(rc, "refresh")
        return load

    def set_loaded(self, value: T) -> None:
        """Cancels the running job and makes the cell ``LOADED`` with ``value`` (no request, attempt 0)."""
        state = self._state
        try:
            data = state.codec.encode(value)
        except TypeError as exc:
            raise TypeError(f"value: {exc}") from None
        state.gen += 1
        _take_by_hand(state)
        self._core.check(self._core.dll.lds_loadable_set_loaded(self._core.c_handle, state.id, data, len(data)),
                         "set_loaded")

    def set_error(self, code: int, message: Optional[str] = None) -> None:
        """Cancels the running job and makes the cell ``ERROR`` with ``code`` (domain ``HOST``) and ``message``."""
        code = integer("code", code, I32_MIN, I32_MAX)
        if message is not None and not isinstance(message, str):
            raise TypeError(f"message must be a str or None, not {type(message).__name__}")
        state = self._state
        text = None if message is None else message.replace("\0", "\\0").encode("utf-8")
        state.gen += 1
        _take_by_hand(state)
        self._core.check(self._core.dll.lds_loadable_set_error(self._core.c_handle, state.id, code, text),
                         "set_error")

    def snapshot(self) -> Event[T]:
        """The cell's latest event as the library has it now (``lds_loadable_get``).

        In POLL mode it may be ahead of the events dispatched so far; compare ``seq``.
        It may also lag a call just made: a load or cancel shows once the
        library's loop thread has run it (on the attached asyncio loop, a
        load without options is submitted when the current callback ends).
        """
        core = self._core
        state = self._state
        snap = SnapshotC()
        rc = core.dll.lds_loadable_get(core.c_handle, state.id, byref(snap))
        try:
            core.check(rc, "snapshot")
            raw = (snap.type, snap.cell, snap.seq, snap.status, snap.kind, snap.flags, 0, 0, 0, 0,
                   snap.error_domain, snap.error_code, 0, snap.attempt, snap.elapsed_ms, snap.progress_done,
                   snap.progress_total, snap.updated_at_ms)
            data = (string_at(snap.value, snap.value_len) if snap.value else None,
                    string_at(snap.request, snap.request_len) if snap.request else None,
                    string_at(snap.error_message, -1) if snap.error_message else None)
        finally:
            core.dll.lds_snapshot_clear(byref(snap))
        return state._build(raw, *data)


class Process(Cell[None]):
    """A process cell: idle -> running(kind) -> finished(kind) | failed(kind); job values are ignored.

    Create one with :meth:`Runtime.process`.
    """

    _process = True

    def run(self, kind: int = 0, request: Any = None, loader: Optional[Loader[Any]] = None, *,
            silent: bool = False, share: bool = False, timeout: Optional[float] = None,
            interrupts: Sequence[float] = (), retries: int = 0, retry_base: Optional[float] = None,
            retry_max: Optional[float] = None, priority: int = 0,
            options: Optional[LoadOptions] = None) -> "Load[None]":
        """Runs a job as process ``kind``: cancels the running job, emits ``RUNNING(kind)``, then
        ``FINISHED(kind)`` or ``FAILED(kind)``. Arguments are those of :meth:`Loadable.load`.

        ``await cell.run(...)`` gives the settled state; ``cell.run(...).value()``
        returns ``None`` once the run finished and raises :class:`LoadFailed`
        if it failed.
        """
        kind = integer("kind", kind, I32_MIN, I32_MAX)
        return self._begin(loader, request, _options(
            options, silent=silent, share=share, timeout=timeout, interrupts=interrupts, retries=retries,
            retry_base=retry_base, retry_max=retry_max, priority=priority), kind, "run")

    def mutate(self, loader: Optional[Loader[Any]] = None, request: Any = None, *,
               optimistic: Union[Mapping[Any, Any], Iterable[Tuple[Cache[Any], Any, Any]]] = (),
               cache: Optional[Cache[Any]] = None,
               invalidate: Iterable[Tuple[Cache[Any], Any]] = (), populate: bool = False, kind: int = 0,
               silent: bool = False, timeout: Optional[float] = None, retries: int = 0,
               retry_base: Optional[float] = None, retry_max: Optional[float] = None, priority: int = 0,
               options: Optional[LoadOptions] = None) -> "Load[None]":
        """Runs a write: a :meth:`run` of process ``kind`` that shows its result before it has one.

        Before the loader is called, each optimistic value is shown under its key: a memory cache
        stores it (``cache.get(key)`` returns it); a persistent or Redis cache is not written (it
        takes only confirmed values); every loadable cell whose last load used that cache and key
        shows it, ``LOADED`` and flagged :attr:`Flags.OPTIMISTIC` (:attr:`Event.optimistic`).

        If the run fails (after its retries), times out, is cancelled or reset, or the cell is
        freed, each key gets back exactly what it held before the first pending write of it (a
        memory cache's entry with its times, or none; each cell's earlier state, flagged
        :attr:`Flags.ROLLED_BACK`), unless newer data replaced it meanwhile (a load's result, a
        put, a later write's confirmed value). While another write of the key is pending, the key
        shows that write's value instead.

        If it succeeds: with ``populate`` the job's value is stored under every key, in every kind
        of cache, and shown without :attr:`Flags.OPTIMISTIC`; without it the optimistic values
        stay, confirmed. Then every ``(cache, prefix)`` of ``invalidate`` is invalidated as
        :meth:`Cache.invalidate <loadstate.Cache.invalidate>` does. All of it happens before the
        run's ``FINISHED`` or ``FAILED`` event.

        Args:
            loader, request: as for :meth:`run`.
            optimistic: ``[(cache, key, value)]``, or ``{key: value}`` with ``cache``: keys are
                ``str`` or ``bytes``, values are encoded with the cache's codec. At most
                :data:`MUTATION_KEYS_MAX`.
            cache: the cache of the keys of an ``optimistic`` mapping.
            invalidate: ``[(cache, prefix)]``, at most :data:`MUTATION_KEYS_MAX`.
            populate: store the job's value (bytes) under every key once the write succeeded.
            kind: as for :meth:`run`, as are the other arguments.

        Raises :class:`InvalidArgument` (too many keys, a cache of another runtime),
        :class:`NotFound` (a freed cache), :class:`TooBig` (a key or value over :data:`VALUE_MAX`),
        :class:`TypeError` for what is not a cache; then nothing was shown or run.
        """
        kind = integer("kind", kind, I32_MIN, I32_MAX)
        if isinstance(optimistic, Mapping):
            if cache is None:
                raise TypeError("mutate: an optimistic mapping {key: value} needs cache=")
            items: List[Tuple[Any, ...]] = [(cache, k, v) for k, v in optimistic.items()]
        else:
            items = [tuple(item) for item in optimistic]
        prefixes = [tuple(item) for item in invalidate]
        if len(items) > MUTATION_KEYS_MAX or len(prefixes) > MUTATION_KEYS_MAX:
            raise InvalidArgument(InvalidArgument.code, "invalid argument",
                                  f"mutate: more than {MUTATION_KEYS_MAX} optimistic values or prefixes")
        updates = (CacheUpdateC * max(len(items), 1))()
        for i, item in enumerate(items):
            if len(item) != 3:
                raise TypeError("optimistic items must be (cache, key, value)")
            store, key, value = item
            raw_key = _cache_key(self, store, key, "mutate")
            data = store.codec.encode(value)
            data = data if data.__class__ is bytes else bytes(data)
            updates[i] = CacheUpdateC(store.id, raw_key, len(raw_key), data, len(data))
        invalidations = (CachePrefixC * max(len(prefixes), 1))()
        for i, item in enumerate(prefixes):
            if len(item) != 2:
                raise TypeError("invalidate items must be (cache, prefix)")
            store, prefix = item
            raw_prefix = _cache_key(self, store, prefix, "mutate")
            invalidations[i] = CachePrefixC(store.id, raw_prefix, len(raw_prefix))
        mutation = MutationOptionsC(sizeof(MutationOptionsC), MUTATE_POPULATE if populate else 0,
                                    updates, len(items), invalidations, len(prefixes))
        return self._begin(loader, request, _options(
            options, silent=silent, timeout=timeout, retries=retries, retry_base=retry_base, retry_max=retry_max,
            priority=priority), kind, "mutate", mutation)


def _cache_key(cell: Cell[Any], cache: Any, key: Any, what: str) -> bytes:
    """A key or prefix of a write's cache, as bytes; the cache must belong to the cell's runtime."""
    if not isinstance(cache, Cache):
        raise TypeError(f"{what}: a cache must be a loadstate.Cache, not {type(cache).__name__}")
    if cache._core is not cell._core:
        raise InvalidArgument(InvalidArgument.code, "invalid argument", f"{what}: the cache belongs to another runtime")
    if isinstance(key, str):
        return key.encode("utf-8")
    if isinstance(key, (bytes, bytearray, memoryview)):
        return bytes(key)
    raise TypeError(f"{what}: a key must be bytes or str, not {type(key).__name__}")


class Load(Generic[T]):
    """One load (or run) of a cell of values ``T``, and its outcome.

    ``await load`` (or :meth:`state`) returns the settled state: the first
    event, from this load's start on, that is a state with no load under
    way: ``LOADED``, ``ERROR``, a state restored by a cancel (flagged
    ``CANCELLED``), ``ABSENT`` after a reset... A later load of the *same*
    request that supersedes this one continues it, so the outcome is that
    of the last load of the chain. A load of *another* request (or
    ``set_loaded`` / ``set_error``) ends it with :class:`Superseded` instead,
    raised by ``await``, :meth:`state` and :meth:`value`: a caller never
    receives the outcome of a request it did not ask for. A load whose job
    finished without a value settles with the state from before the load
    (flagged ``NO_VALUE``: it may show an earlier request's value, a kept
    previous value or nothing), which is never its answer: :meth:`value`
    raises :class:`NoValue` for it. :meth:`value`
    returns the value of the settled state and raises when there is none
    (:class:`LoadFailed`, the exception a loader raised,
    :class:`Cancelled` or :class:`NoValue`); :meth:`Loadable.get` is its
    ``async`` form.

    The exception a Python loader raised is taken onto the load when its
    failed state is delivered, matched by the job's loader and request and
    the failure's code and message; the load keeps it however many failures
    follow. Loads that share a job (``share=True``) all get the same
    exception object. Two unshared loads of the same loader and the same
    request that fail at the same time with the same message may each get
    either exception object; both are of the same type and message.

    Cancelling the task that awaits it cancels the load, unless another
    operation was issued on the cell since.

    Loads of equal requests issued while an earlier one is still starting
    cannot be told apart; they may share an outcome.
    """

    __slots__ = ("cell", "_state", "_request", "_silent", "_kind", "_policy", "_loader_id", "_gen", "_started",
                 "_done", "_event", "_error", "_raised", "_loop", "_future", "_more", "_sync", "_asked",
                 "_superseded_by", "_keeps")

    def __init__(self, cell: Cell[T], state: _CellState, request: Optional[bytes], silent: bool,
                 kind: Optional[int], policy: int = CachePolicy.LOAD_ONLY, loader_id: int = 0) -> None:
        #: The cell the load runs on.
        self.cell = cell
        self._state = state
        self._request = request
        self._silent = silent
        self._kind = kind
        self._policy = policy
        self._loader_id = loader_id
        self._gen = 0
        self._started = False
        self._done = False
        self._event: Optional[Event[T]] = None
        self._error: Optional[BaseException] = None
        # The exception a loader raised for the settled ERROR (FAILED) state, taken when it was delivered.
        self._raised: Optional[BaseException] = None
        # The first awaiting asyncio future and its loop; further ones in _more.
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._future: Optional[asyncio.Future[None]] = None
        self._more: Optional[List[Tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]]] = None
        self._sync: Optional[threading.Event] = None
        # The request the caller asked for (None: not known, never superseded), and the request of a
        # later load of the cell that supersedes this one once the events show it (see _supersede).
        self._asked: Optional[bytes] = request
        self._superseded_by: Optional[bytes] = None
        # keep_previous: the cell may show the value of another request while this load runs.
        self._keeps = False

    def _feed(self, raw: Tuple[Any, ...], request: Optional[bytes], state: _CellState,
              STATE: int = EventType.STATE.value, LOADING: int = Status.LOADING.value,
              RUNNING: int = Status.RUNNING.value, CANCELLED: int = Flags.CANCELLED.value,
              FROM_CACHE: int = Flags.FROM_CACHE.value, REFRESHING: int = Flags.REFRESHING.value,
              UNDER_WAY: int = (Flags.PARTIAL | Flags.REFRESHING).value, ERROR: int = Status.ERROR.value,
              FAILED: int = Status.FAILED.value, HOST: int = Domain.HOST.value, PARTIAL: int = Flags.PARTIAL.value,
              ABSENT: int = Status.ABSENT.value, IDLE: int = Status.IDLE.value,
              KEPT: int = (Flags.PREVIOUS | Flags.PLACEHOLDER).value, PLACEHOLDER: int = Flags.PLACEHOLDER.value,
              PREVIOUS: int = Flags.PREVIOUS.value, NO_VALUE: int = Flags.NO_VALUE.value) -> None:
        """Runs on the delivery thread for every event of the cell while the load waits.

        The hot path of every load: the header's values come in as plain
        ints bound once (defaults of parameters no caller passes, read as
        locals), because an operation on an IntFlag member costs about 1 µs
        and reading an enum member about 80 ns, against about 12 ns for an
        int (keyword-only defaults would cost 100 ns a call more).
        """
        if raw[0] != STATE:
            return
        status = raw[3]
        flags = raw[5]
        if not self._started:
            # Wait for this load's own start, skipping events still in flight from before it.
            if flags & CANCELLED:
                return
            if self._superseded_by is not None and (request or b"") == self._superseded_by \
                    and (request or b"") != self._asked:
                # The superseding load began (or ended) before this one was seen to start.
                self._supersede(request, state)
                return
            if flags & KEPT and raw[13] == 1 and not self._silent and self._kind is None:
                # A non-silent start that shows a previous value (with its own request) or the placeholder.
                if (flags & PREVIOUS and self._keeps) or (
                        flags & PLACEHOLDER and (self._request is None or request == self._request)):
                    self._started = True
                return
            if self._policy and (flags & FROM_CACHE or raw[13] == 0):
                self._served_from_cache(raw, request, state)
                return
            if raw[13] != 1:
                return
            if self._silent:
                if not flags & REFRESHING:
                    return
            elif (status != LOADING and status != RUNNING) or (
                    self._request is not None and request != self._request) or (
                    self._kind is not None and raw[4] != self._kind):
                return
            self._started = True
            return
        asked = self._asked
        if status == LOADING or status == RUNNING or flags & UNDER_WAY:
            # The start, or a partial value, of a load of another request: this load was superseded. (A
            # silent start shows the current state, whose request says nothing of the new load's.)
            if asked is not None and (request or b"") != asked and (flags & PARTIAL or not flags & REFRESHING):
                self._supersede(request, state)
            return
        if flags & NO_VALUE:
            # This load's job finished without a value: the state from before the load is back, whatever
            # request it answers. The load settles with it; its value() raises NoValue.
            try:
                state.waiters.remove(self)
            except ValueError:
                return
            self._resolve(state.event(), None)
            return
        if self._keeps and asked is not None and (request or b"") != asked and not flags & CANCELLED \
                and status != ABSENT and status != IDLE:
            # With keep_previous, a settled state of another request (an earlier load's outcome still in
            # flight when this one began) is never this load's answer: it waits for its own request's.
            return
        if self._superseded_by is not None and asked is not None and (request or b"") != asked \
                and not flags & CANCELLED and status != ABSENT and status != IDLE:
            # The outcome of another request, after a later load of another request was issued: never this
            # load's value. (Without one, a state of another request is this load's own outcome: a job that
            # finished without a value restores the state before the load.)
            self._supersede(request, state)
            return
        try:
            state.waiters.remove(self)
        except ValueError:
            return
        event = state.event()
        if (status == ERROR or status == FAILED) and raw[10] == HOST:
            self._take_raised(state, request or b"", raw[11], event.error_message)
        self._resolve(event, None)

    def _supersede(self, request: Optional[bytes], state: _CellState) -> None:
        """Ends the load with :class:`Superseded`, naming the request that replaced it."""
        try:
            state.waiters.remove(self)
        except ValueError:
            return
        raw = request or b""
        if state.request_codec is BYTES:
            shown: Any = raw
        else:
            shown = state._decode(state.request_codec, raw, "request") if raw else None
        detail = f"the load was superseded by a load of another request ({shown!r}) before it ended"
        self._resolve(None, Superseded(Superseded.code, "superseded", detail, shown))

    def _take_raised(self, state: _CellState, request: bytes, code: int, message: Optional[str]) -> None:
        """Takes the exception a loader raised for the failed state being delivered, if one is kept.

        The state's request, code and message, and the loader of this load,
        or else that of the latest load issued on the cell (a load that
        superseded this one ends it with its own outcome), name the job.
        """
        core = state.core
        raised = core.raised(self._loader_id, request, code, message)
        if raised is None and state.loader_id != self._loader_id:
            raised = core.raised(state.loader_id, request, code, message)
        self._raised = raised

    def _refused(self, code: int) -> None:
        """A deferred load the library refused: the load fails with the error."""
        state = self._state
        try:
            state.waiters.remove(self)
        except ValueError:
            pass
        self._resolve(None, state.core.lib.error(code, "load"))

    def _served_from_cache(self, raw: Tuple[Any, ...], request: Optional[bytes], state: _CellState) -> None:
        """A load with a cache may begin with the cached entry (or a cache-only miss) instead of LOADING.

        A cache-only load ends at once in ``ERROR``: ``NOT_FOUND`` on a miss, or an error of the
        ``REDIS`` domain when its Redis cache cannot answer."""
        if self._request is not None and request != self._request:
            return
        # A hit: a loaded value, or a stored failure an http cache reuses (an HTTP 404), from the cache.
        hit = (raw[3] == Status.LOADED or raw[3] == Status.ERROR) and raw[5] & Flags.FROM_CACHE.value
        miss = raw[3] == Status.ERROR and (raw[10] == Domain.LOADSTATE and raw[11] == Code.ENOENT
                                           or raw[10] == Domain.REDIS)
        if hit and self._policy == CachePolicy.CACHE_THEN_LOAD:
            self._started = True       # a silent load revalidates it: its outcome settles the load
        elif (hit and self._policy in (CachePolicy.CACHE_FIRST, CachePolicy.CACHE_ONLY)) or (
                miss and self._policy == CachePolicy.CACHE_ONLY):
            try:
                state.waiters.remove(self)
            except ValueError:
                return
            self._resolve(state.event(), None)

    def _resolve(self, event: Optional[Event[T]], error: Optional[BaseException]) -> None:
        with _WAIT_LOCK:
            if self._done:
                return
            self._event = event
            self._error = error
            self._done = True
            loop, future, more, sync = self._loop, self._future, self._more, self._sync
        if future is not None and loop is not None:
            core = self._state.core
            if loop is core.loop and core._reader_thread == get_ident():
                # In the attached loop's reader (call_in_loop's first case, inline).
                if not future.done():
                    future.set_result(None)
            else:
                core.call_in_loop(loop, _wake, future)
            if more:
                for loop, future in more:
                    core.call_in_loop(loop, _wake, future)
        if sync is not None:
            sync.set()

    def done(self) -> bool:
        """Whether the load has settled (or its cell closed)."""
        return self._done

    def _outcome(self) -> Event[T]:
        if self._error is not None:
            raise self._error
        assert self._event is not None
        return self._event

    def _value_of(self, state: Event[T]) -> T:
        """The value of the settled ``state``; raises what a caller of :meth:`value` gets instead."""
        raised = self._raised
        if raised is not None:
            raise raised
        if state.no_value:
            asked = self._asked
            shown: Any = asked
            codec = self._state.request_codec
            if asked and codec is not BYTES:
                shown = self._state._decode(codec, asked, "request")
            raise NoValue(NoValue.code, "no value", "the load's job finished without a value: the cell shows "
                          "its state from before the load again, not an answer to this request", shown)
        state.raise_for_error()
        if state.cancelled or state.status == Status.ABSENT or state.status == Status.IDLE:
            raise Cancelled(Cancelled.code, "cancelled", "the load was cancelled or reset before it ended")
        return state.value  # type: ignore[return-value]

    def state(self, timeout: Optional[float] = None) -> Event[T]:
        """Blocks until the load settles and returns the settled state, whatever it is.

        In POLL mode with no asyncio loop (or trio run) attached, this thread
        runs the callbacks while it waits.

        Raises:
            TimedOut: ``timeout`` seconds passed first (a :class:`TimeoutError`).
            Closed: the cell or runtime was closed first.
            WrongState: called on the asyncio loop (or in the trio run) that dispatches the events (``await``
                it instead).
        """
        timeout = seconds("timeout", timeout)
        if self._done:
            return self._outcome()
        core = self._state.core
        deadline = None if timeout is None else time.monotonic() + timeout
        attached = core.trio
        if attached is not None and attached.host.running_here():
            raise WrongState(WrongState.code, "not allowed in the current state",
                             "waiting would block the trio run that delivers the events; await the load")
        if (core.delivery == Delivery.POLL and core.loop is None and (attached is None or attached.ended)
                and not core.closed):
            while not self._done:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    break
                try:
                    core.poll(remaining)
                except WrongState:  # another thread dispatches: wait for its wake-up instead
                    self._wait_sync(0.05 if remaining is None else min(remaining, 0.05))
                except Closed:
                    break
        elif core.loop is not None:
            try:
                running = asyncio.get_running_loop()
            except RuntimeError:
                running = None
            if running is core.loop:
                raise WrongState(WrongState.code, "not allowed in the current state",
                                 "waiting would block the event loop that delivers the events; await the load")
            self._wait_sync(timeout)
        else:
            self._wait_sync(timeout)
        if not self._done:
            raise TimedOut(TimedOut.code, "timed out", f"the load did not settle within {timeout} s")
        return self._outcome()

    def value(self, timeout: Optional[float] = None) -> T:
        """Blocks until the load settles and returns its value (``None`` for a finished run).

        Raises:
            LoadFailed: the load ended in ``ERROR`` (``FAILED``); it carries the domain, code,
                message and what the load produced (the http loader: :attr:`LoadFailed.response
                <loadstate.LoadFailed.response>`). A :class:`~loadstate.LoadTimedOut`, also a
                :class:`TimeoutError`, when the load's own ``timeout`` ended it.
            Exception: a loader of this process raised it: the very exception, with its traceback.
            Cancelled: the load was cancelled or reset before it ended.
            NoValue: the load's job finished without a value (a :class:`Cancelled`).
            TimedOut: ``timeout`` seconds passed first.
            Closed: the cell or runtime was closed first.
        """
        return self._value_of(self.state(timeout))

    def result(self, timeout: Optional[float] = None) -> Event[T]:
        """Deprecated: the settled state, as :meth:`state` returns it.

        Unlike :meth:`concurrent.futures.Future.result` it does not raise for
        a failed load; use :meth:`value` for that, or :meth:`state`.
        """
        warnings.warn("Load.result() returns the settled state without raising: use Load.state(), "
                      "or Load.value() for the value", DeprecationWarning, stacklevel=2)
        return self.state(timeout)

    def _wait_sync(self, timeout: Optional[float]) -> None:
        with _WAIT_LOCK:
            if self._done:
                return
            if self._sync is None:
                self._sync = threading.Event()
            sync = self._sync
        sync.wait(timeout)

    def cancel(self) -> bool:
        """Cancels the load if it has not settled and no other operation was issued on the cell since.

        Returns whether a cancel was sent.
        """
        state = self._state
        if self._done or state.closed or state.gen != self._gen or state.core.closed:
            return False
        try:
            self.cell.cancel()
        except Closed:
            return False
        return True

    def __await__(self) -> Generator[Any, None, Event[T]]:
        """Waits for the settled state; cancelling the awaiting task cancels the load.

        Under asyncio, or under trio (see :meth:`_await_trio`); anyio runs on either.
        """
        if not self._done:
            # The attached loop when there is one: asyncio itself refuses to
            # await a future of another loop, so a mistake cannot go unseen.
            core = self._state.core
            loop = core.loop
            if loop is None:
                try:
                    loop = asyncio.get_running_loop()
                except RuntimeError:
                    return (yield from self._await_trio())
            if core.loop is None and core.delivery == Delivery.POLL and not core.dispatched:
                _warn_unattached()
            future: asyncio.Future[None] = loop.create_future()
            with _WAIT_LOCK:
                pending = not self._done
                if pending:
                    if self._future is None:
                        self._loop = loop
                        self._future = future
                    elif self._more is None:
                        self._more = [(loop, future)]
                    else:
                        self._more.append((loop, future))
            if pending:
                try:
                    yield from future
                except asyncio.CancelledError:
                    self.cancel()
                    raise
        return self._outcome()

    def _await_trio(self) -> Generator[Any, None, Event[T]]:
        """``await`` outside asyncio: under trio, the task parks on a :class:`~loadstate._trio.Waiter` that
        :meth:`_resolve` wakes as it wakes a future; cancelling the task (a trio or anyio cancel scope)
        cancels the load."""
        host = _trio.current_host()
        if host is None:
            raise _trio.no_library("awaiting a load")
        core = self._state.core
        if (core.trio is None or core.trio.ended) and core.loop is None and core.delivery == Delivery.POLL \
                and not core.dispatched:
            _warn_unattached()
        waiter = host.create_future()
        with _WAIT_LOCK:
            pending = not self._done
            if pending:
                if self._future is None:
                    self._loop = host  # type: ignore[assignment]
                    self._future = waiter  # type: ignore[assignment]
                elif self._more is None:
                    self._more = [(host, waiter)]  # type: ignore[list-item]
                else:
                    self._more.append((host, waiter))  # type: ignore[arg-type]
        if pending:
            try:
                yield from waiter.__await__()
            except host.Cancelled:
                self.cancel()
                raise
        return self._outcome()

    def __repr__(self) -> str:
        state = "done" if self._done else ("started" if self._started else "pending")
        return f"<Load cell={self._state.id} {state}>"


# Where the package's modules are: a warning names the first caller outside it.
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def _warn_unattached() -> None:
    """Awaiting a load of a ``POLL`` runtime that nothing dispatches would wait forever: says why."""
    level, frame = 1, sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        level, frame = level + 1, frame.f_back  # type: ignore[assignment]
    warnings.warn("awaiting a load of a Delivery.POLL runtime that is not attached to an asyncio loop (or trio "
                  "run) and has never been dispatched: its events arrive only through rt.poll() or rt.dispatch(); "
                  "use 'async with Runtime(...)' or rt.attach() in asyncio or trio code", RuntimeWarning,
                  stacklevel=level + 1)


def _wake(future: "asyncio.Future[None]") -> None:
    if not future.done():
        future.set_result(None)


class EventStream(Generic[T]):
    """An async iterator over a cell's events; see :meth:`Cell.events`.

    Use it with ``async for`` or ``anext()``, and ``async with`` to stop it
    on exit. It belongs to the asyncio loop or trio run it was made in.
    """

    def __init__(self, state: _CellState, maxlen: Optional[int] = None, progress: bool = True) -> None:
        if maxlen is not None:
            maxlen = integer("maxlen", maxlen, 0, None)
        loop: Union[asyncio.AbstractEventLoop, _trio.Host, None]
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = _trio.current_host()  # a trio run stands in for the loop (see loadstate._trio)
            if loop is None:
                raise _trio.no_library("an event stream") from None
        self._loop = loop
        self._queue: Deque[Any] = collections.deque(maxlen=maxlen)
        self._waiter: Union[asyncio.Future[None], _trio.Waiter, None] = None
        self._ended = False
        self._state = state
        #: Whether the stream gets PROGRESS events.
        self.progress = flag("progress", progress)
        if state.closed:
            self._queue.append(_END)
        else:
            state.add_stream(self)

    def _push(self, item: Any) -> None:
        self._state.core.call_in_loop(self._loop, self._push_here, item)

    def _push_here(self, item: Any) -> None:
        if self._ended:
            return
        self._queue.append(item)
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def __aiter__(self) -> "EventStream[T]":
        return self

    async def __anext__(self) -> Event[T]:
        while not self._queue:
            if self._ended:
                raise StopAsyncIteration
            self._waiter = self._loop.create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        item: Event[T] = self._queue.popleft()
        if item is _END:
            self._finish()
            raise StopAsyncIteration
        return item

    def _finish(self) -> None:
        self._ended = True
        self._queue.clear()
        self._state.drop_stream(self)

    async def aclose(self) -> None:
        """Stops the stream: no more events are queued and the iteration ends."""
        self._finish()
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def __aenter__(self) -> "EventStream[T]":
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.aclose()
