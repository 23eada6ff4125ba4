"""The Python idioms of the binding: exceptions by default, states when asked, built-in
exception types, type errors that say what is wanted, a cache that is a mapping, enums that
print their names, async iteration."""

from __future__ import annotations

import asyncio
import inspect
import os
import subprocess
import sys
import threading
import traceback
from collections.abc import MutableMapping
from pathlib import Path

import pytest
from conftest import WAIT

import loadstate
from loadstate import Delivery, Domain, EventType, Flags, Status, errors

PACKAGE_ROOT = Path(__file__).resolve().parent.parent


def run(coroutine):
    return asyncio.run(coroutine)


# -- errors ---------------------------------------------------------------


def test_value_returns_the_value_of_a_load(rt):
    cell = rt.loadable(rt.loader(lambda job: job.request.upper()))
    assert cell.load(b"abc").value(WAIT) == b"ABC"


def test_value_raises_load_failed_with_domain_code_and_message(rt):
    def refuse(job):
        raise loadstate.LoadFailed(404, "no such table")

    cell = rt.loadable(rt.loader(refuse))
    with pytest.raises(loadstate.LoadFailed) as failed:
        cell.load(b"t").value(WAIT)
    assert (failed.value.domain, failed.value.code, failed.value.message) == (Domain.HOST, 404, "no such table")
    assert failed.value.value is None and failed.value.response is None


def test_value_raises_load_failed_for_an_error_set_by_hand(rt, jobs):
    cell = rt.loadable(jobs.loader)
    load = cell.load(b"q")
    jobs.next()
    cell.set_error(7, "broken")
    with pytest.raises(loadstate.LoadFailed) as failed:
        load.value(WAIT)
    assert (failed.value.code, failed.value.message, str(failed.value)) == (7, "broken", "host error 7: broken")


def test_state_returns_a_failed_state_without_raising(rt):
    def refuse(job):
        raise loadstate.LoadFailed(3, "no")

    state = rt.loadable(rt.loader(refuse)).load().state(WAIT)
    assert (state.status, state.error_code) == (Status.ERROR, 3)
    with pytest.raises(loadstate.LoadFailed):
        state.raise_for_error()


def test_raise_for_error_is_quiet_for_a_loaded_state(rt):
    state = rt.loadable(rt.loader(lambda job: b"v")).load().state(WAIT)
    assert state.raise_for_error() is None and state.error is None


def _frames(exc):
    return [frame.name for frame in traceback.extract_tb(exc.__traceback__)]


def test_an_exception_raised_in_a_thread_loader_reaches_the_caller_with_its_type_and_traceback(rt):
    def lookup(job):
        return {}["missing"]

    with pytest.raises(KeyError) as raised:
        rt.loadable(rt.loader(lookup)).load().value(WAIT)
    assert "lookup" in _frames(raised.value)


def test_an_exception_raised_in_an_inline_loader_reaches_the_caller(rt):
    def divide(job):
        return 1 // 0

    with pytest.raises(ZeroDivisionError) as raised:
        rt.loadable(rt.loader(divide, inline=True)).load().value(WAIT)
    assert "divide" in _frames(raised.value)


def test_an_exception_raised_in_an_async_loader_reaches_the_awaiting_caller():
    class Refused(Exception):
        pass

    async def main():
        async with loadstate.Runtime(Delivery.POLL) as rt:
            @rt.loader
            async def fetch(job):
                await asyncio.sleep(0)
                raise Refused("the server said no")

            cell = rt.loadable(fetch)
            with pytest.raises(Refused) as raised:
                await cell.get(b"x")
            assert "fetch" in _frames(raised.value)
            state = await cell.load(b"y")        # the states keep code and message
            assert (state.error_code, state.error_message) == (loadstate.EXCEPTION_CODE,
                                                               "Refused: the server said no")

    run(main())


def test_a_load_failed_raised_by_a_loader_is_re_raised_as_it_was(rt):
    original = loadstate.LoadFailed(9, "bad input", final=True)

    def refuse(job):
        raise original

    with pytest.raises(loadstate.LoadFailed) as raised:
        rt.loadable(rt.loader(refuse)).load().value(WAIT)
    assert raised.value is original


class NotThere(Exception):
    """What the loaders below raise: the same type and text whoever raises it, told apart by ``who``."""

    def __init__(self, who):
        super().__init__("not found")
        self.who = who


def _raiser(rt, kind, who, gate=None):
    """A loader of ``kind`` ("thread" or "async") that raises ``NotThere(who)`` (once ``gate`` is set)."""
    if kind == "thread":
        def load(job):
            if gate is not None:
                gate.wait(WAIT)
            raise NotThere(who)
    else:
        async def load(job):
            if gate is not None:
                await gate.wait()
            raise NotThere(who)
    return rt.loader(load)


def _raised_by(load):
    try:
        load.value()
    except NotThere as exc:
        return exc
    pytest.fail(f"{load!r} did not raise NotThere")


async def _fail_others(rt, count):
    """``count`` loads of other loaders that raise, one after the other."""
    cell = rt.loadable()
    for index in range(count):
        with pytest.raises(ValueError):
            await cell.get(b"%d" % index, rt.loader(lambda job, index=index: int(f"x{index}")))


KINDS = ["thread", "async"]


