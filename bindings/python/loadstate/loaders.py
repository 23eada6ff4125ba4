"""Loaders written in Python, and the jobs they run.

A loader wraps a callable that receives a :class:`Job`. How it runs depends
on what it is:

* ``async def`` (or an async generator function): a task on the asyncio loop, or of the trio run;
* a plain function (or a generator function): a worker thread;
* any callable with ``inline=True``: directly on the delivery thread, for
  work that never blocks.

The callable ends the job by returning (a value succeeds; ``None`` finishes,
keeping the last yielded value), by raising (:class:`~loadstate.LoadFailed`
picks the code; any other exception fails with code 1 and the exception as
message; :class:`~loadstate.Cancelled` cancels the job), or explicitly
through the job's methods. Generators yield partial values.

The exception a callable raises is kept: :meth:`Load.value
<loadstate.Load.value>` and :meth:`Loadable.get <loadstate.Loadable.get>`
raise that very object (its type, its traceback) to the caller, as
awaiting an asyncio task does, while the library carries its code and
message to every other host. It is matched to the loads by the job's
loader and request and the failure's code and message (see
:class:`~loadstate.Load`).
"""

from __future__ import annotations

import asyncio
import inspect
import threading
import weakref
from ctypes import byref, c_uint64, sizeof
from threading import get_ident
from typing import (TYPE_CHECKING, Any, AsyncIterator, Awaitable, Callable, Dict, Generic, Iterator, List, Optional,
                    Sequence, Tuple,
                    TypeVar, Union, overload)

from . import _core, _trio
from ._checks import I32_MAX, I32_MIN, U64_MAX, flag, handle_name, instance, integer, seconds
from ._library import LOADER_CANCEL_FN, OP_FINISH, OP_SUCCEED, LoaderOptionsC
from .codec import BYTES, Codec, encode_request
from .enums import CachePolicy, Code
from .errors import Cancelled, Closed, InvalidArgument, LoadFailed
from .types import NO_LIMITS, Limits, limits_fields

if TYPE_CHECKING:
    from .cache import Cache
    from .cells import Load, Loadable
    from .runtime import Runtime

__all__ = ["Loader", "Job", "EXCEPTION_CODE", "BytesLoaderFunction"]

#: The code a job fails with when its loader raises an exception other than :class:`LoadFailed`.
EXCEPTION_CODE = 1

T = TypeVar("T")

_HOOK_LOCK = threading.Lock()


