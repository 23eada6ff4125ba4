"""trio support: awaiting loads, streaming events, dispatching a POLL runtime and running ``async def``
loaders under trio (and so under anyio's trio backend), with no dependency on trio.

trio is never imported here: code runs under trio only once trio is imported, so the module is taken from
``sys.modules`` when it is there. The running async library is found as sniffio finds it, without sniffio:
a running asyncio loop on this thread means asyncio (the binding's own path, which asks asyncio first), else
a trio run on this thread (``trio.lowlevel.current_trio_token()`` answers) means trio.

The objects here look, to the code that wakes waiters, like what asyncio gives it: a :class:`Host` (one per
trio run) has ``call_soon_threadsafe`` and ``create_future``, a :class:`Waiter` has ``done``,
``set_result`` and ``__await__``. So :meth:`Load._resolve <loadstate.Load>` and
:class:`~loadstate.EventStream` wake a trio task exactly as they wake an asyncio future: at once on the
trio thread, through ``TrioToken.run_sync_soon`` from any other thread.
"""

from __future__ import annotations

import sys
import threading
from threading import get_ident
from typing import Any, Callable, Generator, Optional

from .errors import Cancelled

__all__ = ["Host", "Waiter", "Attachment", "current_host", "no_library", "start_loader"]

# The trio.lowlevel.RunVar that holds each trio run's Host, made at first use (under the lock: runs on two
# threads must share it).
_HOST_VAR: Any = None
_HOST_LOCK = threading.Lock()


def _trio() -> Any:
    """The trio module if it was imported (else no trio run can exist), or ``None``."""
    return sys.modules.get("trio")


def current_host() -> Optional["Host"]:
    """The :class:`Host` of the trio run on this thread, or ``None`` outside trio."""
    trio = _trio()
    if trio is None:
        return None
    lowlevel = trio.lowlevel
    try:
        token = lowlevel.current_trio_token()
    except RuntimeError:
        return None
    global _HOST_VAR
    if _HOST_VAR is None:
        with _HOST_LOCK:
            if _HOST_VAR is None:
                _HOST_VAR = lowlevel.RunVar("loadstate.host")
    host: Optional[Host] = _HOST_VAR.get(None)
    if host is None:
        host = Host(trio, token)
        _HOST_VAR.set(host)
    return host


def no_library(what: str) -> RuntimeError:
    """The error for ``what`` (an await, a stream) outside asyncio and trio."""
    return RuntimeError(f"{what} needs a running asyncio loop or trio run on this thread (anyio works on either "
                        "backend); none is running here")


class Host:
    """One trio run, as the binding's wake-up paths see it (an asyncio loop's stand-in)."""

    __slots__ = ("trio", "lowlevel", "token", "thread", "Cancelled")

    def __init__(self, trio: Any, token: Any) -> None:
        self.trio = trio
        self.lowlevel = trio.lowlevel
        self.token = token
        #: The thread the run is on.
        self.thread = get_ident()
        self.Cancelled = trio.Cancelled

    def running_here(self) -> bool:
        """Whether this thread runs this trio run now."""
        if get_ident() != self.thread:
            return False
        try:
            return bool(self.lowlevel.current_trio_token() is self.token)
        except RuntimeError:
            return False

    def call_soon_threadsafe(self, fn: Callable[..., Any], *args: Any) -> None:
        """Calls ``fn(*args)`` in the run: now on its own thread, else at its next step.

        Raises ``trio.RunFinishedError`` (a :class:`RuntimeError`) once the run has ended.
        """
        if self.running_here():
            fn(*args)
        else:
            self.token.run_sync_soon(fn, *args)

    def create_future(self) -> "Waiter":
        """A :class:`Waiter` for one task of this run."""
        return Waiter(self)

    def __repr__(self) -> str:
        return f"<loadstate trio host of thread {self.thread}>"


class Waiter:
    """A trio task parked until :meth:`set_result` (an asyncio future's stand-in).

    Awaited once, by the task that made it. Every method runs on the run's thread; once the task is
    cancelled (or woken) nothing reschedules it again.
    """

    __slots__ = ("_host", "_task", "_done")

    def __init__(self, host: Host) -> None:
        self._host = host
        self._task: Any = None
        self._done = False

    def done(self) -> bool:
        """Whether the waiter was woken, or its task cancelled."""
        return self._done

    def set_result(self, _result: Any) -> None:
        """Wakes the task (or lets it through at once if it has not parked yet)."""
        if self._done:
            return
        self._done = True
        task, self._task = self._task, None
        if task is not None:
            self._host.lowlevel.reschedule(task)

    def __await__(self) -> Generator[Any, None, None]:
        return self._wait().__await__()

    async def _wait(self) -> None:
        if self._done:
            return
        lowlevel = self._host.lowlevel
        self._task = lowlevel.current_task()

        def abort(_raise_cancel: Any) -> Any:
            self._done = True
            self._task = None
            return lowlevel.Abort.SUCCEEDED

        await lowlevel.wait_task_rescheduled(abort)


