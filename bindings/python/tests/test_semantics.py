"""One test per row of the design's semantics table (and the rules the header adds)."""

from __future__ import annotations

import pytest
from conftest import WAIT, Jobs, Recorder, fields, state

import loadstate
from loadstate import Domain, EventType, Flags, Status

S = Flags.NONE
PARTIAL = Flags.PARTIAL
REFRESHING = Flags.REFRESHING
CANCELLED = Flags.CANCELLED
HOST = Domain.HOST


def test_new_cell_is_absent_with_seq_0(rt):
    cell = rt.loadable()
    snap = cell.snapshot()
    assert (snap.seq, snap.type, snap.status) == (0, EventType.STATE, Status.ABSENT)
    assert snap.value is None and snap.request is None
    assert cell.latest.seq == 0 and cell.latest.status is Status.ABSENT
    assert rt.process().latest.status is Status.IDLE


def test_events_are_numbered_from_1(rt, jobs):
    cell = rt.loadable(jobs.loader)
    log = Recorder(cell)
    cell.load(b"a")
    jobs.next().succeed(b"v")
    cell.reset()
    assert [e.seq for e in log.take(3)] == [1, 2, 3]
    assert cell.snapshot().seq == 3


def test_load_emits_loading_with_request_then_loaded(rt):
    cell = rt.loadable(rt.loader(lambda job: job.request + b"!"))
    log = Recorder(cell)
    final = cell.load(b"req").state(WAIT)
    assert [fields(e) for e in log.take(2)] == [
        state(Status.LOADING, request=b"req", attempt=1),
        state(Status.LOADED, value=b"req!", request=b"req", attempt=1),
    ]
    assert fields(final) == state(Status.LOADED, value=b"req!", request=b"req", attempt=1)


def test_load_failure_is_an_error_in_the_host_domain(rt):
    @rt.loader
    def fails(job):
        raise loadstate.LoadFailed(42, "nope")

    cell = rt.loadable(fails)
    final = cell.load(b"r").state(WAIT)
    assert fields(final) == state(Status.ERROR, request=b"r", attempt=1, domain=HOST, code=42, message="nope")
    assert isinstance(final.error, loadstate.LoadFailed) and final.error.code == 42


def test_load_cancels_the_running_job_without_an_event_for_it(rt, jobs):
    cell = rt.loadable(jobs.loader)
    log = Recorder(cell)
    cell.load(b"first")
    first = jobs.next()
    cell.load(b"second")
    second = jobs.next()
    assert [fields(e) for e in log.take(2)] == [
        state(Status.LOADING, request=b"first", attempt=1),
        state(Status.LOADING, request=b"second", attempt=1),
    ]
    assert first.cancelled and not second.cancelled
    assert jobs.cancelled == [first.id]
    with pytest.raises(loadstate.Cancelled):
        first.succeed(b"late")
    second.succeed(b"v2")
    assert fields(log.next()) == state(Status.LOADED, value=b"v2", request=b"second", attempt=1)
    assert log.pending() == []


def test_silent_load_keeps_the_state_flagged_refreshing_and_replaces_the_value(rt, jobs):
    cell = rt.loadable(jobs.loader)
    log = Recorder(cell)
    cell.set_loaded(b"old")
    cell.load(b"q", silent=True)
    job = jobs.next()
    job.succeed(b"new")
    assert [fields(e) for e in log.take(3)] == [
        state(Status.LOADED, value=b"old"),
        state(Status.LOADED, value=b"old", flags=REFRESHING, attempt=1),
        state(Status.LOADED, value=b"new", request=b"q", attempt=1),
    ]


def test_refresh_reloads_the_last_request_silently(rt, jobs):
    cell = rt.loadable(jobs.loader)
    log = Recorder(cell)
    cell.load(b"q")
    jobs.next().succeed(b"one")
    refreshed = cell.refresh()
    job = jobs.next()
    assert job.request == b"q"
    job.succeed(b"two")
    assert [fields(e) for e in log.take(4)] == [
        state(Status.LOADING, request=b"q", attempt=1),
        state(Status.LOADED, value=b"one", request=b"q", attempt=1),
        state(Status.LOADED, value=b"one", request=b"q", flags=REFRESHING, attempt=1),
        state(Status.LOADED, value=b"two", request=b"q", attempt=1),
    ]
    assert refreshed.state(WAIT).value == b"two"