class Job:
    """One run of a loader for one load; passed to the loader's callable.

    Every method may be called from any thread. Those that act on the job
    raise :class:`~loadstate.Cancelled` once it no longer runs (cancelled,
    superseded, timed out, its cell freed, or already ended) and
    :class:`~loadstate.Closed` once the runtime is closed.
    """

    __slots__ = ("_core", "id", "raw_request", "_codec", "_loader_name", "_loader_id", "_ended", "_detached",
                 "_watching", "_fired", "_cancel_event", "_task", "_loop", "_hooks")

    def __init__(self, core: _core.Core, job_id: int, raw_request: bytes, codec: Codec[Any], loader_name: str,
                 loader_id: int = 0) -> None:
        self._core = core
        #: The job's id in its runtime.
        self.id = job_id
        #: The request as the library passed it (bytes).
        self.raw_request = raw_request
        self._codec = codec
        self._loader_name = loader_name
        self._loader_id = loader_id
        self._ended = False
        self._detached = False
        self._watching = False
        self._fired = False
        self._cancel_event: Optional[threading.Event] = None
        self._task: Any = None
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._hooks: Tuple[Callable[["Job"], Any], ...] = ()

    @property
    def request(self) -> Any:
        """The request, decoded with the loader's codec (``None`` for an empty one, except with BYTES)."""
        raw = self.raw_request
        if self._codec is BYTES:
            return raw
        return self._codec.decode(raw) if raw else None

    # -- reporting ------------------------------------------------------

    def _call(self, rc: int, what: str) -> None:
        if rc < 0:
            raise self._core.lib.error(rc, f"job {self.id}: {what}")

    def _ended_by_us(self) -> None:
        self._ended = True
        if self._watching:
            self._core.jobs.pop(self.id, None)

    def _defer_end(self, result: Any, data: bytes) -> None:
        """Ends the job in the batch of the attached loop (Core.defer): finish for ``None``, else
        succeed with ``data``, the result encoded."""
        self._ended_by_us()
        self._core.defer(OP_FINISH if result is None else OP_SUCCEED, self.id, 0, data, self)

    def _refused(self, code: int) -> None:
        """A deferred ending the library refused: as a refused call of the job's own."""
        self._ended = False
        if code != Code.ECANCELED and code != Code.ECLOSED:
            self._fail_with(self._core.lib.error(code, f"job {self.id}: completion"))

    def yield_(self, value: Any) -> None:
        """Reports a partial value: the cell becomes ``LOADED`` flagged ``PARTIAL``; the job goes on."""
        data = self._codec.encode(value)
        self._call(self._core.dll.lds_job_yield(self._core.c_handle, self.id, data, len(data)), "yield")

    def progress(self, done: int, total: int = 0) -> None:
        """Reports progress: a ``PROGRESS`` event with ``done`` of ``total`` units (0: unknown)."""
        done = integer("done", done, 0, U64_MAX)
        total = integer("total", total, 0, U64_MAX)
        self._call(self._core.dll.lds_job_progress(self._core.c_handle, self.id, done, total), "progress")

    def succeed(self, value: Any = None) -> None:
        """Ends the job with a final value: the cell becomes ``LOADED`` (process: ``FINISHED``)."""
        data = self._codec.encode(value)
        self._call(self._core.dll.lds_job_succeed(self._core.c_handle, self.id, data, len(data)), "succeed")
        self._ended_by_us()

    def finish(self) -> None:
        """Ends the job keeping the last yielded value; without one, the state before the load returns."""
        self._call(self._core.dll.lds_job_finish(self._core.c_handle, self.id), "finish")
        self._ended_by_us()

    def fail(self, code: int = EXCEPTION_CODE, message: Optional[str] = None, *, final: bool = False) -> None:
        """Ends the job with an error: the cell becomes ``ERROR`` (process: ``FAILED``), domain ``HOST``.

        When the load has retries left, the failure is not shown: the cell
        stays ``LOADING`` and a new job starts after a back-off. With
        ``final``, retrying is skipped (a failure retrying cannot fix).
        """
        code = integer("code", code, I32_MIN, I32_MAX)
        instance("message", message, (str, type(None)), "a str or None")
        self._send_failure(code, message, flag("final", final))

    def _send_failure(self, code: int, message: Optional[str], final: bool) -> None:
        """Ends the job with an error, as :meth:`fail` does once it has checked its arguments."""
        text = None if message is None else _sendable(message).encode("utf-8")
        fail = self._core.dll.lds_job_fail_final if final else self._core.dll.lds_job_fail
        self._call(fail(self._core.c_handle, self.id, code, text), "fail")
        self._ended_by_us()

    def cancel(self) -> None:
        """Cancels the job from inside: the state before the load returns, flagged ``CANCELLED``."""
        self._call(self._core.dll.lds_job_cancel_self(self._core.c_handle, self.id), "cancel")

    def reset(self) -> None:
        """Ends the job and makes the cell absent (process: idle)."""
        self._call(self._core.dll.lds_job_reset_self(self._core.c_handle, self.id), "reset")

    def detach(self) -> None:
        """Keeps the job running after the callable returns; end it later with one of the methods above."""
        self._detached = True

    # -- cancellation ---------------------------------------------------

    @property
    def cancelled(self) -> bool:
        """Whether the job no longer runs (cancelled, superseded, timed out, ended, runtime closed)."""
        if self._ended or self._fired:
            return True
        rc: int = self._core.dll.lds_job_is_cancelled(self._core.c_handle, self.id)
        return rc != 0

    def on_cancel(self, callback: Callable[["Job"], Any]) -> None:
        """Calls ``callback(job)`` once if the job is cancelled, superseded or timed out, or its cell or
        runtime is freed; never when it ends by succeed, finish or fail.

        The callback runs on the delivery thread; an exception it raises
        goes to the runtime's error handler.

        Raises:
            Cancelled: the job no longer runs, so the callback would never be called.
        """
        with _HOOK_LOCK:
            if self._fired:
                raise self._core.lib.error(Code.ECANCELED, f"job {self.id}: on_cancel")
            self._hooks = self._hooks + (callback,)
        try:
            self._watch()
        except BaseException:
            with _HOOK_LOCK:
                self._hooks = tuple(hook for hook in self._hooks if hook is not callback)
            raise

    def wait_cancelled(self, timeout: Optional[float] = None) -> bool:
        """Blocks until the job is cancelled (as for :meth:`on_cancel`) or ``timeout`` seconds pass.

        Returns ``True`` once the job no longer runs, ``False`` on timeout.
        For loaders on worker threads that wait for something.
        """
        timeout = seconds("timeout", timeout)
        with _HOOK_LOCK:
            if self._cancel_event is None:
                self._cancel_event = threading.Event()
                if self._fired:
                    self._cancel_event.set()
            event = self._cancel_event
        try:
            self._watch()
        except (Cancelled, Closed):
            return True
        return event.wait(timeout)

    def _watch(self) -> None:
        """Registers the library's cancel hook for this job (once)."""
        if self._watching:
            return
        core = self._core
        core.jobs[self.id] = self
        rc = core.dll.lds_job_on_cancel(core.c_handle, self.id, _core.cancel_callback, core.token)
        if rc < 0:
            core.jobs.pop(self.id, None)
            raise core.lib.error(rc, f"job {self.id}: on_cancel")
        self._watching = True

    def _cancelled_by_library(self) -> None:
        """The library's cancel hook: runs on the delivery thread (or at close)."""
        with _HOOK_LOCK:
            if self._fired:
                return
            self._fired = True
            hooks, self._hooks = self._hooks, ()
            event = self._cancel_event
        if event is not None:
            event.set()
        task = self._task
        if task is not None:
            if isinstance(task, asyncio.Future) and self._loop is not None:
                self._core.call_in_loop(self._loop, _cancel, task)
            else:
                task.cancel()  # a concurrent.futures.Future: thread-safe
        for hook in hooks:
            try:
                hook(self)
            except BaseException as exc:  # noqa: BLE001
                self._core.report(exc, f"a cancel hook of job {self.id}")

    # -- completion by the loader's callable ----------------------------

    def _complete(self, result: Any) -> None:
        if self._detached or self._ended:
            return
        if self._core.batch_thread == get_ident():
            # The loader returned on the attached asyncio loop: the ending joins the batch.
            self._defer_end(result, b"" if result is None else self._codec.encode(result))
            return
        try:
            if result is None:
                self.finish()
            else:
                self.succeed(result)
        except (Cancelled, Closed):
            pass  # the job was cancelled or the runtime closed while it ran

    def _fail_with(self, exc: BaseException) -> None:
        if isinstance(exc, (Cancelled, asyncio.CancelledError)):
            if not self._ended:
                try:
                    self.cancel()
                except (Cancelled, Closed):
                    pass
            return
        if isinstance(exc, Closed) and self._core.closing:
            return
        final = False
        if isinstance(exc, LoadFailed):
            code, message, final = exc.code, exc.message, exc.final
        else:
            code, message = EXCEPTION_CODE, f"{type(exc).__name__}: {exc}"
        # Kept before the failure is sent: the failed state may reach a waiter at once.
        self._core.remember_raised(self._loader_id, self.raw_request, code,
                                   None if message is None else _sendable(message), exc)
        try:
            self._send_failure(code, message, final)
            return
        except (Cancelled, Closed):
            pass
        self._core.report(exc, f"{self._loader_name} (job {self.id}, which no longer runs)")

    def __repr__(self) -> str:
        return f"<Job {self.id} of {self._loader_name}>"


