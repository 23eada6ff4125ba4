"""The inspector in a real browser: headless Chromium opens the page with its token, sees a cell go from
loading to loaded without reloading, sees a job wait in its loader's queue as it ages, and is refused
without the token. The screenshot is kept under build/inspector/."""

from __future__ import annotations

import queue
from pathlib import Path

import pytest
from browser import Browser, chromium_path
from conftest import WAIT

import loadstate

ARTEFACTS = Path(__file__).resolve().parents[3] / "build" / "inspector"

pytestmark = pytest.mark.skipif(chromium_path() is None, reason="chromium is not installed (make test-python installs it)")

# Resolves with the cell's status once it is `want` (a MutationObserver: no polling).
WAIT_FOR_STATUS = """
new Promise((resolve) => {
  const check = () => {
    const badge = document.querySelector('tr[data-cell="%d"] .status');
    if (badge && badge.textContent === "%s") { resolve(badge.textContent); return true; }
    return false;
  };
  if (!check()) {
    const observer = new MutationObserver(() => { if (check()) observer.disconnect(); });
    observer.observe(document.body, { subtree: true, childList: true, characterData: true });
  }
})
"""

# Resolves with the row of the queued job whose request is %r once it has waited %f s or more, as
# [loader, id, priority, attempt, waiting for, cells, request].
WAIT_FOR_QUEUED = """
new Promise((resolve) => {
  const check = () => {
    for (const row of document.querySelectorAll('#queued tr[data-job]')) {
      const texts = Array.from(row.cells, (c) => c.textContent);
      if (texts[6] === %r && parseFloat(texts[4]) >= %f) { resolve(texts); return true; }
    }
    return false;
  };
  if (!check()) {
    const observer = new MutationObserver(() => { if (check()) observer.disconnect(); });
    observer.observe(document.body, { subtree: true, childList: true, characterData: true });
  }
})
"""


# Resolves with [flags column, last timeline bar's tooltip] of the cell once its flags column reads %r.
WAIT_FOR_FLAGS = """
new Promise((resolve) => {
  const check = () => {
    const row = document.querySelector('tr[data-cell="%d"]');
    if (!row || row.cells[5].textContent !== %r) return false;
    const bars = row.cells[4].querySelectorAll("title");
    resolve([row.cells[5].textContent, bars.length ? bars[bars.length - 1].textContent : ""]);
    return true;
  };
  if (!check()) {
    const observer = new MutationObserver(() => { if (check()) observer.disconnect(); });
    observer.observe(document.body, { subtree: true, childList: true, characterData: true });
  }
})
"""


@pytest.fixture
def browser():
    b = Browser(timeout=WAIT)
    yield b
    b.close()


def test_the_page_shows_a_cell_go_from_loading_to_loaded_without_reloading(rt, jobs, browser):
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    url = rt.start_inspector(interval=0.1, show_values=True)
    cache = rt.memory_cache()
    cache["user/1"] = b"Ada"
    assert cache["user/1"] == b"Ada"
    done = rt.loadable(rt.loader(lambda job: job.request.upper()))
    assert done.load(b"hello").value(WAIT) == b"HELLO"
    cell = rt.loadable(jobs.loader)
    load = cell.load(b"GET /users/7")
    job = jobs.next()

    browser.navigate(url)
    assert browser.evaluate(WAIT_FOR_STATUS % (cell.id, "loading")) == "loading"
    # A mark on this document: it must still be there once the cell is loaded.
    browser.evaluate("window.sameDocument = 'yes'")
    browser.screenshot(str(ARTEFACTS / "inspector-loading.png"))
    job.succeed(b"Grace")
    assert load.value(WAIT) == b"Grace"
    assert browser.evaluate(WAIT_FOR_STATUS % (cell.id, "loaded")) == "loaded"
    assert browser.evaluate("window.sameDocument") == "yes"
    row = browser.evaluate(f"document.querySelector('tr[data-cell=\"{cell.id}\"]').innerText")
    assert "GET /users/7" in row and "Grace" in row
    assert "live" in browser.evaluate("document.getElementById('conn').textContent")
    browser.screenshot(str(ARTEFACTS / "inspector.png"))
    assert (ARTEFACTS / "inspector.png").stat().st_size > 1000


def test_the_page_shows_a_queued_job_and_its_age(rt, browser):
    started: "queue.Queue[loadstate.Job]" = queue.Queue()

    def hold(job: loadstate.Job) -> None:
        job.detach()
        started.put(job)

    limited = rt.loader(hold, inline=True, limits=loadstate.Limits(max_concurrent=1))
    running, waiting = rt.loadable(limited), rt.loadable(limited)
    running.load(b"GET /running")
    first = started.get(timeout=WAIT)
    waiting.load(b"GET /queued", priority=7)
    url = rt.start_inspector(interval=0.1)
    browser.navigate(url)
    loader, _, priority, attempt, age, cells, request = browser.evaluate(WAIT_FOR_QUEUED % ("GET /queued", 0.3))
    assert (loader, priority, attempt, cells, request) == (str(limited.id), "7", "1", "1", "GET /queued")
    assert age.endswith(" s") and float(age[:-2]) >= 0.3
    assert browser.evaluate("document.getElementById('queued-more').textContent") == ""
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    browser.screenshot(str(ARTEFACTS / "inspector-queued.png"))
    first.succeed(b"done")
    waiting.cancel()


