"""Runtime.observe: every cell event, job start and job end of a runtime, and the Observer that removes it."""

from __future__ import annotations

import queue
import time
from typing import List

import pytest
from conftest import WAIT

import loadstate
from loadstate import Domain, JobOutcome, Observation, Observed, Status


class Collected:
    """Collects observations; waits for them without sleeping."""

    def __init__(self) -> None:
        self.queue: "queue.Queue[Observation]" = queue.Queue()

    def __call__(self, observation: Observation) -> None:
        self.queue.put(observation)

    def next(self, rt: loadstate.Runtime) -> Observation:
        if rt.delivery == loadstate.Delivery.POLL:
            deadline = time.monotonic() + WAIT
            while self.queue.empty() and time.monotonic() < deadline:
                rt.poll(0.01)
        return self.queue.get(timeout=WAIT)

    def take(self, rt: loadstate.Runtime, n: int) -> List[Observation]:
        return [self.next(rt) for _ in range(n)]


@pytest.mark.parametrize("delivery", [loadstate.Delivery.LOOP, loadstate.Delivery.POLL])
def test_a_load_is_observed_from_its_first_event_to_its_job_end_with_its_duration(delivery):
    with loadstate.Runtime(delivery) as rt:
        started: "queue.Queue[loadstate.Job]" = queue.Queue()

        def hold(job: loadstate.Job) -> None:
            job.detach()
            started.put(job)

        loader = rt.loader(hold, inline=True, codec=loadstate.TEXT)
        cell = rt.loadable(loader, codec=loadstate.TEXT)
        seen = Collected()
        with rt.observe(seen) as observer:
            load = cell.load("GET /a")
            loading, start = seen.take(rt, 2)
            job = started.get(timeout=WAIT) if delivery == loadstate.Delivery.LOOP else None
            if job is None:
                while started.empty():
                    rt.poll(0.01)
                job = started.get_nowait()
            time.sleep(0.05)
            job.succeed("done")
            end, loaded = seen.take(rt, 2)
            assert load.value(WAIT) == "done"
        assert observer.closed
    assert loading.what == Observed.EVENT and loading.event is not None
    assert (loading.event.cell, loading.event.status, loading.job, loading.request) == (cell.id, Status.LOADING, 0, None)
    assert loading.event.request == "GET /a"
    assert start.what == Observed.JOB_START and start.outcome is None and start.event is None
    assert (start.job, start.loader, start.cell, start.attempt, start.request) == (job.id, loader.id, cell.id, 1,
                                                                                   b"GET /a")
    assert end.what == Observed.JOB_END and end.outcome == JobOutcome.SUCCEEDED
    assert (end.job, end.loader, end.cell, end.attempt, end.error_domain) == (job.id, loader.id, 0, 1, Domain.NONE)
    assert 50_000_000 <= end.duration_ns <= end.time_ns - start.time_ns + 1_000_000
    assert start.time_ns <= time.monotonic_ns()
    # The event as the cell's subscribers get it: decoded with the cell's codec.
    assert loaded.what == Observed.EVENT and loaded.event is not None
    assert (loaded.event.status, loaded.event.value) == (Status.LOADED, "done")


def test_a_failed_job_ends_with_its_error_and_a_cancelled_one_as_cancelled(rt, jobs):
    seen = Collected()
    rt.observe(seen)
    cell = rt.loadable(jobs.loader)
    load = cell.load(b"x")
    jobs.next().fail(7, "boom")
    assert load.state(WAIT).status == Status.ERROR
    ends = [o for o in seen.take(rt, 4) if o.what == Observed.JOB_END]
    assert [(o.outcome, o.error_domain, o.error_code) for o in ends] == [(JobOutcome.FAILED, Domain.HOST, 7)]
    cell.load(b"y")
    jobs.next()
    cell.cancel()
    observations = seen.take(rt, 4)
    assert [o.what for o in observations] == [Observed.EVENT, Observed.JOB_START, Observed.JOB_END, Observed.EVENT]
    # The cancel restores the state from before the load, flagged CANCELLED.
    assert observations[2].outcome == JobOutcome.CANCELLED and observations[3].event.cancelled
    assert observations[3].event.status == Status.ERROR


def test_a_closed_observer_is_not_called_again(rt):
    seen = Collected()
    observer = rt.observe(seen)
    cell = rt.loadable(rt.loader(lambda job: job.request))
    assert cell.load(b"one").value(WAIT) == b"one"
    seen.take(rt, 4)
    observer.close()
    observer.close()
    assert observer.closed
    assert cell.load(b"two").value(WAIT) == b"two"
    # A later observer sees the next load; the closed one saw nothing more.
    later = Collected()
    with rt.observe(later):
        assert cell.load(b"three").value(WAIT) == b"three"
        assert later.take(rt, 4)[-1].event.value == b"three"
    assert seen.queue.empty()


def test_a_new_observer_replaces_the_last_and_closing_the_runtime_ends_it():
    rt = loadstate.Runtime()
    first, second = Collected(), Collected()
    one = rt.observe(first)
    two = rt.observe(second)
    assert one.closed and not two.closed
    cell = rt.loadable(rt.loader(lambda job: job.request))
    assert cell.load(b"r").value(WAIT) == b"r"
    assert len(second.take(rt, 4)) == 4 and first.queue.empty()
    one.close()  # replaced already: removes nothing
    assert not two.closed
    rt.close()
    assert two.closed
    two.close()


def test_an_exception_in_the_observer_goes_to_the_error_handler(rt, errors):
    errors.expected = True

    def fail(observation: Observation) -> None:
        raise ValueError("observer failed")

    rt.observe(fail)
    cell = rt.loadable(rt.loader(lambda job: job.request))
    assert cell.load(b"r").value(WAIT) == b"r"
    assert errors.arrived.wait(WAIT)
    exc, context = errors.items[0]
    assert isinstance(exc, ValueError) and "runtime observer" in context


def test_observe_refuses_what_is_not_callable_and_a_closed_runtime():
    rt = loadstate.Runtime()
    with pytest.raises(TypeError):
        rt.observe(None)  # type: ignore[arg-type]
    rt.close()
    with pytest.raises(loadstate.Closed):
        rt.observe(lambda observation: None)