def test_refresh_works_after_a_failure(rt, jobs):
    cell = rt.loadable(jobs.loader)
    log = Recorder(cell)
    cell.load(b"q")
    jobs.next().fail(7, "down")
    cell.refresh()
    jobs.next().succeed(b"up")
    assert [fields(e) for e in log.take(4)][2:] == [
        state(Status.ERROR, request=b"q", flags=REFRESHING, attempt=1, domain=HOST, code=7, message="down"),
        state(Status.LOADED, value=b"up", request=b"q", attempt=1),
    ]


def test_yields_are_partial_and_finish_clears_partial(rt, jobs):
    cell = rt.loadable(jobs.loader)
    log = Recorder(cell)
    cell.load(b"q")
    job = jobs.next()
    job.yield_(b"1")
    job.yield_(b"12")
    job.finish()
    assert [fields(e) for e in log.take(4)] == [
        state(Status.LOADING, request=b"q", attempt=1),
        state(Status.LOADED, value=b"1", request=b"q", flags=PARTIAL, attempt=1),
        state(Status.LOADED, value=b"12", request=b"q", flags=PARTIAL, attempt=1),
        state(Status.LOADED, value=b"12", request=b"q", attempt=1),
    ]


def test_succeed_after_yields_ends_with_the_final_value(rt, jobs):
    cell = rt.loadable(jobs.loader)
    log = Recorder(cell)
    cell.load(b"q")
    job = jobs.next()
    job.yield_(b"part")
    job.succeed(b"whole")
    assert [fields(e) for e in log.take(3)][1:] == [
        state(Status.LOADED, value=b"part", request=b"q", flags=PARTIAL, attempt=1),
        state(Status.LOADED, value=b"whole", request=b"q", attempt=1),
    ]


def test_yield_in_a_silent_load_stays_refreshing(rt, jobs):
    cell = rt.loadable(jobs.loader)
    log = Recorder(cell)
    cell.set_loaded(b"old")
    cell.load(b"q", silent=True)
    jobs.next().yield_(b"part")
    assert fields(log.take(3)[2]) == state(Status.LOADED, value=b"part", request=b"q", flags=PARTIAL | REFRESHING,
                                           attempt=1)


def test_finish_without_yield_restores_the_previous_state_without_cancelled_flag(rt, jobs):
    cell = rt.loadable(jobs.loader)
    log = Recorder(cell)
    cell.set_loaded(b"before")
    cell.load(b"q")
    jobs.next().finish()
    assert [fields(e) for e in log.take(3)][2] == state(Status.LOADED, value=b"before", flags=Flags.NO_VALUE)


def test_generator_loader_yields_partials_then_returns_the_value(rt):
    @rt.loader
    def gen(job):
        yield b"a"
        yield b"ab"
        return b"abc"

    cell = rt.loadable(gen)
    log = Recorder(cell)
    assert cell.load(b"q").state(WAIT).value == b"abc"
    assert [(e.value, e.flags) for e in log.take(4)] == [(None, S), (b"a", PARTIAL), (b"ab", PARTIAL), (b"abc", S)]


@pytest.mark.parametrize("how", ["outside", "cancel_self"])
def test_cancel_restores_the_state_before_the_load_flagged_cancelled(rt, jobs, how):
    cell = rt.loadable(jobs.loader)
    log = Recorder(cell)
    cell.set_loaded(b"before")
    load = cell.load(b"q")
    job = jobs.next()
    job.yield_(b"partial")
    log.take(3)
    if how == "outside":
        cell.cancel()
    else:
        job.cancel()
    restored = log.next()
    assert fields(restored) == state(Status.LOADED, value=b"before", flags=CANCELLED)
    assert load.state(WAIT) == restored
    assert job.cancelled and jobs.cancelled == [job.id]
    with pytest.raises(loadstate.Cancelled):
        job.succeed(b"late")


def test_cancel_never_leaves_the_cell_loading(rt, jobs):
    cell = rt.loadable(jobs.loader)
    log = Recorder(cell)
    cell.load(b"q")
    jobs.next()
    cell.cancel()
    assert [fields(e) for e in log.take(2)][1] == state(Status.ABSENT, flags=CANCELLED)


