"""Many threads at once: every load is accounted for."""

from __future__ import annotations

import threading
from collections import Counter

from conftest import WAIT

import loadstate
from loadstate import Status

THREADS = 8
LOADS = 10_000


def test_10000_loads_from_8_threads_are_all_accounted_for(errors):
    per_thread = LOADS // THREADS
    lock = threading.Lock()
    seen: Counter = Counter()

    def count(event: loadstate.Event) -> None:
        with lock:
            seen[(event.status, event.value)] += 1

    with loadstate.Runtime(on_error=errors) as rt:
        # Half the loads run on worker threads, half inline on the loop thread.
        threaded = rt.loader(lambda job: job.request)
        inline = rt.loader(lambda job: job.request, inline=True)
        barrier = threading.Barrier(THREADS)
        results: dict = {}

        def drive(index: int) -> None:
            barrier.wait()
            loads = []
            for n in range(per_thread):
                request = f"{index}:{n}".encode()
                cell = rt.loadable(threaded if n % 2 else inline, on_event=count)
                loads.append((request, cell.load(request)))
            results[index] = [(request, load.state(WAIT)) for request, load in loads]

        threads = [threading.Thread(target=drive, args=(i,)) for i in range(THREADS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    finals = [pair for index in range(THREADS) for pair in results[index]]
    assert len(finals) == LOADS
    assert all(event.status is Status.LOADED and event.value == request for request, event in finals)
    assert len({event.cell for _, event in finals}) == LOADS
    # Each load produced exactly one LOADING and one LOADED event.
    assert sum(n for (status, _), n in seen.items() if status is Status.LOADING) == LOADS
    loaded = {value: n for (status, value), n in seen.items() if status is Status.LOADED}
    assert len(loaded) == LOADS and set(loaded.values()) == {1}
    assert errors.items == []


def test_loads_on_one_cell_from_many_threads_end_in_one_settled_state(rt):
    cell = rt.loadable(rt.loader(lambda job: job.request))
    events = []
    cell.subscribe(events.append)
    barrier = threading.Barrier(THREADS)
    loads = []

    def drive(index: int) -> None:
        barrier.wait()
        for n in range(100):
            request = f"{index}:{n}".encode()
            loads.append((request, cell.load(request)))

    threads = [threading.Thread(target=drive, args=(i,)) for i in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    outcomes = []
    superseded = 0
    for request, load in loads:
        try:
            outcome = load.state(WAIT)
        except loadstate.Superseded as exc:
            # Another request replaced it: never its value.
            assert exc.request != request
            superseded += 1
            continue
        assert outcome.settled
        # A load that settles gets its own request's outcome, never another's.
        assert outcome.request == request and outcome.value == request
        outcomes.append(outcome)
    assert superseded + len(outcomes) == len(loads) and superseded > 0
    assert cell.snapshot().status is Status.LOADED
    # Events arrive in order, each once.
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert cell.snapshot().seq == events[-1].seq
