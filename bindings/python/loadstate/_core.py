"""The runtime's machinery behind the public classes.

The C library calls back through six ctypes function objects made once
at module level, so they live as long as the interpreter and are never
released while C may call them. Each callback receives a small integer
token (as ``user_data`` / ``loader_data``) that names the Python object it
is for in :data:`_objects`; a token that is gone (its runtime closed, its
loader released) makes the callback a no-op.

Nothing here lets an exception escape into C: every callback catches what
its Python code raises and hands it to the runtime's error handler.
"""

from __future__ import annotations

import asyncio
import ctypes
import itertools
import logging
import select
import sys
import threading
import traceback
from ctypes import byref, c_void_p
from queue import SimpleQueue
from threading import get_ident
from typing import Any, Callable, Dict, List, Optional, Tuple

from . import _trio
from ._library import (CANCEL_FN, EVENT_FN, EVENT_LAYOUT, FREE_FN, LOADER_CANCEL_FN, LOADER_FN, OBSERVE_FN, OP_LAYOUT,
                       RECORD_CANCEL, RECORD_EVENT, RECORD_LAYOUT, RECORD_START, RUNTIME_KEEP_FD, RUNTIME_NO_METRICS, Library, RuntimeOptions)
from .enums import Code, Delivery
from .errors import Closed, WrongState

logger = logging.getLogger("loadstate")

ErrorHandler = Callable[[BaseException, str], None]

# POLL mode takes events and loader starts as records (one foreign call per
# batch instead of one callback each) into a buffer of this many bytes;
# a larger record gets a buffer of its own.
RECORDS_BUFFER = 64 * 1024
# The largest records buffer a runtime keeps once a large value made it grow.
# A record larger than this is not copied into a buffer at all: it is
# delivered through its callback, which reads the value in the library's memory.
RECORDS_BUFFER_KEPT = 8 * 1024 * 1024

# How many exceptions raised by loaders a runtime holds between a job's
# failure and the delivery of its failed state, which hands each one to the
# loads waiting for that state (see Core.remember_raised).
RAISED_KEPT = 256

# token -> runtime core or loader state. Tokens are never reused.
_objects: Dict[int, Any] = {}
_tokens = itertools.count(1)

# The event struct seen as bytes in place (struct reads it without a copy).
_event_bytes_at = (ctypes.c_char * EVENT_LAYOUT.size).from_address
# Any address seen as a (huge) byte array: slicing copies just the bytes
# asked for, at a third of the cost of ctypes.string_at's foreign call.
memory_at = (ctypes.c_char * (1 << 40)).from_address


def register(obj: Any) -> int:
    """Gives ``obj`` a token that C callbacks can name it by."""
    token = next(_tokens)
    _objects[token] = obj
    return token


def lookup(token: Optional[int]) -> Any:
    """The object registered under ``token``, or ``None``."""
    return _objects.get(token)  # type: ignore[arg-type]


def unregister(token: int) -> None:
    _objects.pop(token, None)


def _last_resort(exc: BaseException, where: str) -> None:
    print(f"loadstate: exception in {where} could not be reported:", file=sys.stderr)
    traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)


def _deliver(core: Any, raw: Tuple[Any, ...]) -> None:
    """Hands an unpacked ``lds_event`` to its cell (a callback or a record)."""
    try:
        state = core.cells.get(raw[1])
        if state is not None:
            state.deliver(raw)
    except BaseException as exc:  # noqa: BLE001 - nothing may escape into C
        core.report(exc, "an event callback")


def _start(token: Optional[int], job: int, request: Optional[int], request_len: int) -> None:
    """Starts a job of the loader registered under ``token`` (a callback or a record)."""
    loader = _objects.get(token)  # type: ignore[arg-type]
    if loader is None:
        return
    try:
        loader.start(job, memory_at(request)[:request_len] if request and request_len else b"")
    except BaseException as exc:  # noqa: BLE001
        loader.core.report(exc, f"starting a job of {loader.name}")


def _on_event(address: int, token: Optional[int]) -> None:
    """A cell's ``lds_event_fn``."""
    core = _objects.get(token)  # type: ignore[arg-type]
    if core is not None:
        _deliver(core, EVENT_LAYOUT.unpack(_event_bytes_at(address)))