_BytesResult = Union[bytes, bytearray, memoryview, None]

#: The callables a loader of bytes takes (one made without a codec, whose values go through :data:`BYTES`),
#: as a type checker sees them: a function of a :class:`Job` that returns its value as ``bytes``
#: (``bytearray`` and ``memoryview`` too) or ``None`` (to end keeping the last value yielded), an
#: ``async def`` that does, or a generator or async generator that yields such values. A function annotated
#: to return ``str`` is refused: with the BYTES codec it fails at run time; give it ``codec=TEXT``.
BytesLoaderFunction = Callable[[Job], Union[_BytesResult, Awaitable[_BytesResult], Iterator[_BytesResult],
                                            AsyncIterator[_BytesResult]]]


def _sendable(message: str) -> str:
    """A message as the library can carry it: a C string, so with every NUL written ``\\0``."""
    return message.replace("\0", "\\0")


def _cancel(task: "asyncio.Future[Any]") -> None:
    task.cancel()


def _drain(job: Job, generator: Any) -> Any:
    try:
        while True:
            try:
                value = next(generator)
            except StopIteration as stop:
                return stop.value
            job.yield_(value)
    finally:
        generator.close()


def _run_sync(job: Job, fn: Callable[[Job], Any]) -> None:
    try:
        result = fn(job)
    except BaseException as exc:  # noqa: BLE001 - every outcome ends the job
        job._fail_with(exc)
        return
    _finish_sync(job, result)


