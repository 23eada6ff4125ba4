"""The runtime: one libuv loop on its own thread, and everything created from it."""

from __future__ import annotations

import asyncio
import ctypes
import os
import weakref
from typing import Any, Callable, Optional, TypeVar, Union, overload

from . import _core, _trio, builtin
from ._checks import I32_MAX, I32_MIN, U64_MAX, c_string, flag, handle_name, integer, member, milliseconds, seconds
from ._library import (INSPECTOR_ACTIONS, INSPECTOR_ALLOW_REMOTE, INSPECTOR_SHOW_VALUES, ExecOptionsC, FileOptionsC,
                       HttpOptionsC, InspectorOptionsC, Library, RuntimeStatisticsC, load_library)
from .builtin import HttpResponse
from .cache import Cache
from .cells import EventCallback, Loadable, Process, options_struct
from .codec import BYTES, Codec
from .enums import CachePolicy, Code, Delivery, ExecFlags
from .errors import InvalidArgument
from .loaders import BytesLoaderFunction, Job, Loader
from .metrics import RuntimeStats, metrics_text, runtime_stats
from .observer import Observation, Observer, observe
from .redis_cache import RedisCache
from .types import NO_LIMITS, Limits, LoadOptions, limits_fields

__all__ = ["Runtime"]

# The bounds of lds_inspector_options: max_clients, interval_ms and max_cells.
_INSPECTOR_CLIENTS_MAX = 256
_INSPECTOR_INTERVAL_MIN_MS = 50
_INSPECTOR_INTERVAL_MAX_MS = 60_000
_INSPECTOR_CELLS_MAX = 10_000

T = TypeVar("T")
LoaderFunction = Callable[[Job], Any]


# How long the runtime's thread keeps polling for more work once it has run out, before it sleeps
# (lds_runtime_options.spin_us), as the text of a whole number of microseconds from 0 to 100,000: calls
# from Python come a few microseconds apart, and within that time they need no wake-up system call. A
# tuning knob of the binding, not part of its API: the LOADSTATE_SPIN_US environment variable, read once
# when this module is imported, sets it (50 when unset or empty); each Runtime checks it when it is made.
_SPIN_US: str = os.environ.get("LOADSTATE_SPIN_US") or "50"


def _spin_us() -> int:
    """``_SPIN_US`` as an int; ``ValueError`` when it is not a whole number from 0 to 100,000."""
    try:
        value = int(_SPIN_US)
    except ValueError:
        value = -1
    if not 0 <= value <= 100_000:
        raise ValueError(f"LOADSTATE_SPIN_US must be a whole number of microseconds from 0 to 100000, "
                         f"not {_SPIN_US!r}")
    return value


def _delivery(value: Union[Delivery, str, int]) -> Delivery:
    if isinstance(value, str):
        try:
            return Delivery[value.upper()]
        except KeyError:
            raise ValueError(f"delivery must be 'loop' or 'poll', not {value!r}") from None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"delivery must be a loadstate.Delivery, 'loop' or 'poll', not {type(value).__name__}")
    return member("delivery", value, Delivery)


