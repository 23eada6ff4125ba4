"""Random sequences of operations on one cell, checked event by event against a pure-Python model.

The runtime is in POLL mode and the test dispatches, so the model and the
library stay in step: after each operation the test waits until the events
the model predicts have arrived, compares them field by field, and checks
with a snapshot that the library emitted no more than that.

The model follows the header's rules:

* load cancels the running job (no event for it) and emits LOADING carrying
  the request, attempt 1; a silent load (and refresh) emits the current
  state flagged REFRESHING, attempt 1;
* yield: LOADED + PARTIAL (still REFRESHING when silent); succeed: LOADED,
  flags 0; finish: LOADED keeping the last yielded value, or the state from
  before the load when nothing was yielded (flagged NO_VALUE, not CANCELLED); fail: ERROR
  in the host domain;
* cancel (outside or from the job): the state from before the load, flagged
  CANCELLED; nothing without a running job. "Before the load" is before the
  first load of a chain of superseding loads (a load over a running one
  keeps the state the first one would restore);
* reset (outside or from the job): ABSENT, no event when already absent
  with no job; refresh reloads the last request, WrongState before any load;
* set_loaded / set_error cancel the job: request none, attempt 0;
* a job that no longer runs gets Cancelled for every operation; cancel hooks
  run exactly for jobs cancelled, superseded or reset, never for jobs that
  ended by succeed, finish or fail.
"""

from __future__ import annotations

import dataclasses
from typing import List, Optional

import hypothesis.strategies as st
import pytest
from conftest import Jobs, Recorder, fields
from hypothesis import HealthCheck, settings
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

import loadstate
from loadstate import Domain, EventType, Flags, Status


@dataclasses.dataclass
class State:
    status: Status = Status.ABSENT
    value: Optional[bytes] = None
    request: Optional[bytes] = None
    domain: Domain = Domain.NONE
    code: int = 0
    message: Optional[str] = None
    partial: bool = False
    refreshing: bool = False
    attempt: int = 0

    def expect(self, type: EventType = EventType.STATE, cancelled: bool = False, no_value: bool = False) -> tuple:
        flags = Flags.NONE
        if self.refreshing:
            flags |= Flags.REFRESHING
        if self.partial:
            flags |= Flags.PARTIAL
        if cancelled:
            flags |= Flags.CANCELLED
        if no_value:
            flags |= Flags.NO_VALUE
        return (type, self.status, flags, self.value, self.request, self.domain, self.code, self.message,
                self.attempt)


@dataclasses.dataclass
class Session:
    restore: State
    request: bytes
    # What refresh reloaded before the session (or the chain of loads it continues).
    restore_remembered: Optional[bytes] = None
    yielded: bool = False


