"""Loads per second from Python: loadstate under asyncio against plain asyncio.

Both sides run the same driver: C cells, each awaited by one coroutine that
starts N / C loads in turn and checks every settled state (LOADED, with the
request echoed as value). Both deliver every state change to a callback
that counts it, and both build the same Event objects.

* loadstate: a POLL-mode runtime attached to the asyncio loop
  (loop.add_reader on its fd, lds_runtime_dispatch on the loop thread); the
  loader succeeds at once. Measured with an inline loader (it runs in the
  start callback) and with an ``async def`` loader (a task per load).
* bare ctypes (a diagnostic, not the binding): the same loads through the
  C library with no binding at all: a ctypes call per load and per job
  completion, events and loader starts taken as records, a future per
  load; no Event objects, no state callbacks. What any Python host of
  loadstate pays at least.
* Python floor (a diagnostic, no library at all): what any binding has to
  do in Python whatever the library costs: a future per load, the two
  Event objects and their callbacks, the loader's call, the resolved
  future waking the awaiting coroutine; loads handed over in batches, one
  loop callback per batch. The time a binding has left for its foreign
  calls and bookkeeping, to match plain asyncio, is the difference.
* plain asyncio: the same state machine in Python: absent -> loading ->
  loaded | error, a new load cancels the running task, the state before
  the load comes back on cancel; a task per load running an ``async def``
  loader that returns at once; state callbacks.

Usage: python3 bench/python_loads.py [-n LOADS] [-c CELLS] [-r RUNS] [--library PATH] [--once VARIANT]
(make bench-python runs it against dist/libloadstate.so; bench/python_instructions.sh
counts the instructions of one variant with --once).
"""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import gc
import os
import platform
import shlex
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Awaitable, Callable, List, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bindings" / "python"))

import loadstate  # noqa: E402
from loadstate import Domain, Event, EventType, Flags, Status  # noqa: E402
from loadstate.types import make_event  # noqa: E402


class PlainLoadable:
    """A loadable cell in plain asyncio: the state machine loadstate implements, minus the runtime."""

    def __init__(self, cell_id: int, loader: Callable[[bytes], Awaitable[bytes]],
                 on_event: Callable[[Event], Any]) -> None:
        self.id = cell_id
        self._loader = loader
        self._observers = [on_event]
        self._seq = 0
        self._task: Optional[asyncio.Task] = None
        self._restore: Optional[Event] = None
        self.state = make_event((EventType.STATE, cell_id, 0, Status.ABSENT, 0, Flags.NONE, None, None,
                                 Domain.NONE, 0, None, 0, 0, 0, 0, 0))

    def _emit(self, status: Status, value: Any, request: Any, flags: Flags, attempt: int,
              domain: Domain = Domain.NONE, code: int = 0, message: Optional[str] = None) -> Event:
        self._seq += 1
        event = make_event((EventType.STATE, self.id, self._seq, status, 0, flags, value, request, domain, code,
                            message, attempt, 0, 0, 0, int(time.time() * 1000)))
        self.state = event
        for observer in self._observers:
            observer(event)
        return event

    def load(self, request: bytes) -> "asyncio.Task[Event]":
        """Cancels the running load, emits LOADING, runs the loader in a new task; await it for the outcome."""
        if self._task is not None and not self._task.done():
            self._task.cancel()          # superseded: no event; the state to restore stays the first one
        else:
            self._restore = self.state
        self._emit(Status.LOADING, None, request, Flags.NONE, 1)
        self._task = asyncio.get_running_loop().create_task(self._run(request))
        return self._task

    async def _run(self, request: bytes) -> Event:
        try:
            value = await self._loader(request)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - a failed load is an error state
            return self._emit(Status.ERROR, None, request, Flags.NONE, 1, Domain.HOST, 1, str(exc))
        return self._emit(Status.LOADED, value, request, Flags.NONE, 1)

    def cancel(self) -> None:
        """Cancels the running load: the state before it comes back, flagged CANCELLED."""
        if self._task is not None and not self._task.done():
            self._task.cancel()
            restore = self._restore
            self._emit(restore.status, restore.value, restore.request, Flags.CANCELLED, restore.attempt)