@pytest.mark.parametrize("kind", KINDS)
def test_a_loaders_exception_reaches_the_loads_of_that_loader_only(kind):
    async def main():
        async with loadstate.Runtime(Delivery.POLL) as rt:
            first = rt.loadable(_raiser(rt, kind, "first")).load(b"x")
            await first
            second = rt.loadable(_raiser(rt, kind, "second")).load(b"x")   # the same error, later
            await second
            assert (_raised_by(first).who, _raised_by(second).who) == ("first", "second")
            with pytest.raises(NotThere) as raised:
                await rt.loadable(_raiser(rt, kind, "third")).get(b"x")
            assert raised.value.who == "third"

    run(main())


def test_loaders_that_fail_alike_before_either_failure_is_delivered_keep_their_own_exceptions(poll_rt):
    # Inline loaders run as the runtime is dispatched: both jobs start, raise
    # and fail before the first failed state is delivered.
    first = poll_rt.loadable(poll_rt.loader(lambda job: _raise(NotThere("first")), inline=True)).load(b"x")
    second = poll_rt.loadable(poll_rt.loader(lambda job: _raise(NotThere("second")), inline=True)).load(b"x")
    first.state(WAIT)
    second.state(WAIT)
    assert (_raised_by(first).who, _raised_by(second).who) == ("first", "second")


def _raise(exc):
    raise exc


@pytest.mark.parametrize("kind", KINDS)
def test_a_load_keeps_its_loaders_exception_through_any_number_of_later_failures(kind):
    async def main():
        async with loadstate.Runtime(Delivery.POLL) as rt:
            load = rt.loadable(_raiser(rt, kind, "early")).load(b"x")
            await load
            await _fail_others(rt, loadstate._core.RAISED_KEPT + 6)
            assert _raised_by(load).who == "early"

    run(main())


@pytest.mark.parametrize("kind", KINDS)
def test_every_load_sharing_a_job_gets_the_very_exception_its_loader_raised(kind):
    async def main():
        async with loadstate.Runtime(Delivery.POLL) as rt:
            gate = threading.Event() if kind == "thread" else asyncio.Event()
            shared = _raiser(rt, kind, "shared", gate)
            cells = [rt.loadable(shared) for _ in range(3)]
            loads = []
            for cell in cells:
                async with cell.events() as events:
                    loads.append(cell.load(b"x", share=True))
                    async for event in events:     # the load has joined the job
                        if event.status == Status.LOADING:
                            break
            gate.set()
            for load in loads:
                await load
            with pytest.raises(NotThere):        # the same failure of another loader, later
                await rt.loadable(_raiser(rt, kind, "other")).get(b"x")
            raised = [_raised_by(load) for load in loads]
            assert raised[0].who == "shared"
            assert all(exc is raised[0] for exc in raised)

    run(main())


def test_a_load_superseded_by_the_same_request_raises_the_exception_of_the_load_that_superseded_it(rt, jobs):
    cell = rt.loadable(jobs.loader)
    first = cell.load(b"x")
    jobs.next()
    cell.load(b"x", loader=_raiser(rt, "thread", "later"))
    assert _raised_by(first).who == "later"


def test_a_load_superseded_by_another_request_raises_superseded_not_its_exception(rt, jobs):
    cell = rt.loadable(jobs.loader)
    first = cell.load(b"slow")
    jobs.next()
    second = cell.load(b"x", loader=_raiser(rt, "thread", "later"))
    with pytest.raises(loadstate.Superseded) as superseded:
        first.value(WAIT)
    assert superseded.value.request == b"x" and superseded.value.code == loadstate.Code.ECANCELED
    assert _raised_by(second).who == "later"


def test_a_load_finished_before_the_next_one_keeps_its_own_value(rt, jobs):
    cell = rt.loadable(jobs.loader)
    first = cell.load(b"a")
    jobs.next().succeed(b"A")
    assert first.value(WAIT) == b"A"
    second = cell.load(b"b")
    assert first.value(WAIT) == b"A"       # settled: a later load changes nothing
    jobs.next().succeed(b"B")
    assert second.value(WAIT) == b"B"


def test_refresh_after_a_cancel_reloads_the_request_the_state_shows(rt, jobs):
    cell = rt.loadable(jobs.loader)
    first = cell.load(b"ada")
    jobs.next().succeed(b"A")
    assert first.value(WAIT) == b"A"
    backed_out = cell.load(b"bob")
    jobs.next()
    cell.cancel()
    with pytest.raises(loadstate.Cancelled):
        backed_out.value(WAIT)
    assert cell.latest.request == b"ada"
    refresh = cell.refresh()
    job = jobs.next()
    assert job.request == b"ada"
    job.succeed(b"A2")
    assert refresh.value(WAIT) == b"A2"


def test_a_refresh_superseded_by_another_request_raises_superseded(rt, jobs):
    cell = rt.loadable(jobs.loader)
    first = cell.load(b"ada")
    jobs.next().succeed(b"A")
    assert first.value(WAIT) == b"A"
    refresh = cell.refresh()
    jobs.next()
    cell.load(b"bob")
    with pytest.raises(loadstate.Superseded):
        refresh.value(WAIT)


def test_value_of_a_cancelled_or_reset_load_raises_cancelled(rt, jobs):
    cell = rt.loadable(jobs.loader)
    load = cell.load(b"a")
    jobs.next()
    cell.cancel()
    with pytest.raises(loadstate.Cancelled):
        load.value(WAIT)
    load = cell.load(b"b")
    jobs.next()
    cell.reset()
    with pytest.raises(loadstate.Cancelled):
        load.value(WAIT)