class Model:
    """The cell as the header describes it."""

    def __init__(self) -> None:
        self.state = State()
        self.session: Optional[Session] = None
        self.remembered: Optional[bytes] = None
        self.seq = 0
        self.events: List[tuple] = []
        self.hooks_due = 0  # cancel hooks the last operation must have run

    def _emit(self, type: EventType = EventType.STATE, cancelled: bool = False, progress=(0, 0),
              no_value: bool = False) -> None:
        self.seq += 1
        self.events.append((self.seq, self.state.expect(type, cancelled, no_value), progress))

    def _abandon(self) -> Optional[State]:
        """Ends the session without an event; returns the state to restore."""
        session, self.session = self.session, None
        if session is None:
            return None
        self.hooks_due += 1
        return session.restore

    def load(self, request: bytes, silent: bool) -> None:
        restore_remembered = self.session.restore_remembered if self.session is not None else self.remembered
        restore = self._abandon()
        if restore is None:
            restore = dataclasses.replace(self.state)
        self.remembered = request
        self.session = Session(restore, request, restore_remembered)
        if silent:
            self.state.refreshing = True
            self.state.attempt = 1
        else:
            self.state = State(Status.LOADING, request=request, attempt=1)
        self._emit()

    def yield_(self, value: bytes) -> None:
        assert self.session is not None
        self.session.yielded = True
        s = self.state
        s.status, s.value, s.request, s.partial, s.attempt = Status.LOADED, value, self.session.request, True, 1
        s.domain, s.code, s.message = Domain.NONE, 0, None
        self._emit()

    def progress(self, done: int, total: int) -> None:
        self._emit(EventType.PROGRESS, progress=(done, total))

    def succeed(self, value: bytes) -> None:
        session, self.session = self.session, None
        self.state = State(Status.LOADED, value=value, request=session.request, attempt=1)
        self._emit()

    def finish(self) -> None:
        session, self.session = self.session, None
        if session.yielded:
            self.state.partial = self.state.refreshing = False
        else:
            self.state = dataclasses.replace(session.restore, refreshing=False)
        self._emit(no_value=not session.yielded)

    def fail(self, code: int, message: Optional[str]) -> None:
        session, self.session = self.session, None
        self.state = State(Status.ERROR, request=session.request, domain=Domain.HOST, code=code, message=message,
                           attempt=1)
        self._emit()

    def _restore_remembered(self, session: Optional[Session]) -> None:
        """A cancel: refresh reloads the request the restored state shows, when it shows one."""
        if session is not None and session.restore.request is not None and session.restore_remembered is not None:
            self.remembered = session.restore_remembered

    def cancel(self) -> None:
        session = self.session
        restore = self._abandon()
        if restore is not None:
            self._restore_remembered(session)
            self.state = dataclasses.replace(restore, refreshing=False)
            self._emit(cancelled=True)

    def reset(self) -> None:
        had_session = self._abandon() is not None
        if had_session or self.state.status != Status.ABSENT or self.state.refreshing:
            self.state = State()
            self._emit()

    def set_loaded(self, value: bytes) -> None:
        self._abandon()
        self.state = State(Status.LOADED, value=value)
        self._emit()

    def set_error(self, code: int, message: Optional[str]) -> None:
        self._abandon()
        self.state = State(Status.ERROR, domain=Domain.HOST, code=code, message=message)
        self._emit()


runtime: Optional[loadstate.Runtime] = None
reported: List[tuple] = []


def shared_runtime() -> loadstate.Runtime:
    global runtime
    if runtime is None or runtime.closed:
        runtime = loadstate.Runtime(loadstate.Delivery.POLL,
                                    on_error=lambda exc, context: reported.append((exc, context)))
    return runtime


values = st.binary(max_size=6)
messages = st.none() | st.text(alphabet="abc é", max_size=5)
codes = st.integers(min_value=-(2 ** 31), max_value=2 ** 31 - 1)