def test_cancel_without_a_running_job_does_nothing(rt, jobs):
    cell = rt.loadable(jobs.loader)
    log = Recorder(cell)
    cell.set_loaded(b"v")
    cell.cancel()
    cell.set_error(1)
    assert [e.status for e in log.take(2)] == [Status.LOADED, Status.ERROR]
    assert log.pending() == []


@pytest.mark.parametrize("how", ["outside", "reset_self"])
def test_reset_cancels_the_job_and_makes_the_cell_absent(rt, jobs, how):
    cell = rt.loadable(jobs.loader)
    log = Recorder(cell)
    cell.load(b"q")
    job = jobs.next()
    job.yield_(b"part")
    log.take(2)
    if how == "outside":
        cell.reset()
    else:
        job.reset()
    assert fields(log.next()) == state(Status.ABSENT)
    assert jobs.cancelled == [job.id]
    with pytest.raises(loadstate.Cancelled):
        job.yield_(b"late")


def test_reset_of_an_absent_idle_cell_emits_nothing(rt):
    cell = rt.loadable()
    log = Recorder(cell)
    cell.reset()
    cell.set_loaded(b"v")
    assert log.next().seq == 1
    assert log.pending() == []


def test_reset_keeps_the_request_for_refresh(rt, jobs):
    cell = rt.loadable(jobs.loader)
    cell.load(b"q")
    jobs.next().succeed(b"v")
    cell.reset()
    cell.refresh()
    assert jobs.next().request == b"q"


def test_set_loaded_cancels_the_job_and_sets_the_value(rt, jobs):
    cell = rt.loadable(jobs.loader)
    log = Recorder(cell)
    cell.load(b"q")
    job = jobs.next()
    cell.set_loaded(b"manual")
    assert fields(log.take(2)[1]) == state(Status.LOADED, value=b"manual")
    assert jobs.cancelled == [job.id]
    with pytest.raises(loadstate.Cancelled):
        job.succeed(b"late")


def test_set_error_cancels_the_job_and_sets_a_host_error(rt, jobs):
    cell = rt.loadable(jobs.loader)
    log = Recorder(cell)
    cell.load(b"q")
    job = jobs.next()
    cell.set_error(-12, "manual")
    cell.set_error(3)
    assert [fields(e) for e in log.take(3)][1:] == [
        state(Status.ERROR, domain=HOST, code=-12, message="manual"),
        state(Status.ERROR, domain=HOST, code=3),
    ]
    assert jobs.cancelled == [job.id]


@pytest.mark.parametrize("op", ["yield_", "succeed", "finish", "fail", "progress", "cancel", "reset", "on_cancel"])
def test_a_superseded_job_changes_nothing_and_gets_cancelled(rt, jobs, op):
    cell = rt.loadable(jobs.loader)
    log = Recorder(cell)
    cell.load(b"q1")
    stale = jobs.next()
    cell.load(b"q2")
    jobs.next()
    log.take(2)
    args = {"yield_": (b"x",), "succeed": (b"x",), "fail": (1, "m"), "progress": (1, 2),
            "on_cancel": (lambda job: None,)}.get(op, ())
    with pytest.raises(loadstate.Cancelled) as info:
        getattr(stale, op)(*args)
    assert info.value.code == -4 and info.value.message == loadstate.strerror(-4)
    assert stale.cancelled
    cell.set_loaded(b"marker")
    assert fields(log.next()) == state(Status.LOADED, value=b"marker")


def test_a_completed_job_gets_cancelled_on_a_second_completion(rt, jobs):
    cell = rt.loadable(jobs.loader)
    cell.load(b"q")
    job = jobs.next()
    job.succeed(b"v")
    with pytest.raises(loadstate.Cancelled):
        job.succeed(b"again")
    assert job.cancelled
    assert jobs.cancelled == []  # cancel hooks do not run when a job ends by succeed