def test_value_of_a_run_is_none_and_a_failed_run_raises(rt):
    cell = rt.process(rt.loader(lambda job: b"ignored"))
    assert cell.run(kind=1).value(WAIT) is None

    def fail(job):
        raise loadstate.LoadFailed(5, "stopped")

    with pytest.raises(loadstate.LoadFailed) as failed:
        cell.run(kind=2, loader=rt.loader(fail)).value(WAIT)
    assert failed.value.code == 5


def test_result_is_deprecated_and_still_returns_the_state(rt):
    cell = rt.loadable(rt.loader(lambda job: b"v"))
    with pytest.warns(DeprecationWarning, match="Load.state"):
        state = cell.load().result(WAIT)
    assert state.value == b"v"


def test_get_is_cancelled_with_its_task():
    async def main():
        async with loadstate.Runtime(Delivery.POLL) as rt:
            started = asyncio.Event()

            @rt.loader
            async def slow(job):
                started.set()
                await asyncio.sleep(3600)

            cell = rt.loadable(slow)
            task = asyncio.ensure_future(cell.get(b"x"))
            await started.wait()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            async for event in cell.events():
                if event.settled:
                    break
            assert event.cancelled and event.status is Status.ABSENT

    run(main())


def test_every_exception_of_the_package_is_a_loadstate_error():
    for name in errors.__all__:
        value = getattr(errors, name)
        if isinstance(value, type):
            assert issubclass(value, loadstate.Error), name


@pytest.mark.parametrize("cls, builtin", [
    (loadstate.TimedOut, TimeoutError), (loadstate.IOFailure, OSError), (loadstate.InvalidArgument, ValueError),
    (loadstate.TooBig, ValueError), (loadstate.NotFound, LookupError), (loadstate.OutOfMemory, MemoryError),
    (loadstate.LibraryNotFound, OSError), (loadstate.LoadFailed, loadstate.Error),
])
def test_exceptions_subclass_the_built_in_they_mean(cls, builtin):
    assert issubclass(cls, builtin)


def test_an_unsettled_wait_raises_a_timeout_error(rt, jobs):
    load = rt.loadable(jobs.loader).load(b"slow")
    with pytest.raises(TimeoutError):
        load.value(0.01)


def test_a_load_timeout_raises_load_failed_in_the_loadstate_domain(rt, jobs):
    load = rt.loadable(jobs.loader).load(b"slow", timeout=0.01)
    with pytest.raises(loadstate.LoadFailed) as failed:
        load.value(WAIT)
    assert (failed.value.domain, failed.value.code) == (Domain.LOADSTATE, loadstate.Code.ETIMEDOUT)


def test_a_load_timeout_is_a_timeout_error_too(rt, jobs):
    cell = rt.loadable(jobs.loader)
    with pytest.raises(TimeoutError) as raised:
        cell.load(b"slow", timeout=0.01).value(WAIT)
    assert isinstance(raised.value, loadstate.LoadTimedOut)
    assert isinstance(raised.value, loadstate.LoadFailed) and isinstance(raised.value, loadstate.TimedOut)
    assert (raised.value.domain, raised.value.code) == (Domain.LOADSTATE, loadstate.Code.ETIMEDOUT)

    async def main():
        with pytest.raises(loadstate.LoadTimedOut):
            await cell.get(b"slow", timeout=0.01)

    run(main())


def test_a_host_failure_with_the_timeout_code_is_not_a_timeout_error(rt):
    def refuse(job):
        job.fail(loadstate.Code.ETIMEDOUT, "a host error with the same code")

    with pytest.raises(loadstate.LoadFailed) as raised:
        rt.loadable(rt.loader(refuse)).load().value(WAIT)
    assert not isinstance(raised.value, TimeoutError)


def test_a_load_failed_shows_its_domain_code_and_message_in_its_repr(rt, jobs):
    assert repr(loadstate.LoadFailed(404, "gone", Domain.HTTP)) == (
        "LoadFailed(domain=Domain.HTTP, code=404, message='gone')")
    assert repr(loadstate.LoadFailed(9, None, final=True, value=b"partial")) == (
        "LoadFailed(domain=Domain.HOST, code=9, message=None, final=True, value=<bytes>)")
    state = rt.loadable(jobs.loader).load(b"slow", timeout=0.01).state(WAIT)
    assert repr(state.error) == "LoadTimedOut(domain=Domain.LOADSTATE, code=-5, message='timed out')"


def test_error_codes_and_library_errors_pickle_and_print():
    import pickle

    error = loadstate.error_for_code(-5, "timed out", "waiting")
    assert isinstance(error, loadstate.TimedOut) and isinstance(error, TimeoutError)
    assert str(error) == "waiting: timed out (code -5)"
    again = pickle.loads(pickle.dumps(error))
    assert (type(again), again.code, again.message, again.detail) == (loadstate.TimedOut, -5, "timed out", "waiting")
    failed = pickle.loads(pickle.dumps(loadstate.LoadFailed(404, "gone", Domain.HTTP, value=b"body")))
    assert (failed.code, failed.domain, failed.value) == (404, Domain.HTTP, b"body")


# -- type errors ------------------------------------------------------------

SECONDS = r"a number of seconds \(int or float\) or None"
HEADERS = r"a list of \(name, value\) pairs or 'Name: value' strings, or a mapping of str to str"


