"""Pages cells: infinite loads, one job per page."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from conftest import WAIT, Jobs

import loadstate
from loadstate import Code, Flags, LoadOptions, Page, PageRequest, PagesCell, Status, succeed_page

PREVIOUS = Flags.PAGE_PREVIOUS
DROPPED = Flags.PAGES_DROPPED


class Log:
    """The events of a pages cell, with a wait on a condition over them."""

    def __init__(self) -> None:
        self.events: list = []
        self.changed = threading.Condition()

    def __call__(self, event) -> None:
        with self.changed:
            self.events.append(event)
            self.changed.notify_all()

    def wait_for(self, test, start: int = 0):
        with self.changed:
            assert self.changed.wait_for(lambda: any(test(e) for e in self.events[start:]), WAIT)
            return next(e for e in self.events[start:] if test(e))


def page_of(job: loadstate.Job) -> PageRequest:
    return PageRequest.decode(job.raw_request)


def settled(event) -> bool:
    return event.status != Status.LOADING and not event.flags & (Flags.REFRESHING | Flags.PARTIAL)


def first_page(jobs: Jobs, cell: PagesCell, request: bytes = b"q", options=None):
    load = cell.load(request, jobs.loader, options=options)
    job = jobs.next()
    assert page_of(job) == PageRequest(request, None, 0)
    succeed_page(job, b"p0", b"c1", b"c0")
    return load.state(WAIT)


def next_page(jobs: Jobs, cell: PagesCell, cursor: bytes, value: bytes, after, before):
    load = cell.load_next()
    job = jobs.next()
    assert page_of(job) == PageRequest(b"q", cursor, 1)
    succeed_page(job, value, after, before)
    return load.state(WAIT)


def test_three_pages_forward_and_one_backward(rt, jobs):
    log = Log()
    cell = PagesCell(rt, on_event=log)
    assert not cell.has_next and len(cell) == 0
    with pytest.raises(loadstate.WrongState):
        cell.load_next()
    first = first_page(jobs, cell)
    assert (first.status, first.kind, first.value, first.request) == (Status.LOADED, 0, b"p0", b"q")
    assert cell.has_next and cell.has_previous
    second = next_page(jobs, cell, b"c1", b"p1", b"c2", b"c0")
    assert (second.kind, second.value) == (1, b"p1")
    third = next_page(jobs, cell, b"c2", b"p2", None, b"c1")
    assert (third.kind, third.value) == (2, b"p2")
    assert not cell.has_next
    with pytest.raises(loadstate.WrongState):
        cell.load_next()
    before = cell.load_previous()
    job = jobs.next()
    assert page_of(job) == PageRequest(b"q", b"c0", -1)
    succeed_page(job, b"p-1", b"c0x", None)
    inserted = before.state(WAIT)
    assert (inserted.kind, inserted.value, inserted.status) == (0, b"p-1", Status.LOADED)
    assert inserted.flags & PREVIOUS and not inserted.flags & DROPPED
    assert cell.pages == [b"p-1", b"p0", b"p1", b"p2"]
    assert cell.page(3).kind == 3
    assert not cell.has_previous
    with pytest.raises(loadstate.NotFound):
        cell.page(4)
    assert [e.seq for e in log.events] == list(range(1, len(log.events) + 1))
    cell.reset()
    log.wait_for(lambda e: e.status == Status.ABSENT)
    assert cell.pages == []
    with pytest.raises(loadstate.WrongState):
        cell.refresh()
    cell.close()
    assert cell.closed


def test_a_second_load_next_while_one_loads_starts_nothing(rt, jobs):
    cell = PagesCell(rt)
    first_page(jobs, cell)
    one, two = cell.load_next(), cell.load_next()
    job = jobs.next()
    succeed_page(job, b"p1", None, None)
    assert one.state(WAIT).value == b"p1" and two.state(WAIT).value == b"p1"
    assert jobs.empty()


def test_the_cap_drops_pages_from_the_other_end(rt, jobs):
    cell = PagesCell(rt, max_pages=2)
    first_page(jobs, cell)
    next_page(jobs, cell, b"c1", b"p1", b"c2", b"c0")
    third = next_page(jobs, cell, b"c2", b"p2", b"c3", b"c1")
    assert third.kind == 1 and third.flags & DROPPED
    assert cell.pages == [b"p1", b"p2"]
    before = cell.load_previous()
    job = jobs.next()
    assert page_of(job) == PageRequest(b"q", b"c0", -1)
    succeed_page(job, b"p0", b"c1", None)
    inserted = before.state(WAIT)
    assert inserted.flags & (PREVIOUS | DROPPED) == PREVIOUS | DROPPED
    assert cell.pages == [b"p0", b"p1"]
    with pytest.raises(loadstate.InvalidArgument):
        PagesCell(rt, max_pages=loadstate.PAGES_MAX + 1)


def test_refresh_reloads_in_order_and_stops_at_a_changed_cursor(rt, jobs):
    log = Log()
    cell = PagesCell(rt, on_event=log)
    first_page(jobs, cell)
    next_page(jobs, cell, b"c1", b"p1", b"c2", b"c0")
    next_page(jobs, cell, b"c2", b"p2", b"c3", b"c1")
    start = len(log.events)
    refresh = cell.refresh()
    job0 = jobs.next()
    assert page_of(job0) == PageRequest(b"q", None, 0)
    log.wait_for(lambda e: e.kind == 0 and e.flags & Flags.REFRESHING and e.value == b"p0", start)
    # Page 1 waits for page 0 (a short look: nothing may start).
    time.sleep(0.03)
    assert jobs.empty()
    succeed_page(job0, b"p0 new", b"c1", b"c0")
    job1 = jobs.next()
    assert page_of(job1) == PageRequest(b"q", b"c1", 1)
    page0 = log.wait_for(lambda e: e.kind == 0 and e.value == b"p0 new" and settled(e), start)
    assert log.events.index(page0) < len(log.events)
    succeed_page(job1, b"p1 new", b"other", b"c0")
    ended = refresh.state(WAIT)
    assert (ended.kind, ended.value) == (1, b"p1 new") and ended.flags & DROPPED
    assert cell.pages == [b"p0 new", b"p1 new"]
    time.sleep(0.03)
    assert jobs.empty()
    # Nothing showed LOADING during the refresh.
    assert not [e for e in log.events[start:] if e.status == Status.LOADING]


def test_refresh_to_the_end(rt, jobs):
    cell = PagesCell(rt)
    first_page(jobs, cell)
    next_page(jobs, cell, b"c1", b"p1", None, b"c0")
    refresh = cell.refresh()
    succeed_page(jobs.next(), b"a", b"c1", b"c0")
    job = jobs.next()
    assert page_of(job).cursor == b"c1"
    succeed_page(job, b"b", None, b"c0")
    ended = refresh.state(WAIT)
    assert (ended.kind, ended.value) == (1, b"b") and not ended.flags & DROPPED
    assert cell.pages == [b"a", b"b"]


def test_a_failed_next_page_leaves_the_others(rt, jobs):
    cell = PagesCell(rt)
    first_page(jobs, cell)
    load = cell.load_next()
    jobs.next().fail(42, "down", final=True)
    failed = load.state(WAIT)
    assert (failed.status, failed.kind, failed.error_code) == (Status.ERROR, 1, 42)
    assert cell.pages == [b"p0"] and cell.has_next
    assert next_page(jobs, cell, b"c1", b"p1", None, b"c0").value == b"p1"


def test_cancel_a_running_next_page(rt, jobs):
    cell = PagesCell(rt)
    first_page(jobs, cell)
    load = cell.load_next()
    job = jobs.next()
    cell.cancel()
    cancelled = load.state(WAIT)
    assert (cancelled.status, cancelled.kind) == (Status.ABSENT, 1) and cancelled.flags & Flags.CANCELLED
    assert job.wait_cancelled(WAIT)
    with pytest.raises(loadstate.Cancelled):
        succeed_page(job, b"late")
    assert cell.pages == [b"p0"]


def test_pages_are_cached_with_their_cursors(rt, jobs):
    cache = rt.memory_cache()
    options = LoadOptions(cache=cache, policy=loadstate.CachePolicy.CACHE_FIRST, fresh=60)
    one = PagesCell(rt)
    first_page(jobs, one, options=options)
    next_page(jobs, one, b"c1", b"p1", b"c2", b"c0")
    two = PagesCell(rt)
    cached = two.load(b"q", jobs.loader, options=options).state(WAIT)
    assert cached.value == b"p0" and cached.flags & Flags.FROM_CACHE
    assert two.load_next().state(WAIT).flags & Flags.FROM_CACHE
    assert two.pages == [b"p0", b"p1"] and two.has_next
    assert jobs.empty()
    load = two.load_next()
    job = jobs.next()
    assert page_of(job) == PageRequest(b"q", b"c2", 1)
    succeed_page(job, b"p2")
    assert load.state(WAIT).value == b"p2"


def test_pages_share_one_job_each(rt, jobs):
    options = LoadOptions(share=True)
    one, two = PagesCell(rt), PagesCell(rt)
    a = one.load(b"q", jobs.loader, options=options)
    job = jobs.next()
    b = two.load(b"q", jobs.loader, options=options)
    succeed_page(job, b"p0", b"c1")
    assert a.state(WAIT).value == b"p0" and b.state(WAIT).value == b"p0"
    a, b = one.load_next(), two.load_next()
    job = jobs.next()
    assert page_of(job).cursor == b"c1"
    succeed_page(job, b"p1")
    assert a.state(WAIT).value == b"p1" and b.state(WAIT).value == b"p1"
    assert jobs.empty()


def test_a_bad_encoded_value_is_an_error(rt, jobs):
    cell = PagesCell(rt)
    load = cell.load(b"q", jobs.loader)
    jobs.next().succeed(b"\0LPV\x09\0\0\0x")
    bad = load.state(WAIT)
    assert (bad.status, bad.error_domain, bad.error_code) == (Status.ERROR, loadstate.Domain.LOADSTATE,
                                                              Code.EINVAL)
    load = cell.load(b"q", jobs.loader)
    jobs.next().succeed(b"plain")
    assert load.state(WAIT).value == b"plain" and not cell.has_next and not cell.has_previous
    load = cell.load(b"q", jobs.loader)
    with pytest.raises(loadstate.TooBig):
        succeed_page(jobs.next(), b"v", b"c" * (loadstate.CURSOR_MAX + 1))
    assert load.state(WAIT).error_code == Code.ETOOBIG
    with pytest.raises(loadstate.InvalidArgument):
        PageRequest.decode(b"nope")


def test_page_loader_returns_values_with_cursors(rt):
    seen = []

    def pages(request: PageRequest):
        seen.append(request)
        number = int(request.cursor or b"0")
        return Page(b"page %d" % number, b"%d" % (number + 1) if number < 2 else None,
                    b"%d" % (number - 1) if number > 0 else None)

    cell = PagesCell(rt, loadstate.page_loader(rt, pages))
    assert cell.load(b"list").state(WAIT).value == b"page 0"
    assert cell.load_next().state(WAIT).value == b"page 1"
    assert cell.load_next().state(WAIT).value == b"page 2"
    assert not cell.has_next and cell.pages == [b"page 0", b"page 1", b"page 2"]
    assert seen[1] == PageRequest(b"list", b"1", 1)


def test_await_and_async_page_loader():
    async def main() -> None:
        with loadstate.Runtime() as runtime:
            async def pages(request: PageRequest):
                await asyncio.sleep(0)
                return (request.request + (request.cursor or b"-"), b"n" if request.cursor is None else None)

            cell = PagesCell(runtime, loadstate.page_loader(runtime, pages), codec=loadstate.BYTES)
            assert (await cell.load(b"x")).value == b"x-"
            event = await cell.load_next()
            assert (event.kind, event.value) == (1, b"xn")
            assert not cell.has_next

    asyncio.run(main())


def test_closing_the_runtime_ends_waiting_loads(errors):
    runtime = loadstate.Runtime(on_error=errors)
    jobs = Jobs(runtime)
    cell = PagesCell(runtime, jobs.loader)
    load = cell.load(b"q")
    jobs.next()
    runtime.close()
    with pytest.raises(loadstate.Closed):
        load.state(WAIT)


def test_poll_delivery(poll_rt):
    jobs = Jobs(poll_rt)
    log = Log()
    cell = PagesCell(poll_rt, jobs.loader, max_pages=1, on_event=log)
    load = cell.load(b"q")
    succeed_page(jobs.next(), b"p0", None, b"c0")
    deadline = time.monotonic() + WAIT
    while not load.done() and time.monotonic() < deadline:
        poll_rt.poll(0.1)
    assert load.state(0).value == b"p0"
    before = cell.load_previous()
    succeed_page(jobs.next(), b"p-1", b"c1", None)
    while not before.done() and time.monotonic() < deadline:
        poll_rt.poll(0.1)
    inserted = before.state(0)
    assert inserted.flags & (PREVIOUS | DROPPED) == PREVIOUS | DROPPED
    assert cell.pages == [b"p-1"]
    assert [e.seq for e in log.events] == list(range(1, len(log.events) + 1))


def test_a_load_replaced_before_its_first_page_ends_is_superseded(rt, jobs):
    log = Log()
    cell = PagesCell(rt, jobs.loader, on_event=log)
    first = cell.load(b"A")
    job_a = jobs.next()
    assert page_of(job_a) == PageRequest(b"A", None, 0)
    second = cell.load(b"B")
    job_b = jobs.next()
    assert page_of(job_b) == PageRequest(b"B", None, 0)
    with pytest.raises(loadstate.Superseded):
        first.state(WAIT)
    assert not second.done()
    try:
        succeed_page(job_a, b"pA", None, None)  # its page was dropped with its job: nothing shows it
    except loadstate.Cancelled:
        pass
    succeed_page(job_b, b"pB", None, None)
    page = second.state(WAIT)
    assert (page.kind, page.value, page.request) == (0, b"pB", b"B")
    assert cell.pages == [b"pB"]
    # One PAGES_LOAD event for each load, in order.
    assert [e.request for e in log.events if e.flags & Flags.PAGES_LOAD] == [b"A", b"B"]


def test_a_late_first_page_of_an_earlier_load_settles_only_that_load(poll_rt):
    jobs = Jobs(poll_rt)
    log = Log()
    cell = PagesCell(poll_rt, jobs.loader, on_event=log)
    first = cell.load(b"A")
    succeed_page(jobs.next(), b"pA", b"c1", None)
    # A's page ended on the loop; its event is not delivered yet when B is asked for.
    second = cell.load(b"B")
    job_b = jobs.next()
    deadline = time.monotonic() + WAIT
    while not first.done() and time.monotonic() < deadline:
        poll_rt.poll(0.1)
    assert (first.state(0).value, first.state(0).request) == (b"pA", b"A")
    # B's load saw A's page go by without taking it.
    while len(log.events) < 3 and time.monotonic() < deadline:
        poll_rt.poll(0.1)
    assert not second.done()
    succeed_page(job_b, b"pB", None, None)
    while not second.done() and time.monotonic() < deadline:
        poll_rt.poll(0.1)
    assert (second.state(0).value, second.state(0).request) == (b"pB", b"B")


def test_a_next_page_asked_before_a_new_load_is_superseded(rt, jobs):
    cell = PagesCell(rt, jobs.loader)
    first_page(jobs, cell)
    after = cell.load_next()
    jobs.next()
    again = cell.load(b"q2")
    with pytest.raises(loadstate.Superseded):
        after.state(WAIT)
    succeed_page(jobs.next(), b"n0", None, None)
    assert again.state(WAIT).value == b"n0"