async def drive(cells: List[Any], per_cell: int, load: Callable[[Any, bytes], Awaitable[Event]]) -> None:
    async def worker(index: int, cell: Any) -> None:
        request = b"request %d" % index
        for _ in range(per_cell):
            state = await load(cell, request)
            if state.status is not Status.LOADED or state.value != request:
                raise AssertionError(f"cell {index}: unexpected state {state}")

    await asyncio.gather(*(worker(i, cell) for i, cell in enumerate(cells)))


class Counter:
    def __init__(self) -> None:
        self.events = 0

    def __call__(self, event: Event) -> None:
        self.events += 1


async def run_loadstate(cells: int, per_cell: int, inline: bool, library: Optional[str]) -> tuple:
    counter = Counter()
    async with loadstate.Runtime(loadstate.Delivery.POLL, library=library) as rt:
        if inline:
            loader = rt.loader(lambda job: job.raw_request, inline=True)
        else:
            async def echo(job: loadstate.Job) -> bytes:
                return job.raw_request
            loader = rt.loader(echo)
        all_cells = [rt.loadable(loader, on_event=counter) for _ in range(cells)]
        result = await timed(drive(all_cells, per_cell, lambda cell, request: cell.load(request)))
    return result + (counter.events,)


def bare_runtime(cells: int, library: Optional[str]) -> tuple:
    """A POLL runtime made from bare ctypes calls, a host loader and `cells` cells, for the bare variants.

    Returns the CDLL, the runtime, the loader id (a c_uint64), the cell ids,
    and the ctypes callbacks, which must outlive the runtime.
    """
    from loadstate import _library as c

    dll = loadstate.load_library(library).dll
    options = c.RuntimeOptions(ctypes.sizeof(c.RuntimeOptions), int(loadstate.Delivery.POLL), 50)
    rt = ctypes.c_void_p()
    if dll.lds_runtime_new(ctypes.byref(options), ctypes.byref(rt)) != 0:
        raise RuntimeError("lds_runtime_new failed")
    callbacks = (c.LOADER_FN(lambda *a: None), c.EVENT_FN(lambda *a: None), c.FREE_FN(0))
    loader = ctypes.c_uint64()
    dll.lds_loader_new(rt, callbacks[0], None, callbacks[2], ctypes.byref(loader))
    ids = []
    for _ in range(cells):
        cell = ctypes.c_uint64()
        dll.lds_loadable_new(rt, callbacks[1], None, ctypes.byref(cell))
        ids.append(cell.value)
    return dll, rt, loader, ids, callbacks


# The memory at an address, for copying what records point to.
memory_at = (ctypes.c_char * (1 << 40)).from_address


def records_buffer(dll: Any, rt: Any) -> tuple:
    """A records buffer for the bare variants and the call that fills it.

    Returns the buffer and ``take()``, which fills it with
    lds_runtime_dispatch_records and returns the bytes used.
    """
    records = (ctypes.c_uint64 * 8192)()
    used = ctypes.c_size_t()
    used_ref = ctypes.byref(used)
    fill = dll.lds_runtime_dispatch_records

    def take() -> int:
        fill(rt, records, ctypes.sizeof(records), 1024, used_ref)
        return used.value

    return records, take


async def serve_bare(dll: Any, rt: Any, readable: Callable[[], None], work: Awaitable[None]) -> tuple:
    """Times ``work`` with ``readable`` watching the runtime's fd; frees the runtime after."""
    loop = asyncio.get_running_loop()
    fd = dll.lds_runtime_fd(rt)
    loop.add_reader(fd, readable)
    try:
        return await timed(work)
    finally:
        loop.remove_reader(fd)
        dll.lds_runtime_free(rt)