class Attachment:
    """A POLL runtime attached to a trio run: a system task waits for the runtime's descriptor with
    ``trio.lowlevel.wait_readable`` and runs the pending callbacks (``Core._readable``), a batch per wake-up."""

    __slots__ = ("host", "fd", "_readable", "_report", "_scope", "_stopped", "ended")

    def __init__(self, host: Host, fd: int, readable: Callable[[], None],
                 report: Callable[[BaseException, str], None]) -> None:
        self.host = host
        self.fd = fd
        self._readable = readable
        self._report = report
        self._scope = host.trio.CancelScope()
        self._stopped = False
        #: Whether the reader task has ended (stopped, or its run ended).
        self.ended = False

    def start(self) -> None:
        """Starts the reader; on the run's thread, inside the run."""
        self.host.lowlevel.spawn_system_task(self._read, name=f"loadstate runtime reader (fd {self.fd})")

    async def _read(self) -> None:
        wait_readable = self.host.lowlevel.wait_readable
        try:
            with self._scope:
                while not self._stopped:
                    await wait_readable(self.fd)
                    if self._stopped:
                        break
                    self._readable()
        except self.host.Cancelled:
            raise  # the run ends: its system tasks are cancelled
        except BaseException as exc:  # noqa: BLE001 - an exception out of a system task would crash the run
            self._report(exc, "the trio reader")
        finally:
            self.ended = True

    def stop(self) -> None:
        """Stops the reader; from any thread. Once it returns, trio no longer watches the descriptor (unless
        the run could not be reached within 5 s), so the library may close it."""
        if self.ended:
            return
        if self.host.running_here():
            self._stop_here()
            return
        done = threading.Event()

        def stop_there() -> None:
            try:
                self._stop_here()
            finally:
                done.set()

        try:
            self.host.token.run_sync_soon(stop_there)
        except RuntimeError:
            return  # the run has ended, and its reader with it
        done.wait(5.0)

    def _stop_here(self) -> None:
        self._stopped = True
        if not self.ended:
            # Cancelling aborts a wait_readable under way, which takes the descriptor out of trio's epoll
            # set before this returns; a reader not started yet never waits.
            self._scope.cancel()


class _LoaderTask:
    """An ``async def`` loader's job running as a trio task: ``cancel()`` from any thread cancels it."""

    __slots__ = ("_host", "scope")

    def __init__(self, host: Host) -> None:
        self._host = host
        self.scope = host.trio.CancelScope()

    def cancel(self) -> None:
        try:
            self._host.call_soon_threadsafe(self.scope.cancel)
        except RuntimeError:
            pass  # the run has ended, and the task with it


def start_loader(host: Host, job: Any, fn: Callable[[Any], Any], generator: bool) -> None:
    """Runs the job of an ``async def`` loader ``fn`` (an async generator function if ``generator``) as a
    system task of ``host``'s run, inside a cancel scope that ``job._task.cancel()`` cancels; from any
    thread. The job ends as under asyncio: returning succeeds (``None`` finishes), raising fails, a
    cancellation cancels the job."""
    task = _LoaderTask(host)
    job._task = task
    try:
        host.call_soon_threadsafe(host.lowlevel.spawn_system_task, _run, job, fn, generator, task.scope)
    except RuntimeError as exc:  # the run has ended
        job._fail_with(exc)


async def _run(job: Any, fn: Callable[[Any], Any], generator: bool, scope: Any) -> None:
    cancelled = _trio().Cancelled
    try:
        with scope:  # its own cancellation ends here; the run's (at its end) goes on to the run
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
            except cancelled:
                job._fail_with(Cancelled(Cancelled.code, "cancelled", f"job {job.id}: its trio task was cancelled"))
                raise
            except BaseException as exc:  # noqa: BLE001 - every outcome ends the job
                job._fail_with(exc)
    except cancelled:
        raise
    except BaseException as exc:  # noqa: BLE001 - an exception out of a system task would crash the run
        job._core.report(exc, f"{job._loader_name} (job {job.id})")