def _on_start(_rt: int, job: int, request: Optional[int], request_len: int, token: Optional[int]) -> None:
    """A Python loader's ``lds_loader_fn``."""
    _start(token, job, request, request_len)


def _on_free(token: Optional[int]) -> None:
    """The ``free_data`` of a Python loader or runtime observer: the library holds it no more."""
    held = _objects.pop(token, None)  # type: ignore[arg-type]
    if held is not None:
        try:
            held.released()
        except BaseException as exc:  # noqa: BLE001
            _last_resort(exc, f"releasing {held!r}")


def _on_observe(address: int, token: Optional[int]) -> None:
    """A runtime observer's ``lds_observe_fn`` (see :mod:`loadstate.observer`)."""
    observer = _objects.get(token)  # type: ignore[arg-type]
    if observer is not None:
        observer.observe(address)


def _on_cancel(job: int, token: Optional[int]) -> None:
    """A job's cancel hook (``lds_job_on_cancel``)."""
    core = _objects.get(token)  # type: ignore[arg-type]
    if core is not None:
        _job_cancelled(core, job)


def _job_cancelled(core: Any, job: int) -> None:
    """A watched job was cancelled (its hook, or its loader's cancel function): its watchers learn of it."""
    try:
        watched = core.jobs.pop(job, None)
        if watched is not None:
            watched._cancelled_by_library()
    except BaseException as exc:  # noqa: BLE001
        core.report(exc, f"the cancel hooks of job {job}")


def _loader_job_cancelled(token: Optional[int], job: int) -> None:
    """A job of the loader registered under ``token`` was cancelled (a callback or a record)."""
    loader = _objects.get(token)  # type: ignore[arg-type]
    if loader is not None:
        _job_cancelled(loader.core, job)


def _on_loader_cancel(_rt: int, job: int, token: Optional[int]) -> None:
    """An async loader's cancel function: one of its jobs was cancelled."""
    _loader_job_cancelled(token, job)


# The C function objects of the callbacks, made once: they live as long as
# the interpreter, so C can never call one that was released.
event_callback = EVENT_FN(_on_event)
start_callback = LOADER_FN(_on_start)
free_callback = FREE_FN(_on_free)
cancel_callback = CANCEL_FN(_on_cancel)
loader_cancel_callback = LOADER_CANCEL_FN(_on_loader_cancel)
observe_callback = OBSERVE_FN(_on_observe)


def default_error_handler(exc: BaseException, context: str) -> None:
    """Logs an exception nobody else can receive on the ``loadstate`` logger."""
    logger.error("exception in %s", context, exc_info=(type(exc), exc, exc.__traceback__))