async def run_bare(cells: int, per_cell: int, library: Optional[str]) -> tuple:
    """The loads through the C library from bare ctypes calls (see the module docstring)."""
    from loadstate import _library as c

    dll, rt, loader, ids, _callbacks = bare_runtime(cells, library)
    loop = asyncio.get_running_loop()
    waiting: dict = {}
    counter = Counter()
    records, take = records_buffer(dll, rt)
    head, event, request = c.RECORD_HEAD.unpack_from, c.EVENT_LAYOUT.unpack_from, c.RECORD_REQUEST.unpack_from
    memory = memory_at
    succeed, load = dll.lds_job_succeed, dll.lds_loadable_load

    def readable() -> None:
        offset, end = 0, take()
        while offset < end:
            size, what, _, job = head(records, offset)
            if what == c.RECORD_START:
                address, length = request(records, offset + c.RECORD_REQUEST_OFFSET)
                succeed(rt, job, memory(address)[:length], length)
            else:
                raw = event(records, offset + c.RECORD_HEAD.size)
                counter.events += 1
                if raw[3] == int(Status.LOADED):
                    waiting.pop(raw[1]).set_result(memory(raw[6])[:raw[7]])
            offset += size

    async def one(cell: int, request: bytes) -> bytes:
        future = loop.create_future()
        waiting[cell] = future
        load(rt, cell, loader, request, len(request), None)
        return await future

    async def worker(index: int, cell: int) -> None:
        request = b"request %d" % index
        for _ in range(per_cell):
            if await one(cell, request) != request:
                raise AssertionError(f"cell {index}: unexpected value")

    result = await serve_bare(dll, rt, readable, asyncio.gather(*(worker(i, cell) for i, cell in enumerate(ids))))
    return result + (counter.events,)


async def run_bare_batched(cells: int, per_cell: int, library: Optional[str]) -> tuple:
    """The loads from bare ctypes calls, batched (see the module docstring)."""
    from loadstate import _library as c

    dll, rt, loader_id, ids, _callbacks = bare_runtime(cells, library)
    loader = loader_id.value
    loop = asyncio.get_running_loop()
    waiting: dict = {}
    counter = Counter()
    records, take = records_buffer(dll, rt)
    record = c.RECORD_LAYOUT.unpack_from
    memory = memory_at
    submit, pack = dll.lds_runtime_submit, c.OP_LAYOUT.pack
    statuses = {int(s): s for s in Status}
    calls: list = []

    def flush() -> None:
        if not calls:
            return
        batch = calls[:]
        calls.clear()
        blob = b"".join([data for _, _, _, data in batch])
        address = ctypes.cast(blob, ctypes.c_void_p).value or 0
        ops = []
        for op, target, loader_of, data in batch:
            ops.append(pack(op, 0, target, loader_of, address, len(data)))
            address += len(data)
        if submit(rt, b"".join(ops), len(batch), None) != len(batch):
            raise RuntimeError("lds_runtime_submit refused a call")

    def readable() -> None:
        offset, end = 0, take()
        while offset < end:
            r = record(records, offset)
            if r[1] == c.RECORD_START:
                calls.append((c.OP_SUCCEED, r[3], 0, memory(r[12])[:r[13]]))
            else:
                value = memory(r[10])[:r[11]] if r[10] else None
                event = make_event((EventType.STATE, r[5], r[6], statuses[r[7]], r[8], Flags.NONE, value,
                                    memory(r[12])[:r[13]], Domain.NONE, 0, None, r[17], 0, 0, 0, r[21]))
                counter(event)
                if r[7] == 2:
                    waiting.pop(r[5]).set_result(event)
            offset += r[0]
        flush()

    def load(cell: int, request: bytes) -> "asyncio.Future[Event]":
        future = waiting[cell] = loop.create_future()
        if not calls:
            loop.call_soon(flush)
        calls.append((c.OP_LOAD, cell, loader, request))
        return future

    result = await serve_bare(dll, rt, readable, drive(ids, per_cell, load))
    return result + (counter.events,)


async def run_floor(cells: int, per_cell: int) -> tuple:
    """The Python work of a load with no library (see the module docstring)."""
    loop = asyncio.get_running_loop()
    counter = Counter()
    pending: list = []
    loader = lambda request: request  # noqa: E731 - the inline loader of the loadstate variant
    stamp = int(time.time() * 1000)

    def process() -> None:
        batch = pending[:]
        pending.clear()
        for cell, request, future in batch:
            counter(make_event((EventType.STATE, cell, 1, Status.LOADING, 0, Flags.NONE, None, request, Domain.NONE,
                                0, None, 1, 0, 0, 0, stamp)))
            value = loader(request)
            loaded = make_event((EventType.STATE, cell, 2, Status.LOADED, 0, Flags.NONE, value, request, Domain.NONE,
                                 0, None, 1, 0, 0, 0, stamp))
            counter(loaded)
            future.set_result(loaded)

    def load(cell: int, request: bytes) -> "asyncio.Future[Event]":
        future = loop.create_future()
        if not pending:
            loop.call_soon(process)
        pending.append((cell, request, future))
        return future

    result = await timed(drive(list(range(1, cells + 1)), per_cell, load))
    return result + (counter.events,)