def test_a_wrong_request_type_names_the_parameter_and_the_accepted_types(rt):
    cell = rt.loadable(rt.http_loader(proxy=""))
    with pytest.raises(TypeError, match=r"request: .*HttpRequest or a URL \(str\), not dict"):
        cell.load({"url": "http://x"})
    with pytest.raises(TypeError, match=r"request: .*bytes.*not int"):
        rt.loadable(rt.loader(lambda job: None)).load(5)
    with pytest.raises(TypeError, match=r"request: .*ExecRequest or a list of arguments"):
        rt.loadable(rt.exec_loader()).load(5)
    with pytest.raises(TypeError, match=r"request: .*path"):
        rt.loadable(rt.file_loader()).load(3.5)


@pytest.mark.parametrize("call, message", [
    (lambda rt, cell: cell.set_loaded("text"), r"value: .*bytes"),
    (lambda rt, cell: cell.load(b"x", loader="loader"), r"loader must be a loadstate.Loader"),
    (lambda rt, cell: cell.load(b"x", timeout="5"), r"timeout must be a number of seconds"),
    (lambda rt, cell: cell.load(b"x", retries=1.5), r"retries must be an int"),
    (lambda rt, cell: cell.load(b"x", cache="cache"), r"cache must be a loadstate.Cache"),
    (lambda rt, cell: cell.load(b"x", options={"silent": True}), r"options must be a loadstate.LoadOptions"),
    (lambda rt, cell: cell.set_error("7"), r"code must be an int"),
    (lambda rt, cell: rt.loadable(codec="json"), r"codec must be a loadstate.Codec"),
    (lambda rt, cell: rt.loader(lambda job: None, codec=str), r"codec must be a loadstate.Codec"),
    (lambda rt, cell: rt.loader(42), r"fn must be a callable"),
    (lambda rt, cell: cell.subscribe(None), r"callback must be callable"),
    (lambda rt, cell: rt.process().run(kind="1"), r"kind must be an int"),
    (lambda rt, cell: loadstate.Runtime(delivery=1.5), r"delivery must be"),
    # waits
    (lambda rt, cell: cell.load(b"x").value(timeout="5"), rf"timeout must be {SECONDS}, not str"),
    (lambda rt, cell: cell.load(b"x").state("5"), rf"timeout must be {SECONDS}, not str"),
    (lambda rt, cell: rt.poll("5"), rf"timeout must be {SECONDS}, not str"),
    (lambda rt, cell: rt.dispatch("5"), r"max_events must be an int, not str"),
    (lambda rt, cell: rt.loadable(rt.loader(lambda job: job.wait_cancelled("5"))).load(b"x").value(WAIT),
     rf"timeout must be {SECONDS}, not str"),
    # a load's options
    (lambda rt, cell: cell.load(b"x", policy="x"),
     r"policy must be a loadstate.CachePolicy \(LOAD_ONLY, CACHE_FIRST, CACHE_THEN_LOAD, CACHE_ONLY\), not str"),
    (lambda rt, cell: cell.load(b"x", share="yes"), r"share must be a bool \(True or False\), not str"),
    (lambda rt, cell: cell.load(b"x", silent=1), r"silent must be a bool \(True or False\), not int"),
    (lambda rt, cell: cell.load(b"x", poll_on_error=None), r"poll_on_error must be a bool"),
    (lambda rt, cell: loadstate.LoadOptions(ignore_cache_headers="yes"), r"ignore_cache_headers must be a bool"),
    (lambda rt, cell: cell.load(b"x", retries=0.0), r"retries must be an int, not float"),
    (lambda rt, cell: cell.load(b"x", retries=True), r"retries must be an int, not bool"),
    (lambda rt, cell: cell.load(b"x", priority=False), r"priority must be an int, not bool"),
    (lambda rt, cell: cell.load(b"x", fresh="1"), rf"fresh must be {SECONDS}, not str"),
    (lambda rt, cell: cell.load(b"x", max_age="1"), rf"max_age must be {SECONDS}, not str"),
    (lambda rt, cell: cell.load(b"x", cache_key=5), r"cache_key must be bytes, str or None, not int"),
    (lambda rt, cell: cell.load(b"x", interrupts=5), r"interrupts must be a sequence of numbers of seconds, not int"),
    (lambda rt, cell: rt.process().run(kind=True), r"kind must be an int, not bool"),
    (lambda rt, cell: cell.set_priority(True), r"priority must be an int, not bool"),
    (lambda rt, cell: cell.subscribe(lambda event: None, progress="no"), r"progress must be a bool"),
    # jobs
    (lambda rt, cell: rt.loadable(rt.loader(lambda job: job.progress("1"))).load(b"x").value(WAIT),
     r"done must be an int, not str"),
    (lambda rt, cell: rt.loadable(rt.loader(lambda job: job.fail("7"))).load(b"x").value(WAIT),
     r"code must be an int, not str"),
    (lambda rt, cell: rt.loadable(rt.loader(lambda job: job.fail(7, final="yes"))).load(b"x").value(WAIT),
     r"final must be a bool"),
    # the runtime, loaders and their limits
    (lambda rt, cell: loadstate.Runtime(workers=True), r"workers must be an int, not bool"),
    (lambda rt, cell: loadstate.Runtime(metrics="no"), r"metrics must be a bool"),
    (lambda rt, cell: rt.loader(lambda job: None, inline="yes"), r"inline must be a bool"),
    (lambda rt, cell: loadstate.Limits(max_concurrent="2"), r"max_concurrent must be an int, not str"),
    (lambda rt, cell: loadstate.Limits(rate_per_s=1.5), r"rate_per_s must be an int, not float"),
    (lambda rt, cell: loadstate.Limits(burst=True), r"burst must be an int, not bool"),
    (lambda rt, cell: rt.http_loader(max_connections="2"), r"max_connections must be an int, not str"),
    (lambda rt, cell: rt.http_loader(max_per_host=True), r"max_per_host must be an int, not bool"),
    (lambda rt, cell: rt.http_loader(user_agent=5), r"user_agent must be str or bytes or None, not int"),
    (lambda rt, cell: rt.http_loader(proxy=5), r"proxy must be str or bytes or None, not int"),
    (lambda rt, cell: rt.file_loader(chunk_size="1"), r"chunk_size must be an int, not str"),
    (lambda rt, cell: rt.file_loader(max_size=1.0), r"max_size must be an int, not float"),
    (lambda rt, cell: rt.exec_loader(max_output="1"), r"max_output must be an int, not str"),
    (lambda rt, cell: rt.exec_loader(stream_lines=1), r"stream_lines must be a bool"),
    (lambda rt, cell: rt.start_inspector(max_clients="8"), r"max_clients must be an int, not str"),
    (lambda rt, cell: rt.start_inspector(max_cells=1.5), r"max_cells must be an int, not float"),
    (lambda rt, cell: rt.start_inspector(interval="1"), rf"interval must be {SECONDS}, not str"),
    (lambda rt, cell: rt.start_inspector(idle_timeout="1"), rf"idle_timeout must be {SECONDS}, not str"),
    (lambda rt, cell: rt.start_inspector(show_values="yes"), r"show_values must be a bool"),
    (lambda rt, cell: rt.start_inspector(5), r"address must be str or bytes, not int"),
    # caches
    (lambda rt, cell: rt.memory_cache(max_entries="5"), r"max_entries must be an int, not str"),
    (lambda rt, cell: rt.memory_cache(max_bytes=True), r"max_bytes must be an int, not bool"),
    (lambda rt, cell: rt.memory_cache(name=5), r"name must be str or bytes or None, not int"),
    (lambda rt, cell: rt.memory_cache(codec="json"), r"codec must be a loadstate.Codec, not str"),
    (lambda rt, cell: rt.persistent_cache(5), r"path must be str, bytes or os.PathLike, not int"),
    (lambda rt, cell: rt.persistent_cache("/nonexistent/c.db", max_bytes="1"), r"max_bytes must be an int, not str"),
    (lambda rt, cell: rt.persistent_cache("/nonexistent/c.db", replace_damaged="yes"),
     r"replace_damaged must be a bool"),
    (lambda rt, cell: rt.redis_cache("redis://127.0.0.1:1/", codec="json"), r"codec must be a loadstate.Codec"),
    # requests of the built-in loaders
    (lambda rt, cell: loadstate.HttpRequest(5), r"url must be a str, not int"),
    (lambda rt, cell: loadstate.HttpRequest("http://x/", method=b"GET"), r"method must be a str, not bytes"),
    (lambda rt, cell: loadstate.HttpRequest("http://x/", headers=5), rf"headers must be {HEADERS}, not int"),
    (lambda rt, cell: loadstate.HttpRequest("http://x/", headers="A: b"), rf"headers must be {HEADERS}, not str"),
    (lambda rt, cell: loadstate.HttpRequest("http://x/", headers=[5]),
     rf"headers must be {HEADERS}, not a list holding int"),
    (lambda rt, cell: loadstate.HttpRequest("http://x/", headers=[("A", 5)]),
     r"headers must pair str names with str values, not str with int"),
    (lambda rt, cell: loadstate.HttpRequest("http://x/", headers={"A": b"b"}),
     r"headers must pair str names with str values, not str with bytes"),
    (lambda rt, cell: loadstate.HttpRequest("http://x/", body="text"), r"body must be bytes or None, not str"),
    (lambda rt, cell: loadstate.HttpRequest("http://x/", timeout="5"), rf"timeout must be {SECONDS}, not str"),
    (lambda rt, cell: loadstate.HttpRequest("http://x/", max_redirects="5"), r"max_redirects must be an int"),
    (lambda rt, cell: loadstate.HttpRequest("http://x/", max_body=1.5), r"max_body must be an int, not float"),
    (lambda rt, cell: loadstate.HttpRequest("http://x/", flags="insecure"),
     r"flags must be loadstate.HttpFlags flags \(an int\), not str"),
    (lambda rt, cell: loadstate.HttpRequest("http://x/", ca_file=5),
     r"ca_file must be str, bytes or os.PathLike or None, not int"),
    (lambda rt, cell: loadstate.ExecRequest(5), r"argv must be a list of arguments \(str, bytes or os.PathLike\)"),
    (lambda rt, cell: loadstate.ExecRequest(["ls", 5]), r"argv must be str, bytes or os.PathLike, not int"),
    (lambda rt, cell: loadstate.ExecRequest(["ls"], env={"A": 1}), r"env must pair str names with str values"),
    (lambda rt, cell: loadstate.ExecRequest(["ls"], cwd=5), r"cwd must be str, bytes or os.PathLike or None"),
])
def test_wrong_argument_types_raise_type_error_naming_the_parameter(rt, call, message):
    cell = rt.loadable(rt.loader(lambda job: b""))
    with pytest.raises(TypeError, match=message):
        call(rt, cell)


