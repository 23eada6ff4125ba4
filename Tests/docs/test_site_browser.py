"""The built site in a real browser: headless Chromium opens the home page
and the C reference, which render with their title, the navigation sidebar
(the guide, languages and reference entries) and the search box, and a
search for a C function lists the C reference. The site is served on
127.0.0.1 by Python's http.server from a thread. Every wait is for a DOM
condition, bounded by WAIT seconds. Run after `make docs`."""

import functools
import json
import sys
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

import pytest

from docsite import ROOT, SITE

sys.path.insert(0, str(ROOT / "bindings" / "python" / "tests"))
from browser import Browser, chromium_path  # noqa: E402  (the inspector's DevTools client)

WAIT = 20

# Resolves with what check() returns once it is truthy, checked at once and
# on every change of the document; rejects after WAIT seconds.
WAIT_FOR = """
new Promise((resolve, reject) => {
  const check = () => { %s };
  const timer = setTimeout(() => { observer.disconnect(); reject(new Error("timed out: " + %s)); }, %d);
  const observer = new MutationObserver(() => {
    const value = check();
    if (value) { observer.disconnect(); clearTimeout(timer); resolve(value); }
  });
  const value = check();
  if (value) { clearTimeout(timer); resolve(value); return; }
  observer.observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
})
"""

# What a page shows of the site's frame, as one JSON-able object.
FRAME = """
const sidebar = document.querySelector(".sidebar-tree");
const search = document.querySelector("form.sidebar-search-container input[name=q]");
if (!sidebar || !search || document.readyState !== "complete") return null;
const box = sidebar.getBoundingClientRect();
return {
  title: document.title,
  captions: Array.from(sidebar.querySelectorAll("p.caption"), (c) => c.textContent.trim()),
  links: Array.from(sidebar.querySelectorAll("a.reference"), (a) => a.href.split("#")[0]),
  sidebarVisible: box.width > 100 && box.height > 100 && getComputedStyle(sidebar).visibility !== "hidden",
  searchAction: search.form.getAttribute("action"),
  searchVisible: search.getBoundingClientRect().width > 50,
  styled: getComputedStyle(document.body).fontFamily !== "" && document.styleSheets.length > 0,
  heading: (document.querySelector("article h1") || {}).textContent,
};
"""


def wait_for(browser, check, what):
    return browser.evaluate(WAIT_FOR % (check, json.dumps(what), WAIT * 1000))


@pytest.fixture(scope="module")
def site_url():
    assert (SITE / "index.html").is_file(), f"{SITE}: build the site first (make docs)"
    handler = functools.partial(type("Quiet", (SimpleHTTPRequestHandler,), {"log_message": lambda *a: None}),
                                directory=str(SITE))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def browser():
    assert chromium_path(), "chromium is not installed (make test-docs installs it)"
    b = Browser(timeout=WAIT)
    yield b
    b.close()


def check_frame(frame, title):
    assert title in frame["title"], frame["title"]
    assert frame["captions"] == ["Guide", "Languages", "Reference"], frame["captions"]
    for page in ("languages/c.html", "languages/python.html", "reference/c.html", "reference/python.html",
                 "reference/rust.html", "reference/swift.html"):
        assert any(link.endswith(page) for link in frame["links"]), (page, frame["links"])
    assert frame["sidebarVisible"] and frame["searchVisible"] and frame["styled"], frame
    assert frame["searchAction"].endswith("search.html"), frame["searchAction"]


def test_the_home_page_renders(site_url, browser):
    browser.navigate(f"{site_url}/index.html")
    frame = wait_for(browser, FRAME, "the home page's sidebar and search box")
    check_frame(frame, "loadstate")
    assert frame["heading"].startswith("loadstate"), frame["heading"]


def test_the_c_reference_renders(site_url, browser):
    browser.navigate(f"{site_url}/reference/c.html")
    frame = wait_for(browser, FRAME, "the C reference's sidebar and search box")
    check_frame(frame, "C API")
    entry = wait_for(browser, """
      const e = document.getElementById("c.lds_runtime_new");
      return e && e.closest("dl.c.function") && e.textContent.includes("lds_runtime_new") ? e.textContent : null;
    """, "the entry of lds_runtime_new")
    assert "lds_runtime_options" in entry, entry
    sections = browser.evaluate("Array.from(document.querySelectorAll('article section > section > h2'),"
                                " (h) => h.textContent.replace(/#$/, ''))")
    assert sections[:3] == ["Version", "Return codes", "Constants"], sections
    assert "Host signals" in sections, sections


def test_a_search_finds_the_c_reference(site_url, browser):
    browser.navigate(f"{site_url}/search.html?q=lds_runtime_new")
    found = wait_for(browser, """
      const links = Array.from(document.querySelectorAll("#search-results ul.search li a"));
      const hit = links.find((a) => a.getAttribute("href").includes("reference/c.html"));
      return hit ? [hit.getAttribute("href"), links.length] : null;
    """, "a search result in the C reference")
    assert found[0].startswith("reference/c.html"), found