async def run_plain(cells: int, per_cell: int) -> tuple:
    counter = Counter()

    async def echo(request: bytes) -> bytes:
        return request

    all_cells = [PlainLoadable(i + 1, echo, counter) for i in range(cells)]
    result = await timed(drive(all_cells, per_cell, lambda cell, request: cell.load(request)))
    return result + (counter.events,)


async def timed(work: Awaitable[None]) -> tuple:
    gc.collect()
    wall, cpu = time.perf_counter(), time.thread_time()
    await work
    return time.perf_counter() - wall, time.thread_time() - cpu


# Each variant: its key for --once, its name in the table, its label in the
# ratio lines (None for plain asyncio, the denominator), and how to run it
# with (cells, loads per cell, library).
VARIANTS = [
    ("inline", "loadstate, POLL on asyncio, inline loader", "inline loader",
     lambda cells, per_cell, library: run_loadstate(cells, per_cell, True, library)),
    ("async", "loadstate, POLL on asyncio, async def loader", "async def loader",
     lambda cells, per_cell, library: run_loadstate(cells, per_cell, False, library)),
    ("bare", "bare ctypes (diagnostic, no binding)", "bare ctypes", run_bare),
    ("bare-batched", "bare ctypes, batched, events (diagnostic)", "bare batched + events", run_bare_batched),
    ("floor", "Python floor (diagnostic, no library)", "Python floor",
     lambda cells, per_cell, library: run_floor(cells, per_cell)),
    ("plain", "plain asyncio, a task per load", None, lambda cells, per_cell, library: run_plain(cells, per_cell)),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--loads", type=int, default=100_000, help="loads per variant and run (100000)")
    parser.add_argument("-c", "--cells", type=int, default=1000, help="cells loaded concurrently (1000)")
    parser.add_argument("-r", "--runs", type=int, default=3, help="runs of each variant, interleaved (3)")
    parser.add_argument("--library", help="libloadstate.so to use (default: the binding's search)")
    parser.add_argument("--once", choices=[key for key, _, _, _ in VARIANTS],
                        help="run this variant once, print nothing (for profilers: bench/python_instructions.sh)")
    args = parser.parse_args()
    per_cell = max(1, args.loads // args.cells)
    loads = per_cell * args.cells
    if args.once:
        run = next(run for key, _, _, run in VARIANTS if key == args.once)
        asyncio.run(run(args.cells, per_cell, args.library))
        return

    command = " ".join(shlex.quote(a) for a in [Path(sys.executable).name, *sys.argv])
    if os.environ.get(loadstate.ENV_VAR):
        command = f"{loadstate.ENV_VAR}={shlex.quote(os.environ[loadstate.ENV_VAR])} {command}"
    library = loadstate.load_library(args.library)
    print(f"# {command}")
    print(f"# python {platform.python_version()}, {library.path} (loadstate {'.'.join(map(str, library.version))}),"
          f" {os.cpu_count()} CPUs")
    print(f"# {loads} loads on {args.cells} cells ({per_cell} in turn per cell), {args.runs} runs, best shown")

    results: dict = {name: [] for _, name, _, _ in VARIANTS}
    for _ in range(args.runs):
        for _, name, _, run in VARIANTS:
            wall, cpu, events = asyncio.run(run(args.cells, per_cell, args.library))
            if events != 2 * loads:
                raise AssertionError(f"{name}: {events} events for {loads} loads, expected {2 * loads}")
            results[name].append((wall, cpu))

    print(f"{'variant':46} {'loads/s':>10} {'us/load':>8} {'cpu us/load':>12} {'median loads/s':>15}")
    rates = {}
    for name, runs in results.items():
        wall, cpu = min(runs)
        rates[name] = loads / wall
        median = loads / statistics.median(w for w, _ in runs)
        print(f"{name:46} {loads / wall:10.0f} {wall / loads * 1e6:8.2f} {cpu / loads * 1e6:12.2f} {median:15.0f}")
    plain = next(rates[name] for _, name, label, _ in VARIANTS if label is None)
    for _, name, label, _ in VARIANTS:
        if label is not None:
            print(f"ratio {label} / plain asyncio: {rates[name] / plain:.2f}")


if __name__ == "__main__":
    main()
