"""Pages cells: infinite (paginated) loads, each page a job of its own.

A :class:`PagesCell` holds a list of pages. :meth:`PagesCell.load` drops
them and loads the first page; :meth:`PagesCell.load_next` and
:meth:`PagesCell.load_previous` load one more page at either end, with the
cursor the page at that end returned. Each page is a load of its own, with
the options of the last :meth:`PagesCell.load`: timeouts, retries,
``share``, caches and priorities apply per page.

The loader of a pages cell receives, as each page's request, an encoding
of (request, cursor, direction) that :class:`PageRequest` reads, and
completes the page with :func:`succeed_page` (the value and the cursors of
the pages after and before it). :func:`page_loader` does both around a
function that takes a :class:`PageRequest` and returns a :class:`Page` or
a ``(value, next_cursor, previous_cursor)`` tuple.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
import weakref
from ctypes import byref, c_size_t, c_uint64, sizeof, string_at
from typing import TYPE_CHECKING, Any, Callable, Generator, Generic, List, NamedTuple, Optional, Tuple, TypeVar

from . import _core
from ._checks import handle_name, integer
from ._library import LoadOptionsC, PageRequestC, PagesOptionsC, SnapshotC, load_library
from .cells import options_struct
from .codec import BYTES, Codec
from .enums import PAGES_MAX, Code, EventType, Flags, Status
from .errors import Error, Superseded
from .loaders import Job, Loader
from .types import NO_LIMITS, Event, Limits, LoadOptions, event_from_raw

if TYPE_CHECKING:
    from .runtime import Runtime

__all__ = ["PagesCell", "PagesLoad", "PageRequest", "Page", "page_loader", "succeed_page"]

T = TypeVar("T")

_PREVIOUS = Flags.PAGE_PREVIOUS.value
_DROPPED = Flags.PAGES_DROPPED.value
_LOAD_START = Flags.PAGES_LOAD.value
_UNSETTLED = Flags.REFRESHING.value | Flags.PARTIAL.value


class PageRequest(NamedTuple):
    """One page's request, as a pages cell's loader receives it.

    Attributes:
        request: the request given to :meth:`PagesCell.load`.
        cursor: the cursor of the page asked for (``None`` for the first page).
        direction: 0 for the first page, 1 for the next one, -1 for the previous one.
    """

    request: bytes
    cursor: Optional[bytes]
    direction: int

    @classmethod
    def decode(cls, raw: bytes) -> "PageRequest":
        """Reads the request of a page's job (``Job.raw_request``); raises :class:`~loadstate.InvalidArgument`
        for bytes that are not a page request, :class:`~loadstate.TooBig` for a cursor past
        :data:`~loadstate.CURSOR_MAX`."""
        lib = load_library()
        out = PageRequestC()
        rc = lib.dll.lds_page_request_decode(raw, len(raw), byref(out))
        if rc < 0:
            raise lib.error(rc, "not a page request")
        request = string_at(out.request, out.request_len) if out.request_len else b""
        cursor = string_at(out.cursor, out.cursor_len) if out.cursor is not None else None
        return cls(request, cursor, out.direction)


class Page(NamedTuple):
    """What a page loader returns: the page's value and the cursors of the pages after and before it
    (``None``: no page that way, the end of the list)."""

    value: Any
    next_cursor: Optional[bytes] = None
    previous_cursor: Optional[bytes] = None


def _cursor(name: str, cursor: Any) -> Optional[bytes]:
    if cursor is None:
        return None
    if isinstance(cursor, str):
        cursor = cursor.encode()
    if not isinstance(cursor, (bytes, bytearray)):
        raise TypeError(f"{name} must be bytes, str or None, not {type(cursor).__name__}")
    return bytes(cursor)


def succeed_page(job: Job, value: Any, next_cursor: Any = None, previous_cursor: Any = None,
                 codec: Codec[Any] = BYTES) -> None:
    """Ends a page's job with its value (encoded with ``codec``) and the cursors of the pages after and before it
    (``bytes`` or ``str``; ``None``: no page that way). A cursor longer than :data:`~loadstate.CURSOR_MAX` bytes
    fails the page (its state is an ``ERROR`` ``LDS_ETOOBIG``) and raises :class:`~loadstate.TooBig`."""
    data = codec.encode(value)
    after, before = _cursor("next_cursor", next_cursor), _cursor("previous_cursor", previous_cursor)
    core = job._core
    rc = core.dll.lds_job_succeed_page(core.c_handle, job.id, data, len(data), after,
                                       len(after) if after is not None else 0, before,
                                       len(before) if before is not None else 0)
    if rc == Code.ETOOBIG:
        job._ended_by_us()
    job._call(rc, "succeed_page")
    job._ended_by_us()


def _parts(result: Any) -> Tuple[Any, Any, Any]:
    if isinstance(result, tuple):
        if not 1 <= len(result) <= 3:
            raise TypeError("a page loader returns a Page, a value, or (value, next_cursor, previous_cursor)")
        padded = tuple(result) + (None,) * (3 - len(result))
        return padded[0], padded[1], padded[2]
    return result, None, None


def page_loader(runtime: "Runtime", fn: Callable[[PageRequest], Any], *, codec: Codec[Any] = BYTES,
                inline: bool = False, limits: Limits = NO_LIMITS, name: Optional[str] = None) -> Loader[Any]:
    """A loader for pages cells around ``fn``, which takes a :class:`PageRequest` and returns a :class:`Page`,
    a ``(value, next_cursor, previous_cursor)`` tuple, or a value alone (a page with no cursor). ``fn`` may be
    ``async def`` (it then runs on the running asyncio loop). An exception fails the page as with any loader.
    Values are encoded with ``codec``; ``inline``, ``limits`` and ``name`` are as for :meth:`Runtime.loader`."""
    if not callable(fn):
        raise TypeError(f"fn must be a callable taking a loadstate.PageRequest, not {type(fn).__name__}")

    def finish(job: Job, result: Any) -> None:
        value, after, before = _parts(result)
        succeed_page(job, value, after, before, codec)

    if inspect.iscoroutinefunction(fn):
        async def run_async(job: Job) -> None:
            finish(job, await fn(PageRequest.decode(job.raw_request)))
        return Loader(runtime, run_async, codec=codec, limits=limits, name=name)

    def run(job: Job) -> None:
        finish(job, fn(PageRequest.decode(job.raw_request)))
    return Loader(runtime, run, codec=codec, inline=inline, limits=limits, name=name)


class PagesLoad(Generic[T]):
    """One operation of a :class:`PagesCell` under way: awaitable (``await cell.load_next()``), or waited for with
    :meth:`state`. Both give the settled :class:`Event` of the page the operation ended with (an ``ERROR`` event
    when it failed; ``ABSENT`` flagged ``CANCELLED`` when it was cancelled); they raise
    :class:`~loadstate.Closed` if the cell or runtime closed first, and :class:`~loadstate.Superseded` (a
    :class:`~loadstate.Cancelled`) when a later :meth:`PagesCell.load` replaced the pages it was about before it
    ended: an operation never ends with a page of another load (the events' ``PAGES_LOAD`` flag tells the loads
    apart)."""

    def __init__(self, what: str, index: int, generation: int) -> None:
        self._what = what
        #: The index the operation waits for (see the matching rules in PagesCell._deliver).
        self._index = index
        #: The load of the cell (1 for its first load() ...) whose pages the operation is about: its own for a
        #: load(), the latest one asked for otherwise. Matched with the loads the events show (PAGES_LOAD).
        self._generation = generation
        self._done = threading.Event()
        self._event: Optional[Event[T]] = None
        self._error: Optional[BaseException] = None
        self._futures: List[Tuple[asyncio.AbstractEventLoop, "asyncio.Future[None]"]] = []
        self._lock = threading.Lock()

    def _resolve(self, event: Optional[Event[T]], error: Optional[BaseException]) -> None:
        with self._lock:
            if self._done.is_set():
                return
            self._event, self._error = event, error
            self._done.set()
            futures, self._futures = self._futures, []
        for loop, future in futures:
            loop.call_soon_threadsafe(_wake, future)

    def done(self) -> bool:
        """Whether the operation has ended."""
        return self._done.is_set()

    def _outcome(self) -> Event[T]:
        if self._error is not None:
            raise self._error
        assert self._event is not None
        return self._event

    def state(self, timeout: Optional[float] = None) -> Event[T]:
        """Waits (blocking) for the settled event; raises :class:`TimeoutError` after ``timeout`` seconds."""
        if not self._done.wait(timeout):
            raise TimeoutError(f"{self._what} did not end within {timeout} s")
        return self._outcome()

    def __await__(self) -> Generator[Any, None, Event[T]]:
        if not self._done.is_set():
            loop = asyncio.get_running_loop()
            future: "asyncio.Future[None]" = loop.create_future()
            with self._lock:
                pending = not self._done.is_set()
                if pending:
                    self._futures.append((loop, future))
            if pending:
                yield from future.__await__()
        return self._outcome()

    def __repr__(self) -> str:
        return f"<PagesLoad {self._what} {'done' if self.done() else 'pending'}>"


def _wake(future: "asyncio.Future[None]") -> None:
    if not future.done():
        future.set_result(None)


def _terminal(raw: Tuple[Any, ...]) -> bool:
    return raw[0] == EventType.STATE and raw[3] != Status.LOADING and not raw[5] & _UNSETTLED


class _PagesState:
    """The delivery side of a pages cell (registered with the runtime's cells by id)."""

    def __init__(self, core: _core.Core, codec: Codec[Any]) -> None:
        self.core = core
        self.codec = codec
        self.id = 0
        self.closed = False
        self.subscribers: Tuple[Callable[[Event[Any]], Any], ...] = ()
        self.waiters: List[PagesLoad[Any]] = []
        self.lock = threading.Lock()
        # The loads asked for, and those the events showed the start of (one PAGES_LOAD event each, in order).
        self.loads_asked = 0
        self.loads_shown = 0

    def build_event(self, raw: Tuple[Any, ...], value: Optional[bytes], request: Optional[bytes],
                    message: Optional[bytes]) -> Event[Any]:
        decoded: Any = value
        if value is not None and self.codec is not BYTES:
            try:
                decoded = self.codec.decode(value)
            except Exception as exc:  # noqa: BLE001 - reported; the event keeps the bytes
                self.core.report(exc, f"decoding a page of pages cell {self.id} with the {self.codec.name} codec")
        return event_from_raw(self.id, raw, decoded, request, message)

    def count(self) -> int:
        out = c_size_t()
        rc = self.core.dll.lds_pages_count(self.core.c_handle, self.id, byref(out))
        return out.value if rc == 0 else 0

    def deliver(self, raw: Tuple[Any, ...]) -> None:
        if self.closed:
            return
        value = _core.memory_at(raw[6])[:raw[7]] if raw[6] else None
        request = _core.memory_at(raw[8])[:raw[9]] if raw[8] else None
        message = string_at(raw[12], -1) if raw[12] else None
        event = self.build_event(raw, value, request, message)  # type: ignore[arg-type]
        for callback in self.subscribers:
            try:
                callback(event)
            except BaseException as exc:  # noqa: BLE001
                self.core.report(exc, f"the event callback {getattr(callback, '__qualname__', callback)!r}")
        kind, flags = raw[4], raw[5]
        with self.lock:
            if flags & _LOAD_START:
                self.loads_shown += 1
            shown = self.loads_shown
            waiters = list(self.waiters) if self.waiters else []
        for load in waiters:
            if load._generation < shown:
                # A later load dropped the pages this operation was about: it never ends with that load's pages.
                with self.lock:
                    if load in self.waiters:
                        self.waiters.remove(load)
                load._resolve(None, Superseded(Superseded.code, "superseded",
                                               f"{load._what}: a later load of the pages cell replaced it"))
        if not _terminal(raw):
            return
        for load in waiters:
            what, index = load._what, load._index
            if load._generation != shown:
                # Superseded above, or about a load whose first event is still to come: not this event.
                continue
            if what == "load_previous":
                matched = bool(flags & _PREVIOUS) and kind == 0
            elif flags & _PREVIOUS:
                matched = False
            elif what == "load":
                matched = kind == 0
            elif what == "load_next":
                matched = kind == index or (kind == index - 1 and bool(flags & _DROPPED))
            else:  # refresh: page after page, until one fails, changes its cursor or is the last
                matched = False
                if kind == index:
                    if raw[3] == Status.LOADED and not flags & _DROPPED and kind + 1 < self.count():
                        load._index = index + 1
                    else:
                        matched = True
            if matched:
                with self.lock:
                    if load in self.waiters:
                        self.waiters.remove(load)
                load._resolve(event, None)

    def end(self, error: Error) -> None:
        self.closed = True
        with self.lock:
            waiters, self.waiters = self.waiters, []
        for load in waiters:
            load._resolve(None, error)

    def runtime_closed(self) -> None:
        self.end(self.core.lib.error(Code.ECLOSED, f"pages cell {self.id}: the runtime was closed"))


def _free_pages(core: _core.Core, state: _PagesState) -> None:
    """Finalizer of a pages cell dropped without being closed."""
    if state.closed or core.closed:
        return
    core.cells.pop(state.id, None)
    core.dll.lds_pages_free(core.c_handle, state.id)
    state.end(core.lib.error(Code.ECLOSED, f"pages cell {state.id} was closed"))


class PagesCell(Generic[T]):
    """A cell holding a list of pages (``lds_pages_new``): an infinite, paginated load.

    Args:
        runtime: the runtime that owns the cell.
        loader: the loader of :meth:`load` when it is given none (see :func:`page_loader`).
        max_pages: the page cap (0: :data:`~loadstate.PAGES_MAX`); with the cap reached, a new page drops the page
            at the other end.
        codec: how page values are decoded (default: the loader's codec, else bytes).
        on_event: called with every :class:`Event` of the cell, on the delivery thread: ``kind`` is the index of
            the page the event is about, ``value`` that page's value; ``flags`` may carry ``PAGE_PREVIOUS`` and
            ``PAGES_DROPPED``.
        name: a name the inspector shows.

    Every operation is asked of the library's loop thread and returns a :class:`PagesLoad` at once.
    """

    def __init__(self, runtime: "Runtime", loader: Optional[Loader[Any]] = None, *, max_pages: int = 0,
                 codec: Optional[Codec[Any]] = None, on_event: Optional[Callable[[Event[T]], Any]] = None,
                 name: Optional[str] = None) -> None:
        c_name = handle_name(name)
        if loader is not None and not isinstance(loader, Loader):
            raise TypeError(f"loader must be a loadstate.Loader or None, not {type(loader).__name__}")
        if on_event is not None and not callable(on_event):
            raise TypeError(f"on_event must be callable or None, not {type(on_event).__name__}")
        max_pages = integer("max_pages", max_pages, 0, PAGES_MAX)
        core = runtime._core
        self._runtime = runtime
        self._core = core
        self._loader = loader
        state = _PagesState(core, codec or (loader.codec if loader is not None else BYTES))
        if on_event is not None:
            state.subscribers = (on_event,)
        out = c_uint64()
        options = PagesOptionsC(sizeof(PagesOptionsC), _core.event_callback, core.token, c_name, max_pages)
        core.check(core.dll.lds_pages_new(core.c_handle, byref(options), byref(out)), "lds_pages_new")
        state.id = out.value
        core.cells[state.id] = state
        self._state = state
        self.name: Optional[str] = name if c_name is not None else None
        self._finalizer = weakref.finalize(self, _free_pages, core, state)

    @property
    def id(self) -> int:
        """The cell's id in its runtime."""
        return self._state.id

    @property
    def closed(self) -> bool:
        """Whether the cell was closed (or its runtime)."""
        return self._state.closed

    def _call(self, rc: int, what: str) -> None:
        if rc < 0:
            raise self._core.lib.error(rc, f"pages cell {self.id}: {what}")

    def _start(self, what: str, index: int, call: Callable[[], int]) -> PagesLoad[T]:
        state = self._state
        with state.lock:
            if what == "load":
                state.loads_asked += 1
            load: PagesLoad[T] = PagesLoad(what, index, state.loads_asked)
            state.waiters.append(load)
        rc = call()
        if rc < 0:
            with state.lock:
                state.waiters.remove(load)
                if what == "load":
                    # Refused before it was queued: the library runs no such load.
                    state.loads_asked -= 1
            self._call(rc, what)
        return load

    def load(self, request: Any = b"", loader: Optional[Loader[Any]] = None, *,
             options: Optional[LoadOptions] = None) -> PagesLoad[T]:
        """Drops the pages and loads the first one (``lds_pages_load``) with ``loader`` (default: the cell's),
        the request encoded with the loader's request codec, and ``options`` (used for every later page of this
        load). The :class:`PagesLoad` settles with the first page."""
        loader = loader if loader is not None else self._loader
        if loader is None:
            raise TypeError("load() needs a loader: give one here or when making the cell")
        raw = loader.request_codec.encode(request) if request is not None else b""
        struct: Optional[LoadOptionsC] = None
        keep: Any = None
        if options is not None:
            struct, keep = options_struct(options)
        core = self._core
        load = self._start("load", 0, lambda: core.dll.lds_pages_load(
            core.c_handle, self.id, loader.id, raw, len(raw), byref(struct) if struct is not None else None))
        del keep
        return load

    def load_next(self) -> PagesLoad[T]:
        """Loads the page after the last one (``lds_pages_load_next``); raises :class:`~loadstate.WrongState` at
        the end of the list or before a page loaded. Asked again while it loads, nothing new starts."""
        core = self._core
        return self._start("load_next", len(self), lambda: core.dll.lds_pages_load_next(core.c_handle, self.id))

    def load_previous(self) -> PagesLoad[T]:
        """Loads the page before the first one (``lds_pages_load_previous``), inserted at index 0; raises
        :class:`~loadstate.WrongState` when the first page has no previous cursor."""
        core = self._core
        return self._start("load_previous", 0,
                           lambda: core.dll.lds_pages_load_previous(core.c_handle, self.id))

    def refresh(self) -> PagesLoad[T]:
        """Reloads the pages silently, in order, each only once the one before it has loaded; stops at a
        changed cursor (dropping the pages after it), a failure or the end (``lds_pages_refresh``). The
        :class:`PagesLoad` settles with the page the refresh ended at."""
        core = self._core
        return self._start("refresh", 0, lambda: core.dll.lds_pages_refresh(core.c_handle, self.id))

    def cancel(self) -> None:
        """Cancels every page load under way (``lds_pages_cancel``)."""
        self._call(self._core.dll.lds_pages_cancel(self._core.c_handle, self.id), "cancel")

    def reset(self) -> None:
        """Cancels every page load and drops all pages (``lds_pages_reset``)."""
        self._call(self._core.dll.lds_pages_reset(self._core.c_handle, self.id), "reset")

    def __len__(self) -> int:
        """The number of pages in the list (not counting one still loading at either end)."""
        out = c_size_t()
        self._call(self._core.dll.lds_pages_count(self._core.c_handle, self.id, byref(out)), "count")
        return out.value

    def page(self, index: int) -> Event[T]:
        """The latest state of the page at ``index`` (``lds_pages_get``); :class:`~loadstate.NotFound` past the
        end."""
        core = self._core
        snap = SnapshotC()
        rc = core.dll.lds_pages_get(core.c_handle, self.id, index, byref(snap))
        try:
            self._call(rc, f"page {index}")
            raw = (snap.type, snap.cell, snap.seq, snap.status, snap.kind, snap.flags, 0, 0, 0, 0,
                   snap.error_domain, snap.error_code, 0, snap.attempt, snap.elapsed_ms, snap.progress_done,
                   snap.progress_total, snap.updated_at_ms)
            data = (string_at(snap.value, snap.value_len) if snap.value else None,
                    string_at(snap.request, snap.request_len) if snap.request else None,
                    string_at(snap.error_message, -1) if snap.error_message else None)
        finally:
            core.dll.lds_snapshot_clear(byref(snap))
        return self._state.build_event(raw, *data)

    @property
    def pages(self) -> List[Optional[T]]:
        """The values of the pages, in order (``None`` for a page without one: an error)."""
        return [self.page(i).value for i in range(len(self))]

    def _has_more(self, direction: int) -> bool:
        rc: int = self._core.dll.lds_pages_has_more(self._core.c_handle, self.id, direction)
        self._call(rc, "has_more")
        return rc == 1

    @property
    def has_next(self) -> bool:
        """Whether the last page has a next cursor (:meth:`load_next` would not raise)."""
        return self._has_more(1)

    @property
    def has_previous(self) -> bool:
        """Whether the first page has a previous cursor (:meth:`load_previous` would not raise)."""
        return self._has_more(-1)

    def close(self) -> None:
        """Frees the cell (``lds_pages_free``): page loads are cancelled; waiting :class:`PagesLoad` raise
        :class:`~loadstate.Closed`. Closing twice does nothing."""
        state = self._state
        if state.closed:
            return
        self._finalizer.detach()
        core = self._core
        core.cells.pop(state.id, None)
        if not core.closed:
            core.dll.lds_pages_free(core.c_handle, state.id)
        state.end(core.lib.error(Code.ECLOSED, f"pages cell {state.id} was closed"))

    def __enter__(self) -> "PagesCell[T]":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<PagesCell {self.id}{' closed' if self.closed else ''}>"