@pytest.mark.parametrize("call, message", [
    (lambda rt, cell: cell.load(b"x").value(timeout=-1), r"timeout must be a number of seconds from 0 to .*, not -1"),
    (lambda rt, cell: cell.load(b"x", timeout=float("nan")),
     r"timeout must be a number of seconds from 0 to 4294967.295, not nan"),
    (lambda rt, cell: cell.load(b"x", max_age=-0.5),
     r"max_age must be a number of seconds from 0 to 18446744073709551.615, not -0.5"),
    (lambda rt, cell: cell.load(b"x", policy=7), r"policy must be one of CachePolicy.LOAD_ONLY \(0\), .*, not 7"),
    (lambda rt, cell: cell.load(b"x", retries=-1), r"retries must be an int from 0 to 2\*\*32 - 1, not -1"),
    (lambda rt, cell: cell.load(b"x", priority=1 << 31),
     r"priority must be an int from -2\*\*31 to 2\*\*31 - 1, not 2147483648"),
    (lambda rt, cell: cell.load(b"x", interrupts=[0.01] * 65), r"interrupts must hold at most 64 delays, not 65"),
    (lambda rt, cell: cell.set_error(1 << 31), r"code must be an int from -2\*\*31 to 2\*\*31 - 1"),
    (lambda rt, cell: rt.process().run(kind=-(1 << 31) - 1), r"kind must be an int from -2\*\*31 to 2\*\*31 - 1"),
    (lambda rt, cell: rt.loadable(rt.loader(lambda job: job.progress(-1))).load(b"x").value(WAIT),
     r"done must be an int from 0 to 2\*\*64 - 1, not -1"),
    (lambda rt, cell: loadstate.Runtime(workers=0), r"workers must be an int >= 1, not 0"),
    (lambda rt, cell: loadstate.Runtime(delivery=5), r"delivery must be one of Delivery.LOOP \(0\), Delivery.POLL"),
    (lambda rt, cell: loadstate.Limits(burst=-1), r"burst must be an int from 0 to 2\*\*32 - 1, not -1"),
    (lambda rt, cell: rt.http_loader(max_connections=1 << 32),
     r"max_connections must be an int from 0 to 2\*\*32 - 1, not 4294967296"),
    (lambda rt, cell: rt.file_loader(chunk_size=-1), r"chunk_size must be an int from 0 to 2\*\*32 - 1"),
    (lambda rt, cell: rt.exec_loader(max_output=1 << 64), r"max_output must be an int from 0 to 2\*\*64 - 1"),
    (lambda rt, cell: rt.start_inspector(max_clients=257), r"max_clients must be an int from 0 to 256, not 257"),
    (lambda rt, cell: rt.start_inspector(max_cells=10_001), r"max_cells must be an int from 0 to 10000"),
    (lambda rt, cell: rt.start_inspector(interval=0.01),
     r"interval must be 0 or a number of seconds from 0.05 to 60, not 0.01"),
    (lambda rt, cell: rt.memory_cache(max_entries=-5), r"max_entries must be an int from 0 to 2\*\*64 - 1, not -5"),
    (lambda rt, cell: rt.memory_cache(name="a\0b"), r"name must not contain NUL"),
    (lambda rt, cell: rt.persistent_cache("/nonexistent/c.db", max_bytes=-1), r"max_bytes must be an int from 0"),
    (lambda rt, cell: rt.persistent_cache("/nonexistent/c\0.db"), r"path must not contain NUL"),
    (lambda rt, cell: rt.redis_cache("redis://127.0.0.1:1/", max_value_bytes=loadstate.VALUE_MAX + 1),
     r"max_value_bytes must be an int from 0 to 268435456"),
    (lambda rt, cell: loadstate.HttpRequest("http://x/", flags=1 << 9), r"flags must be flags of HttpFlags.INSECURE"),
    (lambda rt, cell: loadstate.HttpRequest("http://x/", max_redirects=-1), r"max_redirects must be an int from 0"),
])
def test_values_out_of_range_raise_value_error_naming_the_parameter_and_the_range(rt, call, message):
    cell = rt.loadable(rt.loader(lambda job: b""))
    with pytest.raises(loadstate.InvalidArgument, match=message) as raised:
        call(rt, cell)
    assert isinstance(raised.value, ValueError)