class CellMachine(RuleBasedStateMachine):
    @initialize()
    def start(self) -> None:
        self.rt = shared_runtime()
        self.jobs = Jobs(self.rt)
        self.cell = self.rt.loadable(self.jobs.loader)
        self.log = Recorder(self.cell)
        self.model = Model()
        self.job: Optional[loadstate.Job] = None
        self.stale: List[loadstate.Job] = []

    def teardown(self) -> None:
        if hasattr(self, "cell"):
            self.cell.close()
            self.jobs.loader.close()

    # -- checking ---------------------------------------------------------

    def check(self) -> None:
        """Receives the events the model predicts and compares them; no more may exist."""
        expected, self.model.events = self.model.events, []
        hooks_before = len(self.jobs.cancelled)
        for seq, want, progress in expected:
            event = self.log.next()
            assert (event.seq, fields(event)) == (seq, want)
            if event.type == EventType.PROGRESS:
                assert (event.progress_done, event.progress_total) == progress
        # Cancel hooks are delivered before the event of the operation that cancelled.
        assert len(self.jobs.cancelled) - hooks_before == self.model.hooks_due
        self.model.hooks_due = 0
        assert self.cell.snapshot().seq == self.model.seq
        assert reported == []

    def end_job(self) -> None:
        if self.job is not None:
            self.stale.append(self.job)
            self.job = None

    # -- operations from outside ------------------------------------------

    @rule(request=values, silent=st.booleans())
    def load(self, request: bytes, silent: bool) -> None:
        self.cell.load(request, silent=silent)
        self.model.load(request, silent)
        self.check()
        self.end_job()
        self.job = self.jobs.next()
        assert self.job.raw_request == request

    @rule()
    def refresh(self) -> None:
        if self.model.remembered is None:
            with pytest.raises(loadstate.WrongState):
                self.cell.refresh()
            self.check()
            return
        self.cell.refresh()
        self.model.load(self.model.remembered, True)
        self.check()
        self.end_job()
        self.job = self.jobs.next()

    @rule()
    def cancel(self) -> None:
        self.cell.cancel()
        self.model.cancel()
        self.check()
        self.end_job()

    @rule()
    def reset(self) -> None:
        self.cell.reset()
        self.model.reset()
        self.check()
        self.end_job()

    @rule(value=values)
    def set_loaded(self, value: bytes) -> None:
        self.cell.set_loaded(value)
        self.model.set_loaded(value)
        self.check()
        self.end_job()

    @rule(code=codes, message=messages)
    def set_error(self, code: int, message: Optional[str]) -> None:
        self.cell.set_error(code, message)
        self.model.set_error(code, message)
        self.check()
        self.end_job()

    # -- operations of the running job ------------------------------------

    @precondition(lambda self: self.job is not None)
    @rule(value=values)
    def yield_(self, value: bytes) -> None:
        self.job.yield_(value)
        self.model.yield_(value)
        self.check()

    @precondition(lambda self: self.job is not None)
    @rule(done=st.integers(0, 2 ** 64 - 1), total=st.integers(0, 2 ** 64 - 1))
    def progress(self, done: int, total: int) -> None:
        self.job.progress(done, total)
        self.model.progress(done, total)
        self.check()

    @precondition(lambda self: self.job is not None)
    @rule(value=values)
    def succeed(self, value: bytes) -> None:
        self.job.succeed(value)
        self.model.succeed(value)
        self.check()
        self.end_job()

    @precondition(lambda self: self.job is not None)
    @rule()
    def finish(self) -> None:
        self.job.finish()
        self.model.finish()
        self.check()
        self.end_job()

    @precondition(lambda self: self.job is not None)
    @rule(code=codes, message=messages)
    def fail(self, code: int, message: Optional[str]) -> None:
        self.job.fail(code, message)
        self.model.fail(code, message)
        self.check()
        self.end_job()

    @precondition(lambda self: self.job is not None)
    @rule()
    def cancel_self(self) -> None:
        self.job.cancel()
        self.model.cancel()
        self.check()
        self.end_job()

    @precondition(lambda self: self.job is not None)
    @rule()
    def reset_self(self) -> None:
        self.job.reset()
        self.model.reset()
        self.check()
        self.end_job()

    # -- jobs that no longer run ------------------------------------------

    @precondition(lambda self: bool(self.stale))
    @rule(data=st.data(), op=st.sampled_from(["yield_", "succeed", "finish", "fail", "progress", "cancel", "reset"]))
    def stale_job(self, data: st.DataObject, op: str) -> None:
        job = data.draw(st.sampled_from(self.stale))
        args = {"yield_": (b"x",), "succeed": (b"x",), "fail": (1, "m"), "progress": (1, 1)}.get(op, ())
        with pytest.raises(loadstate.Cancelled):
            getattr(job, op)(*args)
        assert job.cancelled
        self.check()

    @invariant()
    def latest_matches_model(self) -> None:
        if hasattr(self, "model"):
            assert self.cell.latest.seq == self.model.seq


CellMachine.TestCase.settings = settings(max_examples=250, stateful_step_count=40, deadline=None,
                                         suppress_health_check=[HealthCheck.too_slow])
TestCellMachine = CellMachine.TestCase


def teardown_module() -> None:
    if runtime is not None:
        runtime.close()