def _finish_sync(job: Job, result: Any) -> None:
    try:
        if inspect.isgenerator(result):
            result = _drain(job, result)
        elif inspect.isawaitable(result):
            if inspect.iscoroutine(result):
                result.close()
            raise TypeError(f"{job._loader_name} returned an awaitable; declare it `async def` to run it on asyncio")
        job._complete(result)
    except BaseException as exc:  # noqa: BLE001 - every outcome ends the job
        job._fail_with(exc)


async def _run_async(job: Job, fn: Callable[[Job], Any], generator: bool) -> None:
    try:
        if generator:
            agen = fn(job)
            try:
                async for value in agen:
                    job.yield_(value)
            finally:
                await agen.aclose()
            result = None
        else:
            result = await fn(job)
        job._complete(result)
    except asyncio.CancelledError as exc:
        job._fail_with(exc)
        raise
    except BaseException as exc:  # noqa: BLE001
        job._fail_with(exc)


class _LoaderState:
    """What the library's callbacks need of a loader (registered under its token)."""

    def __init__(self, core: _core.Core, fn: Callable[[Job], Any], codec: Codec[Any], mode: str,
                 loop: Optional[asyncio.AbstractEventLoop], name: str, host: Optional[_trio.Host] = None) -> None:
        self.core = core
        self.fn = fn
        self.codec = codec
        self.mode = mode
        self.loop = loop
        # The trio run the loader was made in (an async loader made outside asyncio), if any.
        self.host = host
        self.name = name
        self.generator = inspect.isasyncgenfunction(fn)
        # The loader's id, set once the library has made the loader (before any job of it starts).
        self.id = 0

    def start(self, job_id: int, request: bytes) -> None:
        job = Job(self.core, job_id, request, self.codec, self.name, self.id)
        mode = self.mode
        if mode == "inline":
            try:
                result = self.fn(job)
            except BaseException as exc:  # noqa: BLE001
                job._fail_with(exc)
                return
            if type(result) is bytes and self.codec is BYTES and not job._ended and not job._detached:
                # The common case of an inline loader, without the general path's checks.
                core = self.core
                if core.batch_thread == get_ident():
                    job._defer_end(result, result)  # on the attached asyncio loop: joins the batch
                    return
                rc = core.dll.lds_job_succeed(core.c_handle, job_id, result, len(result))
                if rc == 0:
                    job._ended_by_us()
                elif rc != Code.ECANCELED and rc != Code.ECLOSED:
                    job._fail_with(core.lib.error(rc, f"job {job_id}: succeed"))
                return
            _finish_sync(job, result)
        elif mode == "thread":
            self.core.workers.submit(_run_sync, job, self.fn)
        else:
            self._start_async(job)

    def _start_async(self, job: Job) -> None:
        core = self.core
        attached = core.trio
        loop = core.loop
        host = attached.host if attached is not None and not attached.ended else None
        if loop is None and host is None:
            loop, host = self.loop, self.host
        if loop is None and host is not None:
            core.jobs[job.id] = job  # watched from its start, as below
            job._watching = True
            _trio.start_loader(host, job, self.fn, self.generator)
            if job._fired:
                self._cancel_late(job)
            return
        if loop is None or loop.is_closed():
            try:
                job.fail(EXCEPTION_CODE, f"RuntimeError: {self.name} is async but no asyncio loop or trio run "
                                         "is available (create the loader inside a running loop or run, or "
                                         "attach the runtime)")
            except (Cancelled, Closed):
                pass
            return
        job._loop = loop
        # Watched from its start (the loader's cancel function cancels the
        # task); its cancellation cannot have been reported yet: that comes
        # after the start.
        core.jobs[job.id] = job
        job._watching = True
        if loop is core.loop and core._reader_thread == get_ident():
            running: Optional[asyncio.AbstractEventLoop] = loop
        else:
            try:
                running = asyncio.get_running_loop()
            except RuntimeError:
                running = None
        coroutine = _run_async(job, self.fn, self.generator)
        if running is loop:
            job._task = loop.create_task(coroutine)
        else:
            try:
                job._task = asyncio.run_coroutine_threadsafe(coroutine, loop)
            except RuntimeError as exc:  # the loop closed meanwhile
                coroutine.close()
                job._fail_with(exc)
                return
        if job._fired:
            self._cancel_late(job)

    @staticmethod
    def _cancel_late(job: Job) -> None:
        task = job._task
        if isinstance(task, asyncio.Future) and job._loop is not None:
            job._core.call_in_loop(job._loop, _cancel, task)
        else:
            task.cancel()

    def released(self) -> None:
        self.fn = None  # type: ignore[assignment]