def test_an_http_request_checks_its_fields_when_made_and_takes_headers_as_a_mapping():
    request = loadstate.HttpRequest("http://x/", headers={"Accept": "text/plain", "X-A": "1"}, body=None)
    assert request.headers == (("Accept", "text/plain"), ("X-A", "1")) and request.body == b""
    assert loadstate.HttpRequest.decode(request.encode()).headers == ("Accept: text/plain", "X-A: 1")
    listed = loadstate.HttpRequest("http://x/", headers=[["Accept", "text/plain"], "X-A: 1"], body=bytearray(b"b"))
    assert listed == loadstate.HttpRequest("http://x/", headers=(("Accept", "text/plain"), "X-A: 1"), body=b"b")
    assert hash(listed) == hash(loadstate.HttpRequest("http://x/", headers=(("Accept", "text/plain"), "X-A: 1"),
                                                      body=b"b"))


def test_a_cache_key_of_the_wrong_type_is_a_type_error(rt):
    with rt.memory_cache() as cache:
        with pytest.raises(TypeError, match="key must be bytes or str, not int"):
            cache[5] = b"v"
        assert 5 not in cache


# -- idioms ---------------------------------------------------------------


def test_a_cache_is_a_mutable_mapping(rt):
    with rt.memory_cache(codec=loadstate.JSON) as cache:
        assert isinstance(cache, MutableMapping)
        assert len(cache) == 0 and not cache
        cache["a"] = 1
        cache.update({"b": 2, "c": 3})
        assert len(cache) == 3 and cache
        assert cache.get("a") == 1 and cache.get("zz") is None and cache.get("zz", 0) == 0
        assert cache.pop("b") == 2 and cache.pop("b", "gone") == "gone"
        assert cache.setdefault("c", 9) == 3 and cache.setdefault("d", 4) == 4
        del cache["d"]
        with pytest.raises(KeyError):
            del cache["d"]
        with pytest.raises(KeyError):
            cache["d"]
        assert "a" in cache and "d" not in cache
        assert cache.entry("a").value == 1 and cache.entry("d") is None
        assert len(cache) == 2
        cache.clear()
        assert len(cache) == 0