def test_the_page_is_refused_without_the_token(rt, browser):
    url = rt.start_inspector()
    browser.navigate(url.split("?")[0])
    text = browser.evaluate("document.body.innerText")
    assert "forbidden" in text and "loadstate inspector" not in text
    browser.navigate(url.split("?")[0] + "?token=" + "0" * 32)
    assert "forbidden" in browser.evaluate("document.body.innerText")


# Resolves with the number of segments of the cell's timeline once it has at least %d.
WAIT_FOR_TIMELINE = """
new Promise((resolve) => {
  const check = () => {
    const rects = document.querySelectorAll('tr[data-cell="%d"] svg.timeline rect');
    if (rects.length >= %d) { resolve(rects.length); return true; }
    return false;
  };
  if (!check()) {
    const observer = new MutationObserver(() => { if (check()) observer.disconnect(); });
    observer.observe(document.body, { subtree: true, childList: true });
  }
})
"""

SHOWN = "Array.from(document.querySelectorAll('#%s tr[data-%s]'), (r) => Number(r.dataset.%s))"


def test_the_page_draws_timelines_and_latency_plots_and_filters_by_name_or_key(rt, browser):
    url = rt.start_inspector(interval=0.1, show_values=True)
    cache = rt.memory_cache()
    users = rt.loader(lambda job: job.request.upper(), name="users api")
    orders = rt.loader(lambda job: job.request, name="orders <b>api</b>")
    user = rt.loadable(users, name="profile")
    hostile = "<img src=x onerror=window.injected=1>"
    order = rt.loadable(orders, name=hostile)
    others = [rt.loadable(users, name=f"row {i}") for i in range(3)]
    for i in range(5):
        assert user.load(b"u%d" % i, cache=cache, cache_key="user/7").value(WAIT) == b"U%d" % i
    assert order.load(b"o1").value(WAIT) == b"o1"
    for i, other in enumerate(others):
        assert other.load(b"x%d" % i).value(WAIT) == b"X%d" % i

    browser.navigate(url)
    # Five loads: ten events, each a segment of the cell's timeline.
    assert browser.evaluate(WAIT_FOR_TIMELINE % (user.id, 10)) == 10
    statuses = browser.evaluate(
        f"Array.from(document.querySelectorAll('tr[data-cell=\"{user.id}\"] svg.timeline rect'), (r) => r.dataset.status)")
    assert statuses == ["loading", "loaded"] * 5
    # Each loader with loads has its plot: a p50 and a p90 line.
    for loader in (users, orders):
        lines = browser.evaluate(f"document.querySelectorAll('tr[data-loader=\"{loader.id}\"] svg.plot polyline').length")
        assert lines == 2
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    browser.screenshot(str(ARTEFACTS / "inspector-timeline.png"))
    assert (ARTEFACTS / "inspector-timeline.png").stat().st_size > 1000

    # The filter: by a cell's cache key, by a loader's name, by an id; then nothing filtered.
    def filter_by(text: str) -> None:
        browser.evaluate("(() => { const f = document.getElementById('filter'); f.value = %s; "
                         "f.dispatchEvent(new Event('input')); return 0; })()" % repr(text))

    filter_by("USER/7")
    assert browser.evaluate(SHOWN % ("cells", "cell", "cell")) == [user.id]
    filter_by("orders")
    assert browser.evaluate(SHOWN % ("loaders", "loader", "loader")) == [orders.id]
    assert browser.evaluate(SHOWN % ("cells", "cell", "cell")) == []
    filter_by(str(order.id))
    assert order.id in browser.evaluate(SHOWN % ("cells", "cell", "cell"))
    filter_by("")
    assert len(browser.evaluate(SHOWN % ("cells", "cell", "cell"))) == 5
    # Host text stays text: the markup in a name is shown, never run.
    assert hostile in browser.evaluate("document.getElementById('cells').textContent")
    assert browser.evaluate("document.querySelectorAll('#cells img, #loaders b').length") == 0
    assert browser.evaluate("window.injected === undefined") is True


def test_the_page_names_an_optimistic_value_and_its_rollback(rt, jobs, browser):
    from conftest import Jobs

    url = rt.start_inspector(interval=0.1)
    cache = rt.memory_cache()
    view = rt.loadable(rt.loader(lambda job: job.request))
    assert view.load(b"v0", cache=cache, cache_key=b"k").value(WAIT) == b"v0"
    writes = Jobs(rt)
    run = rt.process(writes.loader).mutate(request=b"save", optimistic={b"k": b"opt"}, cache=cache)
    write = writes.next()
    browser.navigate(url)
    flags, tip = browser.evaluate(WAIT_FOR_FLAGS % (view.id, "optimistic"))
    assert tip.startswith("loaded (optimistic)")
    write.fail(7, "refused")
    assert run.state(WAIT).status is loadstate.Status.FAILED
    flags, tip = browser.evaluate(WAIT_FOR_FLAGS % (view.id, "rolled back"))
    assert tip.startswith("loaded (rolled back)")
