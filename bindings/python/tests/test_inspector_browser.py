"""The inspector in a real browser: headless Chromium opens the page with its token, sees a cell go from
loading to loaded without reloading, and is refused without the token. The screenshot is kept under
build/inspector/."""

from __future__ import annotations

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


def test_the_page_is_refused_without_the_token(rt, browser):
    url = rt.start_inspector()
    browser.navigate(url.split("?")[0])
    text = browser.evaluate("document.body.innerText")
    assert "forbidden" in text and "loadstate inspector" not in text
    browser.navigate(url.split("?")[0] + "?token=" + "0" * 32)
    assert "forbidden" in browser.evaluate("document.body.innerText")