class Runtime:
    """A loadstate runtime (``lds_runtime``): creates cells and loaders and owns them.

    Use it as a context manager (``with`` or ``async with``); :meth:`close`
    cancels every running job, releases every loader and wakes every
    waiting load with :class:`~loadstate.Closed`. A runtime that is never
    closed is closed when it is garbage-collected or at interpreter exit.

    Args:
        delivery: where callbacks run. ``Delivery.LOOP`` (default): on the
            runtime's thread. ``Delivery.POLL``: on whatever thread calls
            :meth:`dispatch`, :meth:`poll` or waits on a load; ``async with``
            attaches it to the running asyncio loop (or trio run) so callbacks run there.
            ``"loop"`` and ``"poll"`` are accepted too.
        library: the path of libloadstate.so (see :func:`loadstate.load_library`).
        on_error: ``on_error(exception, context)`` receives exceptions that
            no caller can receive: raised by event callbacks, cancel hooks,
            codecs, or loaders whose job no longer runs. The default logs
            them on the ``loadstate`` logger.
        workers: the most threads that run plain-function loaders at once (at least 1).
        metrics: whether the runtime counts loads, jobs and events (see
            :meth:`stats`); ``False`` makes them cost nothing.
        keep_fd: POLL mode only (``ValueError`` otherwise): :meth:`close`
            leaves :attr:`fd` open, drained and never readable again, and
            the caller closes it (``os.close``) once it has stopped watching
            it. For a main loop that may still watch the descriptor when the
            runtime closes (a GUI toolkit): it then sees a quiet descriptor,
            not a closed one reported ready forever.
    """

    def __init__(self, delivery: Union[Delivery, str, int] = Delivery.LOOP, *,
                 library: Union[None, str, "os.PathLike[str]", Library] = None,
                 on_error: Optional[Callable[[BaseException, str], None]] = None,
                 workers: int = min(32, (os.cpu_count() or 1) + 4), metrics: bool = True,
                 keep_fd: bool = False) -> None:
        if on_error is not None and not callable(on_error):
            raise TypeError(f"on_error must be callable or None, not {type(on_error).__name__}")
        workers = integer("workers", workers, 1, None)
        metrics = flag("metrics", metrics)
        keep_fd = flag("keep_fd", keep_fd)
        spin_us = _spin_us()
        lib = library if isinstance(library, Library) else load_library(library)
        mode = _delivery(delivery)
        if keep_fd and mode != Delivery.POLL:
            raise ValueError("keep_fd needs Delivery.POLL: only POLL mode has a descriptor")
        self._core = _core.Core(lib, mode, on_error, workers, spin_us, metrics, keep_fd)
        self._finalizer = weakref.finalize(self, self._core.close, True)

    # -- properties -------------------------------------------------------

    @property
    def library(self) -> Library:
        """The loaded libloadstate.so."""
        return self._core.lib

    @property
    def delivery(self) -> Delivery:
        """Where callbacks run."""
        return self._core.delivery

    @property
    def keep_fd(self) -> bool:
        """Whether :meth:`close` leaves :attr:`fd` open (the runtime was made with ``keep_fd=True``)."""
        return self._core.keep_fd

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` has run."""
        return self._core.closed

    @property
    def fd(self) -> int:
        """POLL mode: a descriptor readable while callbacks are pending. Do not read or close it.

        Stop watching it before :meth:`close`, which closes it (unless the
        runtime was made with ``keep_fd=True``: then close it yourself after
        removing the watch).
        """
        return self._core.fd()

    def stats(self) -> RuntimeStats:
        """The runtime's metrics now: load counters and latencies per runtime and per loader, cache counters.

        Raises:
            Closed: the runtime is closed.
        """
        return runtime_stats(self._core)

    def metrics_text(self) -> str:
        """The runtime's metrics in the Prometheus text exposition format (version 0.0.4), for a ``/metrics`` page.

        Load series are labelled ``loader`` (a :attr:`Loader.id`, or ``freed``), cache series ``cache`` and
        ``kind``; see ``lds_runtime_metrics_text`` in ``loadstate.h`` for the families.

        Raises:
            Closed: the runtime is closed.
        """
        return metrics_text(self._core)

    def observe(self, callback: Callable[[Observation], Any]) -> Observer:
        """Calls ``callback(observation)`` for every cell event, job start and job end of the runtime, for logging
        and tracing (``lds_runtime_observe``); a job's end carries how it ended and its duration.

        The callback runs on the delivery thread, like the cells' callbacks: in ``Delivery.LOOP`` on the
        runtime's thread, where it must not block; in ``Delivery.POLL`` where the runtime is dispatched, in the
        order of the runtime's steps (a load's ``LOADING`` event, then its job's start; the job's end, then the
        event it causes). One observer per runtime: a new one replaces the last. Loads made after this call are
        observed from their first event; a job that started before it is not reported when it ends. An
        exception the callback raises goes to the runtime's error handler.

        Returns the :class:`Observer`: ``close()`` it, or use it as a context manager, to remove it.

        Raises:
            Closed: the runtime is closed.
            Busy: the runtime's queue is full.
        """
        return observe(self._core, callback)

    def start_inspector(self, address: str = "127.0.0.1:0", *, show_values: bool = False, actions: bool = False,
                        allow_remote: bool = False, max_clients: int = 0, interval: float = 0,
                        idle_timeout: float = 0, max_cells: int = 0) -> str:
        """Starts the runtime's web inspector (``lds_inspector_start``) and returns its URL, token included.

        The page shows the cells, jobs, loaders and caches live. Only requests with the token and a ``Host``
        naming the bound address are answered. ``address`` is ``"127.0.0.1:PORT"`` (port 0: a free one);
        values are hidden unless ``show_values``; the page's cancel, refresh and invalidate buttons work only
        with ``actions``. ``interval`` and ``idle_timeout`` are in seconds (0: the library's defaults, 0.5 and
        3 s); ``interval`` is otherwise from 0.05 to 60 s. ``idle_timeout`` is the head timeout: a connection
        without a complete request head that long after it was accepted is answered 408 and closed; a head
        that cannot become valid is answered 400 at once; connections still waiting for their head have a
        budget of their own (:data:`INSPECTOR_WAITING_MAX`, the oldest closed first), so that slow clients
        cannot keep out a request. ``max_clients``: live pages at once, more are answered 503 (0: 8, at most
        256); ``max_cells``: cells listed (0: 200, at most 10,000).

        Raises:
            TypeError: an argument of the wrong type.
            InvalidArgument: a malformed or non-loopback address (without ``allow_remote``), bad options.
            WrongState: an inspector already serves.
            IOFailure: the address cannot be bound.
        """
        raw_address = c_string("address", address)
        options = InspectorOptionsC()
        options.size = ctypes.sizeof(InspectorOptionsC)
        options.flags = ((INSPECTOR_SHOW_VALUES if flag("show_values", show_values) else 0)
                         | (INSPECTOR_ACTIONS if flag("actions", actions) else 0)
                         | (INSPECTOR_ALLOW_REMOTE if flag("allow_remote", allow_remote) else 0))
        options.max_clients = integer("max_clients", max_clients, 0, _INSPECTOR_CLIENTS_MAX)
        options.interval_ms = milliseconds("interval", interval, _INSPECTOR_INTERVAL_MAX_MS,
                                           _INSPECTOR_INTERVAL_MIN_MS)
        options.idle_timeout_ms = milliseconds("idle_timeout", idle_timeout)
        options.max_cells = integer("max_cells", max_cells, 0, _INSPECTOR_CELLS_MAX)
        core = self._core
        core.check(core.dll.lds_inspector_start(core.c_handle, raw_address, ctypes.byref(options)),
                   "inspector start")
        return self.inspector_url() or ""

    def inspector_url(self) -> Optional[str]:
        """The inspector's URL, token included, or None when none serves."""
        core = self._core
        buffer = ctypes.create_string_buffer(256)
        length = ctypes.c_size_t(0)
        rc = core.dll.lds_inspector_url(core.c_handle, buffer, 256, ctypes.byref(length))
        if rc == Code.ENOENT:
            return None
        core.check(rc, "inspector url")
        return buffer.raw[:length.value].decode("utf-8")

    def stop_inspector(self) -> None:
        """Stops the inspector; nothing happens when none serves."""
        core = self._core
        rc = core.dll.lds_inspector_stop(core.c_handle)
        if rc != Code.ENOENT:
            core.check(rc, "inspector stop")

    # -- lifecycle --------------------------------------------------------

    def close(self) -> None:
        """Frees the runtime: cancels jobs (their cancel hooks run), releases loaders, joins the loop thread.

        Closing twice is harmless.

        Raises:
            WrongState: called from inside a loadstate callback.
        """
        self._core.close()
        self._finalizer.detach()

    def __enter__(self) -> "Runtime":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    async def __aenter__(self) -> "Runtime":
        if self.delivery == Delivery.POLL:
            self.attach()
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        self.close()

    # -- POLL mode ----------------------------------------------------------

    def attach(self, loop: Optional[asyncio.AbstractEventLoop] = None) -> None:
        """POLL mode: runs callbacks on ``loop`` (default: the running loop) by watching :attr:`fd`.

        Async loaders also run on this loop. Without ``loop``, inside a trio run (anyio's trio backend
        too) it attaches to that run instead: a system task of the run waits for :attr:`fd` with
        ``trio.lowlevel.wait_readable`` and runs the callbacks, and async loaders run as tasks of the run.
        ``async with`` calls it.

        Raises:
            RuntimeError: no ``loop`` given, and neither an asyncio loop nor a trio run runs on this thread.
            WrongState: the runtime is attached to another loop or run.
        """
        if loop is None:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                host = _trio.current_host()
                if host is None:
                    raise _trio.no_library("attaching a runtime") from None
                self._core.attach_trio(host)
                return
        self._core.attach(loop)

    def detach(self) -> None:
        """Stops watching :attr:`fd` on the attached asyncio loop or trio run."""
        self._core.detach()

    def add_close_hook(self, hook: Callable[[], None]) -> Callable[[], None]:
        """Calls ``hook()`` when the runtime closes, before it frees its :attr:`fd`; returns a function that
        removes the hook (harmless to call twice, or after the close).

        For code that watches :attr:`fd` in an event loop of its own, as :func:`loadstate.tk.attach` and
        :func:`loadstate.qt.attach` do: the hook stops the watch, so the loop never watches a closed
        descriptor (which many loops report as readable forever, spinning a core). Hooks run on the thread
        that closes the runtime (the last added first); one that raises goes to the error handler and the
        close goes on.

        Raises:
            TypeError: ``hook`` is not callable.
            Closed: the runtime is closed.
        """
        if not callable(hook):
            raise TypeError(f"hook must be callable, not {type(hook).__name__}")
        core = self._core
        with core._lock:
            if core.closed or core.closing:
                raise core.lib.error(Code.ECLOSED, "add_close_hook")
            core.close_hooks.append(hook)

        def remove() -> None:
            with core._lock:
                hooks = core.close_hooks
                for index, known in enumerate(hooks):
                    if known is hook:
                        del hooks[index]
                        break

        return remove

    def dispatch(self, max_events: int = 0) -> int:
        """POLL mode: runs pending callbacks on this thread (all when ``max_events`` <= 0); never waits.

        Returns how many ran.
        """
        return self._core.dispatch(integer("max_events", max_events, I32_MIN, I32_MAX))

    def poll(self, timeout: Optional[float] = None) -> int:
        """POLL mode: waits up to ``timeout`` seconds (``None``: no limit) until callbacks are pending,
        then runs them all. Returns how many ran (0 on timeout)."""
        return self._core.poll(seconds("timeout", timeout))

    # -- factories ----------------------------------------------------------

    @overload
    def loader(self, fn: LoaderFunction, *, codec: Codec[T], inline: bool = ...,
               loop: Optional[asyncio.AbstractEventLoop] = ..., limits: Limits = ...,
               name: Optional[str] = ...) -> Loader[T]: ...

    @overload
    def loader(self, fn: BytesLoaderFunction, *, inline: bool = ...,
               loop: Optional[asyncio.AbstractEventLoop] = ..., limits: Limits = ...,
               name: Optional[str] = ...) -> Loader[bytes]: ...

    @overload
    def loader(self, fn: None = ..., *, codec: Codec[T], inline: bool = ...,
               loop: Optional[asyncio.AbstractEventLoop] = ..., limits: Limits = ...,
               name: Optional[str] = ...) -> Callable[[LoaderFunction], Loader[T]]: ...

    @overload
    def loader(self, fn: None = ..., *, inline: bool = ...,
               loop: Optional[asyncio.AbstractEventLoop] = ...,
               limits: Limits = ..., name: Optional[str] = ...) -> Callable[[BytesLoaderFunction], Loader[bytes]]: ...

    def loader(self, fn: Optional[LoaderFunction] = None, *, codec: Codec[Any] = BYTES, inline: bool = False,
               loop: Optional[asyncio.AbstractEventLoop] = None, limits: Limits = NO_LIMITS,
               name: Optional[str] = None) -> Any:
        """Makes a :class:`Loader` of ``fn(job)``; usable as a decorator, with or without arguments.

        Args:
            fn: the callable. ``async def`` functions run on the asyncio loop
                (the attached one, else ``loop``, else the one running when
                the loader is made), or as tasks of the trio run the runtime is
                attached to (else of the one running when the loader is made);
                plain functions run on worker threads.
            codec: how the job's request is decoded and its values encoded. Without one (:data:`BYTES`),
                ``fn`` returns bytes (or ``None``), and a type checker rejects a function annotated to
                return anything else (see :data:`~loadstate.loaders.BytesLoaderFunction`).
            inline: run a plain function directly on the delivery thread
                (for work that returns at once and never blocks).
            loop: the asyncio loop async loaders run on.
            limits: how many of its jobs run at once and how fast they start (:class:`Limits`).
            name: what the metrics (the ``loader`` label, in place of the id) and the inspector call the
                loader: at most :data:`NAME_MAX` bytes of UTF-8 without control characters; names need not be
                unique (loaders of one name share their metrics series). ``None`` or ``""``: no name.

        Raises:
            InvalidArgument: ``name`` is too long or holds a control character.
        """
        if fn is None:
            return lambda f: Loader(self, f, codec=codec, inline=inline, loop=loop, limits=limits, name=name)
        return Loader(self, fn, codec=codec, inline=inline, loop=loop, limits=limits, name=name)

    def file_loader(self, *, chunk_size: int = 0, max_size: int = 0, limits: Limits = NO_LIMITS,
                    name: Optional[str] = None) -> Loader[bytes]:
        """The library's file loader: a request is a path, the value the file's contents.

        PROGRESS events count bytes. A missing or unreadable file is an error
        in the ``OS`` domain (errno as code). Only regular files are read: a
        directory is an ``OS`` error (EISDIR), a FIFO, socket or device an
        ``EINVAL`` error of the library. ``chunk_size``: bytes per read
        (0: 256 KiB); ``max_size``: the largest file (0: :data:`VALUE_MAX`); ``limits``: see :class:`Limits`;
        ``name``: as for :meth:`loader`.
        """
        options = FileOptionsC(ctypes.sizeof(FileOptionsC), integer("chunk_size", chunk_size),
                               integer("max_size", max_size, 0, U64_MAX), *limits_fields(limits), handle_name(name))
        return self._builtin("file", self._core.dll.lds_file_loader_new, options, BYTES, builtin.PATH, name)

    def exec_loader(self, *, stream_lines: bool = False, kill_grace: Optional[float] = None,
                    max_output: int = 0, limits: Limits = NO_LIMITS, name: Optional[str] = None) -> Loader[bytes]:
        """The library's exec loader: a request is an :class:`ExecRequest` (or a list of arguments),
        the value the command's stdout.

        A non-zero exit is an error in the ``EXIT`` domain with the stderr
        tail as message. ``stream_lines`` yields stdout so far at each newline;
        cancelling sends SIGTERM, then SIGKILL after ``kill_grace`` seconds. ``limits``: see :class:`Limits`;
        ``name``: as for :meth:`loader`.
        """
        options = ExecOptionsC(ctypes.sizeof(ExecOptionsC),
                               ExecFlags.STREAM_LINES if flag("stream_lines", stream_lines) else 0,
                               milliseconds("kill_grace", kill_grace), integer("max_output", max_output, 0, U64_MAX),
                               *limits_fields(limits), handle_name(name))
        return self._builtin("exec", self._core.dll.lds_exec_loader_new, options, BYTES, builtin.EXEC_REQUEST, name)

    def http_loader(self, *, max_connections: int = 0, user_agent: Optional[str] = None,
                    proxy: Optional[str] = None, limits: Limits = NO_LIMITS,
                    max_per_host: int = 0, name: Optional[str] = None) -> Loader[HttpResponse]:
        """The library's HTTP loader (libcurl on the runtime's loop): a request is an
        :class:`HttpRequest` (or a URL), the value an :class:`HttpResponse`.

        A status outside 2xx is an error in the ``HTTP`` domain, with the
        status as code and the response as the error state's value: the
        :class:`LoadFailed` that :meth:`Loadable.get` raises has it as
        :attr:`~LoadFailed.response`. With retries, 5xx, 408 and 429 are retried. ``proxy``: ``None`` takes it
        from the environment (``http_proxy``...), ``""`` uses none, else the
        proxy's URL. ``limits``: see :class:`Limits`; ``max_per_host``: the most
        connections open at once to one host (0: no limit); ``name``: as for :meth:`loader`.
        """
        options = HttpOptionsC(ctypes.sizeof(HttpOptionsC), integer("max_connections", max_connections),
                               c_string("user_agent", user_agent, none=True), c_string("proxy", proxy, none=True),
                               *limits_fields(limits), integer("max_per_host", max_per_host), handle_name(name))
        return self._builtin("http", self._core.dll.lds_http_loader_new, options, builtin.HTTP_RESPONSE,
                             builtin.HTTP_REQUEST, name)

    def _builtin(self, mode: str, new: Any, options: Any, codec: Codec[T], request_codec: Codec[Any],
                 name: Optional[str]) -> Loader[T]:
        out = ctypes.c_uint64()
        self._core.check(new(self._core.c_handle, ctypes.byref(options), ctypes.byref(out)), f"{mode} loader")
        return Loader._builtin(self, out, mode, codec, request_codec, name or None)

    # -- scheduling ---------------------------------------------------------

    def pause_polling(self) -> None:
        """Pauses the polling of every cell of the runtime (loads made with ``refresh_interval``).

        A refresh that falls due meanwhile waits for :meth:`resume_polling`;
        loads under way, and loads asked for, go on.
        """
        self._core.check(self._core.dll.lds_runtime_pause_polling(self._core.c_handle), "pause_polling")

    def resume_polling(self) -> None:
        """Resumes polling: cells whose refresh fell due while paused refresh at once."""
        self._core.check(self._core.dll.lds_runtime_resume_polling(self._core.c_handle), "resume_polling")

    # -- host signals -------------------------------------------------------

    def set_online(self, online: bool) -> None:
        """Tells the runtime whether the host is online (``lds_runtime_set_online``; a runtime starts online).

        Offline, a load does not call its loader: by default it waits, its state flagged
        :data:`Flags.PAUSED <loadstate.Flags.PAUSED>`, and starts when the runtime is online again; a retry
        waits the same way and polls do not fire. A load made with ``offline="fail"`` fails at once with
        ``EOFFLINE``; one made with ``offline="run"`` ignores the signal. A running job goes on. Any thread,
        never blocks; setting the current value changes nothing.
        """
        self._core.check(self._core.dll.lds_runtime_set_online(self._core.c_handle, 1 if online else 0),
                         "set_online")

    def set_foreground(self, foreground: bool) -> None:
        """Tells the runtime whether the host is in the foreground (``lds_runtime_set_foreground``; a runtime
        starts in the foreground).

        In the background, polls do not fire unless their load has ``poll_in_background=True``; a poll that
        fell due meanwhile runs on the return. Back in the foreground, cells loaded with
        ``refresh_on_foreground=True`` whose value is at least ``fresh`` old refresh silently, at most once
        per ``foreground_throttle``. Any thread, never blocks; setting the current value changes nothing.
        """
        self._core.check(self._core.dll.lds_runtime_set_foreground(self._core.c_handle, 1 if foreground else 0),
                         "set_foreground")

    @property
    def online(self) -> bool:
        """Whether the runtime is online, as last set by :meth:`set_online`."""
        return bool(self._signals().online)

    @property
    def foreground(self) -> bool:
        """Whether the runtime is in the foreground, as last set by :meth:`set_foreground`."""
        return bool(self._signals().foreground)

    def _signals(self) -> RuntimeStatisticsC:
        """The runtime's statistics without loaders or caches: the signals' fields."""
        out = RuntimeStatisticsC()
        out.size = ctypes.sizeof(RuntimeStatisticsC)
        self._core.check(self._core.dll.lds_runtime_stats(self._core.c_handle, ctypes.byref(out)), "stats")
        return out

    def prefetch(self, loader: Loader[Any], request: Any = None, *, cache: Cache[Any],
                 cache_key: Union[bytes, str, None] = None, policy: CachePolicy = CachePolicy.LOAD_ONLY,
                 fresh: Optional[float] = None, max_age: Optional[float] = None, priority: int = 0,
                 timeout: Optional[float] = None, retries: int = 0) -> None:
        """Loads ``request`` into ``cache`` without a cell (``lds_prefetch``).

        A cell that loads the same loader and cache key while the prefetch
        runs waits for its job, so the loader runs once; a later cache-first
        load finds the value in the cache. The prefetch waits behind other
        loads of a limited loader: ``priority`` 0 means
        :data:`PRIORITY_PREFETCH`. Nothing reports how it ends.

        Raises:
            InvalidArgument: the loader or cache belongs to another runtime.
            TypeError: an argument of the wrong type.
        """
        if not isinstance(loader, Loader):
            raise TypeError(f"loader must be a loadstate.Loader, not {type(loader).__name__}")
        if not isinstance(cache, Cache):
            raise TypeError(f"cache must be a loadstate.Cache, not {type(cache).__name__}")
        core = self._core
        if loader._core is not core or cache._core is not core:
            raise InvalidArgument(InvalidArgument.code, "invalid argument",
                                  "prefetch: the loader and the cache must belong to this runtime")
        try:
            raw = b"" if request is None else loader.request_codec.encode(request)
        except TypeError as exc:
            raise TypeError(f"request: {exc}") from None
        options = LoadOptions(cache=cache, cache_key=cache_key, policy=policy, fresh=fresh, max_age=max_age,
                              priority=priority, timeout=timeout, retries=retries)
        struct, keep = options_struct(options)
        core.check(core.dll.lds_prefetch(core.c_handle, loader.id, raw, len(raw), ctypes.byref(struct)), "prefetch")
        del keep

    @overload
    def memory_cache(self, name: Optional[str] = ..., *, max_entries: int = ..., max_bytes: int = ...,
                     ttl: Optional[float] = ..., unobserved: Optional[float] = ...) -> Cache[bytes]: ...

    @overload
    def memory_cache(self, name: Optional[str] = ..., *, max_entries: int = ..., max_bytes: int = ...,
                     ttl: Optional[float] = ..., unobserved: Optional[float] = ..., codec: Codec[T]) -> Cache[T]: ...

    def memory_cache(self, name: Optional[str] = None, *, max_entries: int = 0, max_bytes: int = 0,
                     ttl: Optional[float] = None, unobserved: Optional[float] = None,
                     codec: Codec[Any] = BYTES) -> Cache[Any]:
        """A new, empty memory cache.

        Args:
            name: the cache's name.
            max_entries: most entries held (0: 10000).
            max_bytes: most bytes of keys and values held (0: 64 MiB).
            ttl: seconds an entry lives (``None``: entries do not expire).
            unobserved: seconds an entry no cell observes is kept (``None``: no such limit). An entry
                is observed while a live cell's last load used this cache and its key (the cell was
                not reset since); the grace starts when the last such cell stops, or at the put for
                an entry no cell observes. Separate from freshness (``fresh``) and from ``ttl``; each
                drop counts in :attr:`CacheStats.expirations`.
            codec: how values are encoded.
        """
        return Cache._memory(self, name, max_entries, max_bytes, ttl, codec, unobserved)

    @overload
    def persistent_cache(self, path: Union[str, "os.PathLike[str]"], *, max_bytes: int = ...,
                         ttl: Optional[float] = ..., replace_damaged: bool = ...) -> Cache[bytes]: ...

    @overload
    def persistent_cache(self, path: Union[str, "os.PathLike[str]"], *, max_bytes: int = ...,
                         ttl: Optional[float] = ..., replace_damaged: bool = ..., codec: Codec[T]) -> Cache[T]: ...

    def persistent_cache(self, path: Union[str, "os.PathLike[str]"], *, max_bytes: int = 0,
                         ttl: Optional[float] = None, replace_damaged: bool = False,
                         codec: Codec[Any] = BYTES) -> Cache[Any]:
        """Opens (or creates, mode 0600) the persistent cache in the SQLite file ``path``.

        Entries stored earlier, by this process or another, are served
        again; every change is durable once the call returns. A file that is
        not a cache of this library raises :class:`IOFailure` unless
        ``replace_damaged``, which recreates it empty.

        Args:
            max_bytes: most bytes of keys and values held (0: 256 MiB).
            ttl: seconds an entry lives (``None``: entries do not expire).
            codec: how values are encoded.
        """
        return Cache._persistent(self, path, max_bytes, ttl, replace_damaged, codec)

    @overload
    def redis_cache(self, url: str, *, key_prefix: Union[str, bytes, None] = ..., ttl: Optional[float] = ...,
                    max_ttl: Optional[float] = ..., max_value_bytes: int = ...,
                    command_timeout: Optional[float] = ..., connect_timeout: Optional[float] = ...,
                    lease: Optional[float] = ..., reconnect_max: Optional[float] = ...,
                    memory_max_entries: int = ..., memory_max_bytes: int = ...,
                    memory_ttl: Optional[float] = ...) -> RedisCache[bytes]: ...

    @overload
    def redis_cache(self, url: str, *, key_prefix: Union[str, bytes, None] = ..., ttl: Optional[float] = ...,
                    max_ttl: Optional[float] = ..., max_value_bytes: int = ...,
                    command_timeout: Optional[float] = ..., connect_timeout: Optional[float] = ...,
                    lease: Optional[float] = ..., reconnect_max: Optional[float] = ...,
                    memory_max_entries: int = ..., memory_max_bytes: int = ..., memory_ttl: Optional[float] = ...,
                    codec: Codec[T]) -> RedisCache[T]: ...

    def redis_cache(self, url: str, *, key_prefix: Union[str, bytes, None] = None, ttl: Optional[float] = None,
                    max_ttl: Optional[float] = None, max_value_bytes: int = 0,
                    command_timeout: Optional[float] = None, connect_timeout: Optional[float] = None,
                    lease: Optional[float] = None, reconnect_max: Optional[float] = None,
                    memory_max_entries: int = 0, memory_max_bytes: int = 0, memory_ttl: Optional[float] = None,
                    codec: Codec[Any] = BYTES) -> RedisCache[Any]:
        """A cache on the Redis server at ``url``, shared with every process that opens one on the same
        server, database and ``key_prefix``: ``RedisCache(self, url, ...)``; see :class:`RedisCache` for
        the URL forms, the options (times in seconds) and what happens while Redis is down.

        Returns without waiting for the connection.
        """
        return RedisCache(self, url, key_prefix=key_prefix, ttl=ttl, max_ttl=max_ttl,
                          max_value_bytes=max_value_bytes, command_timeout=command_timeout,
                          connect_timeout=connect_timeout, lease=lease, reconnect_max=reconnect_max,
                          memory_max_entries=memory_max_entries, memory_max_bytes=memory_max_bytes,
                          memory_ttl=memory_ttl, codec=codec)

    @overload
    def loadable(self, loader: Loader[T], *, codec: None = ..., request_codec: Optional[Codec[Any]] = ...,
                 on_event: Optional[EventCallback] = ..., name: Optional[str] = ...) -> Loadable[T]: ...

    @overload
    def loadable(self, loader: Optional[Loader[Any]] = ..., *, codec: Codec[T],
                 request_codec: Optional[Codec[Any]] = ..., on_event: Optional[EventCallback] = ...,
                 name: Optional[str] = ...) -> Loadable[T]:
        ...

    @overload
    def loadable(self, loader: None = ..., *, codec: None = ..., request_codec: Optional[Codec[Any]] = ...,
                 on_event: Optional[EventCallback] = ..., name: Optional[str] = ...) -> Loadable[bytes]: ...

    def loadable(self, loader: Optional[Loader[Any]] = None, *, codec: Optional[Codec[Any]] = None,
                 request_codec: Optional[Codec[Any]] = None, on_event: Optional[EventCallback] = None,
                 name: Optional[str] = None) -> Any:
        """Makes a :class:`Loadable` cell (absent at first).

        Args:
            loader: the loader its loads use unless they name another.
            codec: how event values are decoded (and ``set_loaded`` values
                encoded); default: the loader's codec, else :data:`BYTES`.
            request_codec: how requests are encoded and decoded; default:
                the loader's request codec, else ``codec``.
            on_event: a callback for every event, on the delivery thread
                (``PROGRESS`` events included; see :meth:`Cell.subscribe`).
            name: what the inspector calls the cell: as a loader's name (see :meth:`loader`).

        Raises:
            InvalidArgument: ``name`` is too long or holds a control character.
        """
        return Loadable(self, loader, codec=codec, request_codec=request_codec, on_event=on_event, name=name)

    def process(self, loader: Optional[Loader[Any]] = None, *, codec: Optional[Codec[Any]] = None,
                request_codec: Optional[Codec[Any]] = None, on_event: Optional[EventCallback] = None,
                name: Optional[str] = None) -> Process:
        """Makes a :class:`Process` cell (idle at first); arguments as for :meth:`loadable`."""
        return Process(self, loader, codec=codec, request_codec=request_codec, on_event=on_event, name=name)

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return f"<loadstate.Runtime {self.delivery.name} {state}>"