def test_progress_reports_without_changing_the_state(rt, jobs):
    cell = rt.loadable(jobs.loader)
    log = Recorder(cell)
    cell.load(b"q")
    job = jobs.next()
    job.progress(3, 10)
    job.progress(4)
    events = log.take(3)[1:]
    assert [(e.type, e.status, e.progress_done, e.progress_total) for e in events] == [
        (EventType.PROGRESS, Status.LOADING, 3, 10), (EventType.PROGRESS, Status.LOADING, 4, 0)]


def test_interrupts_fire_at_growing_delays_while_the_job_runs_and_none_after(rt, jobs):
    cell = rt.loadable(jobs.loader)
    log = Recorder(cell)
    cell.load(b"q", interrupts=[0.02, 0.03, 0.4])
    job = jobs.next()
    log.next()
    first, second = log.take(2)
    assert [e.type for e in (first, second)] == [EventType.INTERRUPT] * 2
    assert first.elapsed_ms >= 20 and second.elapsed_ms >= 50
    assert first.status is Status.LOADING and not first.flags
    job.succeed(b"v")
    assert log.next().status is Status.LOADED
    # Wait, on another cell's timeout, past the moment the third interrupt was due.
    clock = rt.loadable(jobs.loader)
    clock_log = Recorder(clock)
    clock.load(b"clock", timeout=0.5)
    jobs.next()
    clock_log.until(lambda e: e.status is Status.ERROR)
    assert log.pending() == []


def test_timeout_cancels_the_job_and_makes_a_timed_out_error(rt, jobs):
    cell = rt.loadable(jobs.loader)
    log = Recorder(cell)
    cell.load(b"q", timeout=0.05)
    job = jobs.next()
    events = log.take(2)
    error = events[1]
    assert fields(error)[:-2] == state(Status.ERROR, request=b"q", attempt=1, domain=Domain.LOADSTATE,
                                       code=loadstate.TimedOut.code)[:-2]
    assert error.attempt == 1
    assert job.cancelled and jobs.cancelled == [job.id]


def test_retries_keep_loading_with_growing_attempts_then_fail(rt, jobs):
    cell = rt.loadable(jobs.loader)
    log = Recorder(cell)
    cell.load(b"q", retries=2, retry_base=0.001, retry_max=0.005)
    for _ in range(3):
        jobs.next().fail(9, "again")
    assert [fields(e) for e in log.take(4)] == [
        state(Status.LOADING, request=b"q", attempt=1),
        state(Status.LOADING, request=b"q", attempt=2),
        state(Status.LOADING, request=b"q", attempt=3),
        state(Status.ERROR, request=b"q", attempt=3, domain=HOST, code=9, message="again"),
    ]


def test_a_retry_that_succeeds_reports_its_attempt(rt, jobs):
    cell = rt.loadable(jobs.loader)
    log = Recorder(cell)
    final = cell.load(b"q", retries=1, retry_base=0.001)
    jobs.next().fail(1)
    jobs.next().succeed(b"ok")
    assert [fields(e) for e in log.take(3)] == [
        state(Status.LOADING, request=b"q", attempt=1),
        state(Status.LOADING, request=b"q", attempt=2),
        state(Status.LOADED, value=b"ok", request=b"q", attempt=2),
    ]
    assert final.state(WAIT).attempt == 2


def test_refresh_without_an_earlier_load_is_a_wrong_state(rt):
    cell = rt.loadable()
    with pytest.raises(loadstate.WrongState) as info:
        cell.refresh()
    assert info.value.code == -3


def test_refresh_after_the_loader_was_freed_is_not_found(rt):
    loader = rt.loader(lambda job: b"v")
    cell = rt.loadable()
    cell.load(b"q", loader=loader).state(WAIT)
    loader.close()
    with pytest.raises(loadstate.NotFound):
        cell.refresh()


def test_process_runs_report_kind_and_ignore_values(rt, jobs):
    proc = rt.process(jobs.loader)
    log = Recorder(proc)
    proc.run(kind=5, request=b"r")
    job = jobs.next()
    job.yield_(b"ignored")  # process cells ignore values: no event
    job.succeed(b"ignored too")
    proc.run(kind=6)
    jobs.next().fail(2, "broke")
    assert [(e.status, e.kind, e.value, e.flags) for e in log.take(4)] == [
        (Status.RUNNING, 5, None, S), (Status.FINISHED, 5, None, S),
        (Status.RUNNING, 6, None, S), (Status.FAILED, 6, None, S)]
    assert log.all[-1].error_code == 2 and log.all[-1].error_domain is HOST