def test_a_cache_equals_the_mappings_with_the_same_entries(rt):
    with rt.memory_cache(codec=loadstate.JSON) as cache, rt.memory_cache(codec=loadstate.JSON) as other:
        assert cache == {} and cache == other and cache == cache
        cache["a"] = 1
        assert cache == {b"a": 1} and {b"a": 1} == cache and cache != other
        assert cache != {"a": 1} and cache != {b"a": 2} and cache != {b"a": 1, b"b": 2}
        assert cache != [(b"a", 1)] and cache != 1
        other[b"a"] = 1
        assert cache == other and not cache != other
        # Like every mutable mapping, a cache has no hash: not in a set, not a dict key.
        assert type(cache).__hash__ is None
        with pytest.raises(TypeError, match="unhashable"):
            hash(cache)
        with pytest.raises(TypeError, match="unhashable"):
            {cache}


def test_load_options_compare_and_hash_their_cache_by_identity(rt):
    with rt.memory_cache() as first, rt.memory_cache() as second:
        assert first == second  # two empty caches: equal mappings, yet not the same cache
        options = loadstate.LoadOptions(cache=first, cache_key="k")
        assert options == loadstate.LoadOptions(cache=first, cache_key="k")
        assert options != loadstate.LoadOptions(cache=second, cache_key="k")
        assert options != loadstate.LoadOptions(cache_key="k") and options != loadstate.LoadOptions(cache=first)
        assert hash(options) == hash(loadstate.LoadOptions(cache=first, cache_key="k"))
        assert len({options, loadstate.LoadOptions(cache=second, cache_key="k"), options}) == 2
        assert loadstate.LoadOptions() == loadstate.LoadOptions() and loadstate.LoadOptions().is_default()
        assert not options.is_default() and loadstate.LoadOptions(silent=True).only_flags()


def test_a_memory_cache_lists_its_keys_most_recent_first(rt):
    with rt.memory_cache(codec=loadstate.JSON) as cache:
        cache["a"] = 1
        cache[b"b"] = 2
        cache["c/1"] = 3
        cache["a"]  # a use: "a" is now the most recent
        assert list(cache) == [b"a", b"c/1", b"b"]
        assert list(cache.keys()) == [b"a", b"c/1", b"b"]
        assert cache.keys_with_prefix("c/") == [b"c/1"] and cache.keys_with_prefix(b"zz") == []
        assert cache.stats().hits == 1  # listing keys is no use of an entry
        # Reading the values is: items() gets each in turn, so "b" ends up the most recent.
        assert list(cache.items()) == [(b"a", 1), (b"c/1", 3), (b"b", 2)]
        assert list(cache) == [b"b", b"c/1", b"a"]
        assert list(cache.values()) == [2, 3, 1]
        assert dict(cache) == {b"a": 1, b"b": 2, b"c/1": 3}
        with pytest.raises(TypeError, match="prefix must be bytes or str, not int"):
            cache.keys_with_prefix(3)  # type: ignore[arg-type]
        key, value = cache.popitem()
        assert key in (b"a", b"b", b"c/1") and key not in cache and len(cache) == 2


@pytest.mark.parametrize("kind", ["memory", "persistent"])
def test_cache_values_of_every_size_read_back_whole(rt, tmp_path, kind):
    with (rt.memory_cache() if kind == "memory" else rt.persistent_cache(tmp_path / "c.db")) as cache:
        sizes = [0, 1, 16 * 1024 - 1, 16 * 1024, 16 * 1024 + 1, 3 * 1024 * 1024]
        for size in sizes:
            cache[f"k{size}"] = bytes([size % 251]) * size
        for size in sizes:
            assert cache[f"k{size}"] == bytes([size % 251]) * size and f"k{size}" in cache
        assert cache.get("nothing") is None and "nothing" not in cache


