"""The runtime observer (``lds_runtime_observe``): every cell event, job start and job end of a runtime."""

from __future__ import annotations

from ctypes import addressof, string_at
from dataclasses import dataclass
from typing import Any, Callable, Optional

from . import _core
from ._library import EVENT_LAYOUT, FREE_FN, OBSERVE_FN, ObservationC
from .enums import Domain, JobOutcome, Observed
from .types import Event, event_from_raw

__all__ = ["Observation", "Observer"]

# NULL function pointers: lds_runtime_observe(rt, NULL, NULL, NULL) removes the observer.
_NO_OBSERVER = OBSERVE_FN()
_NO_FREE = FREE_FN()


@dataclass(frozen=True)
class Observation:
    """One thing a runtime observer is told (``lds_observation``).

    Attributes:
        what: an event (``EVENT``), a job that starts (``JOB_START``: just
            before its loader is called; a job its loader's limits queued:
            when it is admitted) or a job that ended (``JOB_END``).
        event: ``EVENT``: the event, as the cell's own subscribers get it
            (value and request decoded with the cell's codecs when the cell
            is one of this runtime's Python cells, else ``bytes``); else ``None``.
        job: ``JOB_*``: the job's id; else 0.
        loader: ``JOB_*``: its loader's id; else 0.
        cell: ``JOB_START``: the first cell waiting for the job; else 0.
        attempt: ``JOB_*``: 1 for the first try, 2 for the first retry, ...
        outcome: ``JOB_END``: how the job ended; else ``None``.
        error_domain: ``JOB_END`` with ``FAILED``: where the error comes from; else ``Domain.NONE``.
        error_code: likewise, the error's code.
        time_ns: when it happened (``CLOCK_MONOTONIC``, as ``time.monotonic_ns()``).
        duration_ns: ``JOB_END``: nanoseconds since the job started; else 0.
        request: ``JOB_*``: the job's request as bytes; else ``None``.
    """

    what: Observed
    event: Optional[Event[Any]]
    job: int
    loader: int
    cell: int
    attempt: int
    outcome: Optional[JobOutcome]
    error_domain: Domain
    error_code: int
    time_ns: int
    duration_ns: int
    request: Optional[bytes]


ObserverCallback = Callable[[Observation], Any]


def _bytes_at(address: int, size: int) -> bytes:
    """A copy of ``size`` bytes at ``address`` (a slice of ``memory_at``: ``bytes`` at run time)."""
    return _core.memory_at(address)[:size]  # type: ignore[return-value]


class _ObserverState:
    """What the library's ``user_data`` names (through a token): the callback, while the observer is active."""

    def __init__(self, core: _core.Core, callback: ObserverCallback) -> None:
        self.core = core
        self.callback: Optional[ObserverCallback] = callback
        self.token = 0

    def observe(self, address: int) -> None:
        callback = self.callback
        if callback is None:
            return
        try:
            observation = self._read(ObservationC.from_address(address))
            callback(observation)
        except BaseException as exc:  # noqa: BLE001 - nothing may escape into C
            self.core.report(exc, f"the runtime observer {getattr(callback, '__qualname__', callback)!r}")

    def _read(self, c: ObservationC) -> Observation:
        """Copies what the observation points to: its pointers die with the call."""
        what = Observed(c.what)
        event = None
        if what == Observed.EVENT:
            event = self._event(addressof(c.event.contents))
        request = _bytes_at(c.request, c.request_len) if c.request else None
        outcome = JobOutcome(c.outcome) if what == Observed.JOB_END else None
        return Observation(what, event, c.job, c.loader, c.cell, c.attempt, outcome, Domain(c.error_domain),
                           c.error_code, c.time_ns, c.duration_ns, request)

    def _event(self, address: int) -> Event[Any]:
        raw = EVENT_LAYOUT.unpack(_bytes_at(address, EVENT_LAYOUT.size))
        value = _bytes_at(raw[6], raw[7]) if raw[6] else None
        request = _bytes_at(raw[8], raw[9]) if raw[8] else None
        message = string_at(raw[12], -1) if raw[12] else None
        cell = self.core.cells.get(raw[1])
        if cell is not None:
            return cell.build_event(raw, value, request, message)  # type: ignore[no-any-return]
        return event_from_raw(raw[1], raw, value, request, message)

    def released(self) -> None:
        """The library's ``free_data``: it calls the observer no more."""
        self.callback = None
        with self.core.observer_lock:
            if self.core.observer is self:
                self.core.observer = None


class Observer:
    """The runtime's observer, as :meth:`Runtime.observe <loadstate.Runtime.observe>` returns it.

    :meth:`close` (or leaving a ``with`` block) removes it; a later
    :meth:`~loadstate.Runtime.observe` replaces it, and closing the runtime
    ends it. Once any of these happened the callback is not called again.
    """

    def __init__(self, state: _ObserverState) -> None:
        self._state = state

    @property
    def closed(self) -> bool:
        """Whether the observer was removed, replaced, or its runtime closed."""
        return self._state.callback is None

    def close(self) -> None:
        """Removes the observer (``lds_runtime_observe`` with NULL); its callback is not called after this returns
        (but for a call running on another thread now). Closing twice, or after it was replaced, is harmless.
        """
        state = self._state
        state.callback = None
        core = state.core
        with core.observer_lock:
            if core.observer is not state:
                return
            core.observer = None
            if core.closed:
                return
            rc = core.dll.lds_runtime_observe(core.c_handle, _NO_OBSERVER, None, _NO_FREE)
        if rc != 0 and not core.closed:
            core.check(rc, "lds_runtime_observe")

    def __enter__(self) -> "Observer":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()


def observe(core: _core.Core, callback: ObserverCallback) -> Observer:
    """Sets ``callback`` as the runtime's observer (see :meth:`loadstate.Runtime.observe`)."""
    if not callable(callback):
        raise TypeError(f"callback must be callable, not {type(callback).__name__}")
    state = _ObserverState(core, callback)
    state.token = _core.register(state)
    with core.observer_lock:
        rc = core.dll.lds_runtime_observe(core.c_handle, _core.observe_callback, state.token, _core.free_callback)
        if rc != 0:
            _core.unregister(state.token)
            core.check(rc, "lds_runtime_observe")
        previous, core.observer = core.observer, state
    if previous is not None:
        previous.callback = None
    return Observer(state)