def test_process_cancel_and_reset(rt, jobs):
    proc = rt.process(jobs.loader)
    log = Recorder(proc)
    proc.run(kind=1)
    jobs.next().succeed()
    proc.run(kind=2)
    jobs.next()
    proc.cancel()
    proc.run(kind=3)
    jobs.next()
    proc.reset()
    events = log.take(6)
    assert [(e.status, e.kind, e.flags) for e in events[2:]] == [
        (Status.RUNNING, 2, S), (Status.FINISHED, 1, CANCELLED), (Status.RUNNING, 3, S), (Status.IDLE, 0, S)]


def test_freeing_a_cell_cancels_its_job_and_stops_its_events(rt, jobs):
    cell = rt.loadable(jobs.loader)
    log = Recorder(cell)
    load = cell.load(b"q")
    job = jobs.next()
    log.next()
    cell.close()
    assert job.wait_cancelled(WAIT)
    with pytest.raises(loadstate.Cancelled):
        job.succeed(b"late")
    with pytest.raises(loadstate.Closed):
        load.state(WAIT)
    assert log.pending() == []
    with pytest.raises(loadstate.NotFound):
        rt._core.check(rt._core.dll.lds_loadable_load(rt._core.c_handle, cell.id, jobs.loader.id, b"", 0, None))


def test_job_ids_that_were_never_jobs_are_not_found(rt):
    cell = rt.loadable()
    fake = loadstate.Job(rt._core, cell.id, b"", loadstate.BYTES, "test")
    with pytest.raises(loadstate.NotFound):
        fake.succeed(b"v")
    with pytest.raises(loadstate.NotFound):
        fake.on_cancel(lambda job: None)


def test_a_64_mib_value_loads_and_oversize_lengths_are_too_big(rt, jobs):
    big = bytes(range(256)) * (256 * 1024)
    assert len(big) == 64 * 1024 * 1024
    cell = rt.loadable(jobs.loader)
    log = Recorder(cell)
    cell.load(b"q")
    job = jobs.next()
    core = rt._core
    # The library refuses the length before reading: a small buffer with a huge length shows the mapping.
    rc = core.dll.lds_job_yield(core.c_handle, job.id, b"x", loadstate.VALUE_MAX + 1)
    with pytest.raises(loadstate.TooBig):
        core.check(rc)
    job.succeed(big)
    final = log.take(2)[1]
    assert final.value == big


def test_error_classes_carry_code_and_library_message(rt):
    classes = {-1: loadstate.InvalidArgument, -2: loadstate.NotFound, -3: loadstate.WrongState,
               -4: loadstate.Cancelled, -5: loadstate.TimedOut, -6: loadstate.OutOfMemory, -7: loadstate.Closed,
               -8: loadstate.TooBig, -9: loadstate.IOFailure, -10: loadstate.Busy}
    for code, cls in classes.items():
        error = rt.library.error(code, "doing it")
        assert type(error) is cls and isinstance(error, loadstate.Error)
        assert error.code == code and error.message == loadstate.strerror(code) != "unknown error"
        assert str(error) == f"doing it: {error.message} (code {code})"
    unknown = rt.library.error(-99)
    assert type(unknown) is loadstate.Error and unknown.message == "unknown error"


def test_invalid_arguments_are_refused_before_any_event(rt, jobs):
    cell = rt.loadable(jobs.loader)
    with pytest.raises(loadstate.InvalidArgument):
        cell.load(b"q", timeout=-1)
    with pytest.raises(loadstate.InvalidArgument):
        cell.load(b"q", interrupts=[0.01] * 65)
    with pytest.raises(loadstate.InvalidArgument):
        rt.loadable().load(b"q")  # no loader
    with pytest.raises(TypeError):
        cell.load("text needs a codec")
    with loadstate.Runtime() as other, pytest.raises(loadstate.InvalidArgument):
        cell.load(b"q", loader=Jobs(other).loader)  # a loader of another runtime
    log = Recorder(cell)
    cell.set_loaded(b"marker")
    assert log.next().seq == 1