_ZERO = 0


class _Flight:
    """One load of :meth:`Loader.fetch` and the futures of the calls that wait for it."""

    __slots__ = ("flights", "key", "load", "waiters")

    def __init__(self, flights: Dict[Tuple[Any, ...], "_Flight"], key: Tuple[Any, ...], load: "Load[Any]") -> None:
        self.flights = flights
        self.key = key
        self.load = load
        self.waiters: List[asyncio.Future[Any]] = []

    def end(self) -> None:
        """The flight takes no more callers (its load ended, or nobody waits)."""
        if self.flights.get(self.key) is self:
            del self.flights[self.key]

    def left(self, waiter: "asyncio.Future[Any]") -> None:
        """A waiter's done callback, which runs only when it was cancelled (``_fly`` removes it first
        otherwise): the load is cancelled when no call waits any more."""
        try:
            self.waiters.remove(waiter)
        except ValueError:
            return
        if not self.waiters:
            self.end()
            self.load.cancel()


async def _fly(flight: _Flight, cell: "Loadable[Any]", load: "Load[Any]") -> None:
    """Awaits a flight's load and hands its outcome to every call still waiting."""
    value: Any = None
    error: Optional[BaseException] = None
    try:
        value = load._value_of(await load)
    except BaseException as exc:  # noqa: BLE001 - handed to the waiters
        error = exc
    finally:
        flight.end()
        cell.close()
    waiters, flight.waiters = flight.waiters, []
    left = flight.left
    for waiter in waiters:
        if not waiter.done():
            waiter.remove_done_callback(left)
            if error is None:
                waiter.set_result(value)
            else:
                waiter.set_exception(error)


def _release_loader(core: _core.Core, loader_id: int) -> None:
    if not core.closed:
        core.dll.lds_loader_free(core.c_handle, loader_id)