class Workers:
    """A small pool of daemon threads for loaders written as plain functions.

    Daemon threads never hold the interpreter open at exit: a loader still
    blocked then is abandoned (its job was cancelled when the runtime
    closed).
    """

    def __init__(self, limit: int, report: ErrorHandler) -> None:
        self._limit = limit
        self._report = report
        self._queue: "SimpleQueue[Any]" = SimpleQueue()
        self._idle = threading.Semaphore(0)
        self._lock = threading.Lock()
        self._threads: List[threading.Thread] = []
        self._stopped = False

    def submit(self, fn: Callable[..., None], *args: Any) -> None:
        """Runs ``fn(*args)`` on a worker thread."""
        self._queue.put((fn, args))
        if self._idle.acquire(blocking=False):
            return
        with self._lock:
            if len(self._threads) < self._limit and not self._stopped:
                thread = threading.Thread(target=self._work, name=f"loadstate-worker-{len(self._threads)}",
                                          daemon=True)
                self._threads.append(thread)
                thread.start()

    def _work(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            fn, args = item
            try:
                fn(*args)
            except BaseException as exc:  # noqa: BLE001 - the work items catch their own errors
                self._report(exc, "a worker thread")
            del item, fn, args
            self._idle.release()

    def stop(self) -> None:
        """Lets every worker end once the queued work is done; returns at once."""
        with self._lock:
            self._stopped = True
            for _ in self._threads:
                self._queue.put(None)


class Calls:
    """The library's functions as the binding calls them: each first submits
    the calls the runtime's owning thread has deferred into a batch (see
    :meth:`Core.defer`), so that every call keeps its place in order.

    Attribute access resolves a function once and keeps the wrapper.
    """

    def __init__(self, core: "Core", dll: Any) -> None:
        self._core = core
        self._dll = dll

    def __getattr__(self, name: str) -> Callable[..., Any]:
        function = getattr(self._dll, name)
        core = self._core

        def call(*args: Any) -> Any:
            if core.deferred:
                core.flush()
            return function(*args)

        call.__name__ = name
        setattr(self, name, call)
        return call


class Core:
    """The state of one ``lds_runtime``: its handle, cells, watched jobs, asyncio hookup."""

    def __init__(self, library: Library, delivery: Delivery, on_error: Optional[ErrorHandler], workers: int,
                 spin_us: int = 0, metrics: bool = True, keep_fd: bool = False) -> None:
        self.lib = library
        # Every call but the deferred ones goes through Calls (see there).
        self.dll: Any = Calls(self, library.dll)
        self._submit = library.dll.lds_runtime_submit
        # Taking records needs no deferred call submitted first.
        self._take_records = library.dll.lds_runtime_dispatch_records
        self._dispatch_callbacks = library.dll.lds_runtime_dispatch
        # Calls deferred into a batch for lds_runtime_submit: only on the
        # thread of the asyncio loop the runtime is attached to (set while
        # attached), as (op, target, loader, data, owner) tuples, with
        # owner._refused(code) called when the library refuses the call.
        self.batch_thread: Optional[int] = None
        self.deferred: List[Tuple[Any, ...]] = []
        self._results = (ctypes.c_int32 * 256)()
        self.delivery = Delivery(delivery)
        self.keep_fd = keep_fd
        self.on_error = on_error if on_error is not None else default_error_handler
        options = RuntimeOptions(ctypes.sizeof(RuntimeOptions), int(self.delivery), spin_us, 0,
                                 (0 if metrics else RUNTIME_NO_METRICS) | (RUNTIME_KEEP_FD if keep_fd else 0))
        out = c_void_p()
        self.check(self.dll.lds_runtime_new(byref(options), byref(out)), "lds_runtime_new")
        self.handle: int = out.value  # type: ignore[assignment]
        self.c_handle = out  # the handle as a ctypes value, passed as is on every call
        self.cells: Dict[int, Any] = {}
        self.jobs: Dict[int, Any] = {}
        # The runtime observer set through this binding, if any (see loadstate.observer).
        self.observer: Optional[Any] = None
        self.observer_lock = threading.Lock()
        # Exceptions raised by loaders of this process, by (loader id, request,
        # code, message) of the failure: the newest RAISED_KEPT.
        self._raised: Dict[Tuple[int, bytes, int, Optional[str]], BaseException] = {}
        self.closing = False
        self.closed = False
        self._lock = threading.Lock()
        self._worker_limit = workers
        self._workers: Optional[Workers] = None
        self.loop: Optional[asyncio.AbstractEventLoop] = None
        self._watched_fd: Optional[int] = None
        # POLL mode: what watches the descriptor outside asyncio and trio (a GUI toolkit's file handler or
        # socket notifier): each hook stops its watch, and close() calls them before lds_runtime_free closes
        # the descriptor (see Runtime.add_close_hook).
        self.close_hooks: List[Callable[[], None]] = []
        # POLL mode: the trio run the runtime is attached to instead of an asyncio loop (see _trio).
        self.trio: Optional[_trio.Attachment] = None
        # POLL mode: the thread inside lds_runtime_dispatch, if any, and the
        # attached loop's thread while its reader dispatches.
        self._dispatch_thread: Optional[int] = None
        self._reader_thread: Optional[int] = None
        # POLL mode: the records buffer (8-byte aligned) and the one dispatcher of the moment.
        self._records = (ctypes.c_uint64 * (RECORDS_BUFFER // 8 if self.delivery == Delivery.POLL else 1))()
        self._used = ctypes.c_size_t()
        self._used_ref = byref(self._used)
        self._taking = threading.Lock()
        # POLL mode: whether a host thread ever polled or dispatched this runtime (see Load.__await__).
        self.dispatched = False
        self.token = register(self)

    # -- errors ---------------------------------------------------------

    def check(self, rc: int, detail: Optional[str] = None) -> int:
        """Returns ``rc`` when it is not an error; raises the matching exception otherwise."""
        if rc < 0:
            raise self.lib.error(rc, detail)
        return rc

    def remember_raised(self, loader: int, request: bytes, code: int, message: Optional[str],
                        exc: BaseException) -> None:
        """Keeps the exception a loader raised until the failed state of its job is delivered.

        It is kept under the job's loader id and request bytes and the code
        and message the job fails with: the delivery of the failed state
        looks it up (:meth:`raised`) and hands it to every load waiting for
        that state, which keeps it from then on. Only the newest
        :data:`RAISED_KEPT` are kept, enough for the failures that happen
        between a job's failure and the delivery of its event (in ``POLL``
        mode, until the next dispatch); a load whose exception was dropped
        meanwhile raises the :class:`~loadstate.LoadFailed` of its state.
        """
        traceback.clear_frames(exc.__traceback__)  # the frames' locals are not kept alive
        key = (loader, request, code, message)
        with self._lock:
            raised = self._raised
            raised.pop(key, None)
            raised[key] = exc
            if len(raised) > RAISED_KEPT:
                del raised[next(iter(raised))]

    def raised(self, loader: int, request: bytes, code: int, message: Optional[str]) -> Optional[BaseException]:
        """The exception a job of ``loader`` for ``request`` raised, failing with this code and message, if
        one is kept."""
        return self._raised.get((loader, request, code, message))

    def report(self, exc: BaseException, context: str) -> None:
        """Hands an exception that has no caller to the runtime's error handler."""
        if isinstance(exc, Closed) and self.closing:
            return  # expected while the runtime closes under running work
        try:
            self.on_error(exc, context)
        except BaseException as again:  # noqa: BLE001
            _last_resort(again, f"the error handler (reporting {exc!r} from {context})")

    # -- work -----------------------------------------------------------

    @property
    def workers(self) -> Workers:
        workers = self._workers
        if workers is None:
            with self._lock:
                if self._workers is None:
                    self._workers = Workers(self._worker_limit, self.report)
                workers = self._workers
        return workers

    # -- POLL mode ------------------------------------------------------

    def fd(self) -> int:
        if self.closed:
            raise self.lib.error(Code.ECLOSED, "lds_runtime_fd")
        return self.check(self.dll.lds_runtime_fd(self.c_handle), "lds_runtime_fd")

    def dispatch(self, max_events: int = 0) -> int:
        if self.closed:
            raise self.lib.error(Code.ECLOSED, "lds_runtime_dispatch")
        self.dispatched = True
        outer = self._dispatch_thread
        self._dispatch_thread = get_ident()
        try:
            done = 0
            while True:
                rc = self._take(max_events - done if max_events > 0 else 0)
                if rc <= 0:
                    break
                done += rc
                if max_events > 0 and done >= max_events:
                    break
        finally:
            self._dispatch_thread = outer
        if rc < 0 and not done:
            self.check(rc, "lds_runtime_dispatch")
        return done

    def _take(self, max_records: int) -> int:
        """One lds_runtime_dispatch_records call, its records handled; its return code.

        Like lds_runtime_dispatch, refuses (``LDS_ESTATE``) a second dispatcher,
        nested or on another thread, while records are being handled.
        """
        if not self._taking.acquire(blocking=False):
            return Code.ESTATE
        try:
            buffer = self._records
            rc: int = self._take_records(self.c_handle, buffer, ctypes.sizeof(buffer), max_records, self._used_ref)
            if rc == Code.ETOOBIG:
                # A record larger than the buffer (a large value).
                needed = self._used.value
                if needed > RECORDS_BUFFER_KEPT:
                    # Through its callback instead: the value is read where the
                    # library keeps it, so it is copied once, into Python (or
                    # not at all, by a codec that decodes views), rather than
                    # into a buffer of its size first.
                    rc = self._dispatch_callbacks(self.c_handle, 1)
                    return rc
                # A buffer that fits it, kept for the next ones.
                buffer = (ctypes.c_uint64 * ((max(needed, 2 * ctypes.sizeof(buffer)) + 7) // 8))()
                if ctypes.sizeof(buffer) <= RECORDS_BUFFER_KEPT:
                    self._records = buffer
                rc = self._take_records(self.c_handle, buffer, ctypes.sizeof(buffer), max_records, self._used_ref)
            if rc > 0:
                self._handle_records(buffer, self._used.value)
            return rc
        finally:
            self._taking.release()
            if self.deferred:
                self.flush()

    def _handle_records(self, buffer: Any, used: int) -> None:
        """Delivers each record as its callback would have: events to cells, starts and cancels to loaders."""
        offset = 0
        while offset < used:
            record = RECORD_LAYOUT.unpack_from(buffer, offset)
            what = record[1]
            if what == RECORD_EVENT:
                _deliver(self, record[4:])
            elif what == RECORD_START:
                _start(record[2], record[3], record[12], record[13])  # the event's request, request_len
            elif what == RECORD_CANCEL:
                _loader_job_cancelled(record[2], record[3])
            offset += record[0]

    # -- batches --------------------------------------------------------

    def defer(self, op: int, target: int, loader: int, data: bytes, owner: Any, code: int = 0) -> None:
        """Defers a call into the batch submitted at the end of the current loop callback (``code``: the
        ``lds_op``'s code field, the flags of a load).

        Only on :attr:`batch_thread`; every other call made through
        :attr:`dll` submits the batch first, so the order of calls holds.
        ``owner._refused(code)`` is called if the library refuses the call.
        """
        deferred = self.deferred
        if not deferred and self._dispatch_thread != get_ident():
            # Outside this thread's own dispatch, whose end submits the batch.
            self.loop.call_soon(self.flush)  # type: ignore[union-attr]
        deferred.append((op, target, loader, data, owner, code))

    def flush(self) -> None:
        """Submits the deferred calls (one lds_runtime_submit); hands each refused one to its owner."""
        deferred = self.deferred
        if not deferred or self.batch_thread != get_ident():
            return
        self.deferred = []
        count = len(deferred)
        blob = b"".join([call[3] for call in deferred])
        address = ctypes.cast(ctypes.c_char_p(blob), c_void_p).value or 0
        ops = []
        for op, target, loader, data, _, code in deferred:
            size = len(data)
            ops.append(OP_LAYOUT.pack(op, code, target, loader, address if size else 0, size))
            address += size
        results = self._results
        if len(results) < count:
            results = self._results = (ctypes.c_int32 * max(count, 2 * len(results)))()
        rc = self._submit(self.c_handle, b"".join(ops), count, results)
        if rc == count:
            return
        for index, call in enumerate(deferred):
            code = rc if rc < 0 else results[index]
            if code < 0:
                try:
                    call[4]._refused(code)
                except BaseException as exc:  # noqa: BLE001
                    self.report(exc, "a deferred call's error")

    def poll(self, timeout: Optional[float]) -> int:
        """Waits up to ``timeout`` seconds for pending callbacks, then runs them."""
        fd = self.fd()
        self.dispatched = True
        readable, _, _ = select.select([fd], [], [], timeout)
        return self.dispatch(0) if readable else 0

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        fd = self.fd()
        with self._lock:
            if self.loop is not None:
                if self.loop is loop:
                    return
                raise WrongState(Code.ESTATE, "not allowed in the current state",
                                 "the runtime is already attached to another event loop")
            self._check_no_trio()
            self.loop = loop
            self._watched_fd = fd
            try:
                running = asyncio.get_running_loop()
            except RuntimeError:
                running = None
            if running is loop:
                self.batch_thread = get_ident()
        loop.add_reader(fd, self._readable)

    def _check_no_trio(self) -> None:
        """Refuses a second attachment while a trio run's reader watches the runtime (under ``_lock``)."""
        attached = self.trio
        if attached is not None and not attached.ended:
            raise WrongState(Code.ESTATE, "not allowed in the current state",
                             "the runtime is already attached to a trio run")

    def attach_trio(self, host: _trio.Host) -> None:
        """Attaches to the trio run of ``host``, on its thread: a system task of the run dispatches."""
        fd = self.fd()
        with self._lock:
            if self.loop is not None:
                raise WrongState(Code.ESTATE, "not allowed in the current state",
                                 "the runtime is already attached to an asyncio event loop")
            attached = self.trio
            if attached is not None and attached.host is host and not attached.ended:
                return
            self._check_no_trio()
            attached = self.trio = _trio.Attachment(host, fd, self._readable, self.report)
        attached.start()

    def _readable(self) -> None:
        # At most a batch per wake-up, so a steady stream of events cannot
        # starve the rest of the asyncio loop; the fd stays readable.
        outer = self._dispatch_thread
        self._dispatch_thread = self._reader_thread = get_ident()
        try:
            rc = self._take(1024)
        finally:
            self._dispatch_thread = outer
            self._reader_thread = None
        if rc < 0 and rc != Code.ESTATE:
            self.detach()
            if rc != Code.ECLOSED:
                self.report(self.lib.error(rc, "lds_runtime_dispatch"), "the asyncio reader")

    def detach(self) -> None:
        if self.batch_thread == get_ident():
            self.flush()
        with self._lock:
            loop, fd = self.loop, self._watched_fd
            self.loop = self._watched_fd = None
            self.batch_thread = None
            attached, self.trio = self.trio, None
        if attached is not None:
            attached.stop()
        if loop is None or fd is None or loop.is_closed():
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop or not loop.is_running():
            loop.remove_reader(fd)
            return
        done = threading.Event()

        def remove() -> None:
            loop.remove_reader(fd)
            done.set()

        loop.call_soon_threadsafe(remove)
        done.wait(5.0)

    # -- closing --------------------------------------------------------

    def close(self, deferred_ok: bool = False) -> None:
        """Frees the runtime: jobs are cancelled, loaders released, waiters woken with :class:`Closed`.

        Inside a callback the library refuses (``LDS_ESTATE``): then this
        raises :class:`WrongState`, or with ``deferred_ok`` hands the close
        to a short-lived thread (used by finalizers, which may run anywhere).
        """
        if self._dispatch_thread == get_ident():
            # Inside a POLL-mode callback: lds_runtime_free would refuse.
            if deferred_ok:
                threading.Thread(target=self.close, name="loadstate-close", daemon=True).start()
                return
            raise self.lib.error(Code.ESTATE, "close() cannot run inside a loadstate callback")
        with self._lock:
            if self.closed or self.closing:
                return
            self.closing = True
            hooks, self.close_hooks = self.close_hooks, []
        for hook in reversed(hooks):
            try:
                hook()
            except BaseException as exc:  # noqa: BLE001
                self.report(exc, "a close hook")
        self.detach()
        rc = self.dll.lds_runtime_free(self.c_handle)
        if rc == Code.ESTATE:
            with self._lock:
                self.closing = False
            if deferred_ok:
                threading.Thread(target=self.close, name="loadstate-close", daemon=True).start()
                return
            raise self.lib.error(rc, "close() cannot run inside a loadstate callback")
        self.closed = True
        unregister(self.token)
        for state in list(self.cells.values()):
            state.runtime_closed()
        self.cells.clear()
        for job in list(self.jobs.values()):
            job._cancelled_by_library()
        self.jobs.clear()
        if self._workers is not None:
            self._workers.stop()
        if rc < 0 and rc != Code.ECLOSED:
            raise self.lib.error(rc, "lds_runtime_free")

    def call_in_loop(self, loop: Any, fn: Callable[[Any], Any], arg: Any) -> None:
        """Calls ``fn(arg)`` on ``loop``: now if this thread runs it, else through call_soon_threadsafe.

        ``loop`` is an asyncio loop or the :class:`~loadstate._trio.Host` of a trio run, which calls
        ``fn`` at once on the run's thread and through ``TrioToken.run_sync_soon`` elsewhere. Inside
        the attached loop's reader the answer is known without asking asyncio (whose get_running_loop
        makes a system call).
        """
        if loop is self.loop and self._reader_thread == get_ident():
            fn(arg)
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            fn(arg)
            return
        try:
            loop.call_soon_threadsafe(fn, arg)
        except RuntimeError:
            pass  # the loop is closed (the trio run has ended): nobody is left to wake