def test_cache_reads_from_many_threads_each_get_their_own_value(rt, tmp_path):
    # Values on both sides of the read buffer's size, read by threads that the
    # interpreter switches between as often as it can.
    values = {f"k{i}": f"value {i};".encode() * (i * 60) for i in range(50)}
    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        with rt.memory_cache() as memory, rt.persistent_cache(tmp_path / "c.db") as persistent:
            for cache in (memory, persistent):
                cache.update(values)
            wrong = []

            def read(cache):
                for _ in range(30):
                    for key, value in values.items():
                        if cache[key] != value or cache.get(key) != value:
                            wrong.append(key)

            threads = [threading.Thread(target=read, args=(c,)) for c in (memory, persistent) for _ in range(4)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            assert wrong == []
    finally:
        sys.setswitchinterval(switch)


def test_cache_items_skip_entries_removed_while_iterating(rt):
    with rt.memory_cache(codec=loadstate.JSON) as cache:
        cache.update({"a": 1, "b": 2, "c": 3})
        seen = []
        for key, value in cache.items():
            seen.append((key, value))
            cache.pop(b"b", None)
            cache.pop(b"a", None)
        assert seen == [(b"c", 3)]


def test_a_persistent_cache_lists_its_keys_in_byte_order(rt, tmp_path):
    with rt.persistent_cache(tmp_path / "cache.db") as cache:
        for key in ("b", "a", "c"):
            cache[key] = key.encode()
        assert list(cache) == [b"a", b"b", b"c"] and len(cache) == 3
        assert dict(cache.items()) == {b"a": b"a", b"b": b"b", b"c": b"c"}
    with rt.persistent_cache(tmp_path / "cache.db") as cache:
        assert list(cache) == [b"a", b"b", b"c"]


def test_enums_print_their_names_and_compare_as_ints():
    assert str(Status.LOADED) == "Status.LOADED" and f"{Status.LOADED}" == "Status.LOADED"
    assert f"{Domain.HTTP:>12}" == " Domain.HTTP"
    assert str(EventType.PROGRESS) == "EventType.PROGRESS" and str(Delivery.POLL) == "Delivery.POLL"
    assert str(Flags.PARTIAL | Flags.REFRESHING) in ("Flags.REFRESHING|PARTIAL", "Flags.PARTIAL|REFRESHING")
    assert str(Flags.NONE) == "Flags.NONE"
    assert str(loadstate.Code.ENOENT) == "Code.ENOENT" and loadstate.Code.ENOENT == -2
    assert Status.LOADED == 2 and Status(2) is Status.LOADED and int(Domain.HTTP) == 4
    assert repr(Status.LOADED) == "<Status.LOADED: 2>"


def test_events_work_with_async_for_and_anext():
    async def main():
        async with loadstate.Runtime(Delivery.POLL) as rt:
            cell = rt.loadable(rt.loader(lambda job: job.request, inline=True))
            async with cell.events() as events:
                await cell.load(b"v")
                first = await anext(events)
                second = await anext(events)
            assert (first.status, second.status, second.value) == (Status.LOADING, Status.LOADED, b"v")
            values = []
            stream = cell.events()
            cell.set_loaded(b"w")
            cell.reset()
            async for event in stream:
                values.append((event.status, event.value))
                if event.status is Status.ABSENT:
                    break
            assert values == [(Status.LOADED, b"w"), (Status.ABSENT, None)]

    run(main())


def test_a_stream_can_leave_out_progress_events():
    async def main():
        async with loadstate.Runtime(Delivery.POLL) as rt:
            @rt.loader
            async def steps(job):
                for done in range(3):
                    job.progress(done, 3)
                    await asyncio.sleep(0)
                return b"done"

            cell = rt.loadable(steps)
            async with cell.events(progress=False) as quiet, cell.events() as everything:
                await cell.load()
                quiet_types = [(await anext(quiet)).type for _ in range(2)]
                all_types = [(await anext(everything)).type for _ in range(5)]
            assert quiet_types == [EventType.STATE, EventType.STATE]
            assert all_types.count(EventType.PROGRESS) == 3

    run(main())


def test_spin_is_not_part_of_the_public_api():
    parameters = inspect.signature(loadstate.Runtime).parameters
    assert [name for name in parameters if "spin" in name] == []
    assert "spin" not in (loadstate.Runtime.__init__.__doc__ or "") + (loadstate.Runtime.__doc__ or "")
    for name in ("spin", "_spin"):
        with pytest.raises(TypeError):
            loadstate.Runtime(**{name: 0})


def test_raw_calls_and_ctypes_ids_are_not_public(rt):
    # The library's raw cache calls skip ctypes' argument checks, and a loader's ctypes id is passed as
    # is on every load: internals, kept out of the attributes a user sees.
    assert sorted(name for name in vars(rt.library) if not name.startswith("_")) == ["dll", "path", "version"]
    loader = rt.loader(lambda job: b"")
    assert sorted(name for name in vars(loader) if not name.startswith("_")) == [
        "codec", "fn", "id", "mode", "name", "request_codec"]
    assert rt.loadable(loader).load().value(WAIT) == b""


def test_the_spin_is_read_from_the_environment_when_the_package_is_imported():
    code = ("import loadstate, loadstate._core as core, loadstate.runtime as runtime\n"
            "given = []\n"
            "class Spy(core.Core):\n"
            "    def __init__(self, lib, delivery, on_error, workers, spin_us, *rest):\n"
            "        given.append(spin_us)\n"
            "        super().__init__(lib, delivery, on_error, workers, spin_us, *rest)\n"
            "core.Core = Spy\n"
            "loadstate.Runtime().close()\n"
            "import os\n"
            "os.environ['LOADSTATE_SPIN_US'] = '99'  # read once: a later change is not seen\n"
            "loadstate.Runtime().close()\n"
            "print(given)\n")
    for value, expected in (("7", "[7, 7]"), ("", "[50, 50]"), (None, "[50, 50]")):
        env = {key: val for key, val in os.environ.items() if key != "LOADSTATE_SPIN_US"}
        if value is not None:
            env["LOADSTATE_SPIN_US"] = value
        env["PYTHONPATH"] = os.pathsep.join([str(PACKAGE_ROOT)] + sys.path)
        result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=WAIT)
        assert (result.returncode, result.stdout.strip()) == (0, expected), result.stderr
    env["LOADSTATE_SPIN_US"] = "a lot"
    result = subprocess.run([sys.executable, "-c", "import loadstate; loadstate.Runtime()"], env=env,
                            capture_output=True, text=True, timeout=WAIT)
    assert result.returncode != 0
    assert "ValueError: LOADSTATE_SPIN_US must be a whole number of microseconds" in result.stderr