class Loader(Generic[T]):
    """A loader of values of type ``T``: a Python callable (see :meth:`Runtime.loader`) or one built
    into the library (:meth:`Runtime.file_loader`, :meth:`Runtime.exec_loader`,
    :meth:`Runtime.http_loader`, a ``Loader[HttpResponse]``).

    The library keeps a callable until the loader is closed and its last
    job has ended. Closing (or dropping) the loader makes new loads with it
    fail with :class:`~loadstate.NotFound`; running jobs go on.

    Attributes:
        id: the loader's id in its runtime.
        fn: the callable, or ``None`` for a built-in loader.
        mode: ``"thread"``, ``"inline"`` or ``"async"`` for callables; ``"file"``, ``"exec"`` or ``"http"``.
        codec: how the loader's values are encoded; cells made with the loader decode them with it by default.
        request_codec: how requests to the loader are encoded.
        name: the name given when the loader was made, or ``None``: the metrics label the loader's series with
            it (``loader="users"``; the id without a name), and the inspector shows it.
    """

    @overload
    def __init__(self: "Loader[bytes]", runtime: "Runtime", fn: BytesLoaderFunction, *, inline: bool = ...,
                 loop: Optional[asyncio.AbstractEventLoop] = ..., limits: Limits = ...,
                 name: Optional[str] = ...) -> None: ...

    @overload
    def __init__(self, runtime: "Runtime", fn: Callable[[Job], Any], *, codec: Codec[T], inline: bool = ...,
                 loop: Optional[asyncio.AbstractEventLoop] = ..., limits: Limits = ...,
                 name: Optional[str] = ...) -> None: ...

    def __init__(self, runtime: "Runtime", fn: Callable[[Job], Any], *, codec: Codec[Any] = BYTES,
                 inline: bool = False, loop: Optional[asyncio.AbstractEventLoop] = None,
                 limits: Limits = NO_LIMITS, name: Optional[str] = None) -> None:
        if not callable(fn):
            raise TypeError(f"fn must be a callable taking a loadstate.Job, not {type(fn).__name__}")
        if not isinstance(codec, Codec):
            raise TypeError(f"codec must be a loadstate.Codec, not {type(codec).__name__}")
        max_concurrent, rate_per_s, burst = limits_fields(limits)
        c_name = handle_name(name)
        inline = flag("inline", inline)
        is_async = inspect.iscoroutinefunction(fn) or inspect.isasyncgenfunction(fn)
        if is_async and inline:
            raise InvalidArgument(InvalidArgument.code, "invalid argument", "an async loader cannot run inline")
        mode = "async" if is_async else ("inline" if inline else "thread")
        host = None
        if is_async and loop is None:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                loop, host = None, _trio.current_host()
        core = runtime._core
        described = f"loader {getattr(fn, '__qualname__', type(fn).__name__)}"
        state = _LoaderState(core, fn, codec, mode, loop, described, host)
        token = _core.register(state)
        out = c_uint64()
        # An async loader's jobs are all watched (a cancel cancels the task):
        # the loader's cancel function reports them, with no hook per job.
        options = LoaderOptionsC(sizeof(LoaderOptionsC), _core.start_callback,
                                 _core.loader_cancel_callback if mode == "async" else LOADER_CANCEL_FN(),
                                 _core.free_callback, token, max_concurrent, rate_per_s, burst, c_name)
        rc = core.dll.lds_loader_new_ex(core.c_handle, byref(options), byref(out))
        if rc < 0:
            _core.unregister(token)
            raise core.lib.error(rc, "lds_loader_new_ex")
        state.id = out.value
        self._adopt(runtime, out, fn, mode, codec, codec, name or None)

    @classmethod
    def _builtin(cls, runtime: "Runtime", loader_id: c_uint64, mode: str, codec: Codec[T],
                 request_codec: Codec[Any], name: Optional[str]) -> "Loader[T]":
        loader: Loader[T] = cls.__new__(cls)
        loader._adopt(runtime, loader_id, None, mode, codec, request_codec, name)
        return loader

    def _adopt(self, runtime: "Runtime", loader_id: c_uint64, fn: Optional[Callable[[Job], Any]], mode: str,
               codec: Codec[Any], request_codec: Codec[Any], name: Optional[str]) -> None:
        core = runtime._core
        self._runtime = runtime
        self._core = core
        self.id: int = loader_id.value
        self._c_id = loader_id  # the id as a ctypes value, passed as is on every load
        self.fn = fn
        self.mode = mode
        self.codec = codec
        self.request_codec = request_codec
        self.name: Optional[str] = name
        self._closed = False
        # fetch's flights: a running load, and who awaits it, per request and options.
        self._flights: Dict[Tuple[Any, ...], _Flight] = {}
        self._finalizer = weakref.finalize(self, _release_loader, core, self.id)
        self._finalizer.atexit = False

    @property
    def runtime(self) -> "Runtime":
        """The runtime the loader belongs to."""
        return self._runtime

    def close(self) -> None:
        """Frees the loader: new loads with it fail; running jobs go on."""
        if self._closed:
            return
        self._closed = True
        self._finalizer.detach()
        if not self._core.closed:
            rc = self._core.dll.lds_loader_free(self._core.c_handle, self.id)
            if rc < 0 and rc != Code.ECLOSED:
                raise self._core.lib.error(rc, "close")

    def fetch(self, request: Any = None, *, share: bool = True, timeout: Optional[float] = None,
              retries: int = 0, retry_base: Optional[float] = None, retry_max: Optional[float] = None,
              cache: "Optional[Cache[Any]]" = None, cache_key: Union[bytes, str, None] = None,
              policy: CachePolicy = CachePolicy.LOAD_ONLY, fresh: Optional[float] = None,
              max_age: Optional[float] = None, priority: int = 0) -> Awaitable[T]:
        """Loads ``request`` once and returns the value, raising on failure; no cell to make or close.

        ``value = await loader.fetch(request)`` is the call for code that just
        wants results (request-per-call code: ``asyncio.gather`` over many
        URLs). Each call gets the outcome of its own request. With ``share``
        (the default), calls of the same request and options that overlap
        wait for one load (the loader runs once, and the load is shared with
        cells and prefetches of the same key, as ``share=True`` is); the
        waiters get the same value object. Cancelling a waiting task
        withdraws it; the load is cancelled when its last waiter has gone.
        A cell is the right tool when something shows the state over time:
        loading, refreshing, interrupts, polling, a value kept across
        loads.

        In a running asyncio loop, a shared fetch begins when it is called and
        returns an :class:`asyncio.Future` of the value, which ``await`` and
        ``asyncio.gather`` take as it is (no task is made for it); otherwise
        it returns a coroutine, which loads when awaited.

        Arguments are those of :meth:`Loadable.load <loadstate.Loadable.load>`; ``request`` is encoded
        with the loader's request codec.

        Raises (from the ``await``):
            LoadFailed: the load ended in ``ERROR`` (a :class:`~loadstate.LoadTimedOut` for ``timeout``).
            Exception: the loader raised it (a loader of this process): the very exception.
            Cancelled: the load was cancelled (its loader cancelled itself).
            Closed: the runtime was closed first.

        Raises (at the call):
            TypeError: ``request`` cannot be encoded by the request codec, or an option has the wrong type.
            InvalidArgument: an option is out of range, or the cache belongs to another runtime.
        """
        raw = request if type(request) is bytes and self.request_codec is BYTES else encode_request(
            self.request_codec, request)
        if (timeout is None and retries is _ZERO and retry_base is None and retry_max is None and cache is None
                and cache_key is None and policy is CachePolicy.LOAD_ONLY and fresh is None and max_age is None
                and priority is _ZERO):
            options: Tuple[Any, ...] = ()
            load_options: Dict[str, Any] = {}
        else:
            load_options = dict(timeout=timeout, retries=retries, retry_base=retry_base, retry_max=retry_max,
                                cache=cache, cache_key=cache_key, policy=policy, fresh=fresh, max_age=max_age,
                                priority=priority)
            options = (timeout, retries, retry_base, retry_max, id(cache), cache_key, policy, fresh, max_age,
                       priority)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return self._fetch_alone(raw, True, load_options)
        if not share:
            return self._fetch_alone(raw, False, load_options)
        flights = self._flights
        key = (raw, loop, options) if options else (raw, loop)
        flight = flights.get(key)
        if flight is None:
            cell = self._runtime.loadable(self, request_codec=BYTES)
            try:
                load = cell.load(raw, share=True, **load_options)
            except BaseException:
                cell.close()
                raise
            flight = flights[key] = _Flight(flights, key, load)
            loop.create_task(_fly(flight, cell, load))
        waiter: asyncio.Future[T] = loop.create_future()
        flight.waiters.append(waiter)
        waiter.add_done_callback(flight.left)
        return waiter

    async def _fetch_alone(self, raw: bytes, share: bool, load_options: Dict[str, Any]) -> T:
        """A fetch with a cell of its own: without ``share``, or outside asyncio."""
        cell: Loadable[T] = self._runtime.loadable(self, request_codec=BYTES)
        try:
            load = cell.load(raw, share=share, **load_options)
            return load._value_of(await load)
        finally:
            cell.close()

    def __enter__(self) -> "Loader[T]":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        what = getattr(self.fn, "__qualname__", self.fn) if self.fn is not None else "built-in"
        named = f" name={self.name!r}" if self.name is not None else ""
        return f"<Loader {self.id}{named} {self.mode} {what!r}>"
