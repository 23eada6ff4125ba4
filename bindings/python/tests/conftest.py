"""Shared fixtures: runtimes that fail the test on unreported errors, and helpers that wait on events."""

from __future__ import annotations

import contextlib
import http.server
import queue
import socket
import sys
import threading
from pathlib import Path
from typing import Callable, Iterator, List, Optional, Tuple, Type

import pytest

# The tests import the package from this checkout unless it is installed.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import loadstate  # noqa: E402

WAIT = 10.0  # seconds: an upper bound for anything a test waits for, never a expected duration


class Errors:
    """Collects what a runtime's on_error receives."""

    def __init__(self) -> None:
        self.items: List[Tuple[BaseException, str]] = []
        self.expected = False
        self.arrived = threading.Event()

    def __call__(self, exc: BaseException, context: str) -> None:
        self.items.append((exc, context))
        self.arrived.set()


@pytest.fixture
def errors() -> Errors:
    return Errors()


@pytest.fixture
def rt(errors: Errors):
    """A LOOP-mode runtime; the test fails if an error was reported that it did not expect."""
    with loadstate.Runtime(on_error=errors) as runtime:
        yield runtime
    if not errors.expected:
        assert errors.items == []


@pytest.fixture
def poll_rt(errors: Errors):
    """A POLL-mode runtime, dispatched by the test itself."""
    with loadstate.Runtime(loadstate.Delivery.POLL, on_error=errors) as runtime:
        yield runtime
    if not errors.expected:
        assert errors.items == []


class Recorder:
    """Records a cell's events; waits for them without sleeping.

    In POLL mode the waiting thread dispatches while it waits.
    """

    def __init__(self, cell: loadstate.Cell) -> None:
        self.cell = cell
        self.queue: "queue.Queue[loadstate.Event]" = queue.Queue()
        self.all: List[loadstate.Event] = []
        self.unsubscribe = cell.subscribe(self._record)
        self._poll = cell.runtime.delivery == loadstate.Delivery.POLL and cell.runtime._core.loop is None

    def _record(self, event: loadstate.Event) -> None:
        self.all.append(event)
        self.queue.put(event)

    def next(self, timeout: float = WAIT) -> loadstate.Event:
        """The next event; fails the test when none comes within ``timeout``."""
        if self._poll:
            deadline = _deadline(timeout)
            while self.queue.empty():
                remaining = deadline()
                if remaining <= 0:
                    pytest.fail(f"no event for cell {self.cell.id} within {timeout} s")
                self.cell.runtime.poll(remaining)
            return self.queue.get_nowait()
        try:
            return self.queue.get(timeout=timeout)
        except queue.Empty:
            pytest.fail(f"no event for cell {self.cell.id} within {timeout} s")

    def take(self, count: int) -> List[loadstate.Event]:
        return [self.next() for _ in range(count)]

    def until(self, predicate: Callable[[loadstate.Event], bool]) -> List[loadstate.Event]:
        """Events up to and including the first one matching ``predicate``."""
        seen = []
        while True:
            event = self.next()
            seen.append(event)
            if predicate(event):
                return seen

    def pending(self) -> List[loadstate.Event]:
        """Events already delivered and not yet taken."""
        if self._poll:
            self.cell.runtime.dispatch()
        items = []
        while not self.queue.empty():
            items.append(self.queue.get_nowait())
        return items


def _deadline(timeout: float) -> Callable[[], float]:
    import time

    end = time.monotonic() + timeout
    return lambda: end - time.monotonic()


class Jobs:
    """An inline loader that hands every job to the test, which ends it by hand."""

    def __init__(self, runtime: loadstate.Runtime, codec: loadstate.Codec = loadstate.BYTES) -> None:
        self.runtime = runtime
        self.queue: "queue.Queue[loadstate.Job]" = queue.Queue()
        self.loader = runtime.loader(self._start, inline=True, codec=codec)
        self.cancelled: List[int] = []
        self._lock = threading.Lock()

    def _start(self, job: loadstate.Job) -> None:
        job.detach()
        job.on_cancel(self._on_cancel)
        self.queue.put(job)

    def _on_cancel(self, job: loadstate.Job) -> None:
        with self._lock:
            self.cancelled.append(job.id)

    def next(self, timeout: float = WAIT) -> loadstate.Job:
        """The next started job (dispatching while waiting in POLL mode)."""
        if self.runtime.delivery == loadstate.Delivery.POLL and self.runtime._core.loop is None:
            deadline = _deadline(timeout)
            while self.queue.empty():
                remaining = deadline()
                if remaining <= 0:
                    pytest.fail(f"no job started within {timeout} s")
                self.runtime.poll(remaining)
            return self.queue.get_nowait()
        try:
            return self.queue.get(timeout=timeout)
        except queue.Empty:
            pytest.fail(f"no job started within {timeout} s")

    def empty(self) -> bool:
        return self.queue.empty()


@pytest.fixture
def jobs(rt: loadstate.Runtime) -> Jobs:
    return Jobs(rt)


def fields(event: loadstate.Event) -> Tuple:
    """The fields of an event that the semantics fix (not times)."""
    return (event.type, event.status, event.flags, event.value, event.request, event.error_domain,
            event.error_code, event.error_message, event.attempt)


def state(status: loadstate.Status, value=None, request=None, flags: int = 0, attempt: int = 0,
          domain: int = 0, code: int = 0, message: Optional[str] = None,
          type: loadstate.EventType = loadstate.EventType.STATE) -> Tuple:
    """The expected ``fields(event)``."""
    return (type, status, loadstate.Flags(flags), value, request, loadstate.Domain(domain), code, message, attempt)


@contextlib.contextmanager
def http_server(handler: Type[http.server.BaseHTTPRequestHandler]) -> Iterator[str]:
    """A threading HTTP server on 127.0.0.1 answering with ``handler``; yields its base URL."""
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()



class RawServer:
    """A TCP server on 127.0.0.1 that hands each connection, with its number (from 1), to ``serve`` on a
    thread of its own and closes it after: for servers that break the protocol on purpose. ``port`` and
    ``connections`` (how many were accepted) are read by the tests; ``close`` stops accepting."""

    def __init__(self, serve: Callable[[socket.socket, int], None]) -> None:
        self.serve = serve
        self.connections = 0
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(16)
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._serve, args=(conn, self.connections), daemon=True).start()

    def _serve(self, conn: socket.socket, number: int) -> None:
        with conn:
            try:
                self.serve(conn, number)
            except OSError:
                pass

    def close(self) -> None:
        self.listener.close()
