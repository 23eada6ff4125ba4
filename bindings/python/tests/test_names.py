"""Names of loaders and cells: checked when given, shown by the metrics text (the loader label, escaped, which
promtool and the Prometheus client's parser read back) and by the inspector (its JSON and its page, as text)."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest
from browser import Browser, chromium_path
from conftest import WAIT
from test_inspector import get, parts

import loadstate
from loadstate import Status

# Host text a dashboard or a page must show as it is: quotes, backslashes, markup, non-ASCII.
AWKWARD = 'users "v2" \\ <b>&amp;</b> caf\u00e9 \u2713 \U0001f600'


def test_a_name_is_text_of_at_most_name_max_bytes_without_control_characters(rt):
    fn = lambda job: job.request  # noqa: E731
    longest = "\u2713" * (loadstate.NAME_MAX // 3) + "x" * (loadstate.NAME_MAX % 3)
    assert len(longest.encode()) == loadstate.NAME_MAX
    assert rt.loader(fn, name=longest).name == longest
    assert rt.loadable(name=longest).name == longest
    for bad in (longest + "x", "a\nb", "tab\t", "del\x7f", "c1\x85", "\ud800"):
        with pytest.raises(loadstate.InvalidArgument, match="name"):
            rt.loader(fn, name=bad)
        with pytest.raises(loadstate.InvalidArgument, match="name"):
            rt.loadable(name=bad)
        with pytest.raises(loadstate.InvalidArgument, match="name"):
            rt.http_loader(name=bad)
    with pytest.raises(TypeError, match="name must be str or None"):
        rt.process(name=b"bytes")  # type: ignore[arg-type]
    # "" is no name; built-in loaders and process cells take one too.
    assert rt.loader(fn, name="").name is None and rt.loader(fn).name is None
    assert rt.file_loader(name="files").name == "files" and rt.exec_loader(name="cmds").name == "cmds"
    assert rt.http_loader(name="api").name == "api" and rt.process(name="save").name == "save"
    assert "name='api'" in repr(rt.http_loader(name="api"))


def test_metrics_label_loaders_by_name_escaped_and_promtool_accepts_them(rt):
    from prometheus_client.parser import text_string_to_metric_families

    promtool = shutil.which("promtool")
    assert promtool, "promtool is missing: `make deps` installs Debian's prometheus package"
    awkward = rt.loader(lambda job: job.request.upper(), name=AWKWARD)
    twins = [rt.loader(lambda job: job.request, name="twin") for _ in range(2)]
    plain = rt.loader(lambda job: job.request)

    @rt.loader(name="fails")
    def fails(job):
        raise loadstate.LoadFailed(42, "nope")

    cache = rt.memory_cache()
    cell = rt.loadable(awkward)
    first = dict(cache=cache, cache_key="k", policy=loadstate.CachePolicy.CACHE_FIRST, fresh=60)
    assert cell.load(b"a", **first).value(WAIT) == b"A"
    assert cell.load(b"a", **first).state(WAIT).from_cache  # answered by the cache alone
    for twin, n in zip(twins, (1, 2)):
        for _ in range(n):
            assert rt.loadable(twin).load(b"t").value(WAIT) == b"t"
    assert rt.loadable(plain).load(b"p").value(WAIT) == b"p"
    assert rt.loadable(fails).load(b"f").state(WAIT).status == Status.ERROR

    text = rt.metrics_text()
    assert 'loader="users \\"v2\\" \\\\ <b>&amp;</b> caf\u00e9' in text
    families = {f.name: f for f in text_string_to_metric_families(text)}
    started = {s.labels["loader"]: s.value for s in families["loadstate_loads_started"].samples}
    # By name (the parser undoes the escapes), the id without one; twins share one series.
    assert started == {AWKWARD: 2, "twin": 3, str(plain.id): 1, "fails": 1, "freed": 0}
    ended = {(s.labels["loader"], s.labels["outcome"]): s.value for s in families["loadstate_loads_ended"].samples}
    assert ended[(AWKWARD, "from_cache")] == 1 and ended[(AWKWARD, "succeeded")] == 1
    assert ended[("twin", "succeeded")] == 3 and ended[("fails", "failed")] == 1
    histogram = families["loadstate_load_duration_seconds"].samples
    assert [s.value for s in histogram if s.name.endswith("_count") and s.labels["loader"] == "twin"] == [3]
    checked = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0 and checked.stdout == "" and checked.stderr == "", checked

    # A closed twin's loads move to "freed"; the other keeps the name.
    twins[1].close()
    families = {f.name: f for f in text_string_to_metric_families(rt.metrics_text())}
    started = {s.labels["loader"]: s.value for s in families["loadstate_loads_started"].samples}
    assert started["twin"] == 1 and started["freed"] == 2


def test_the_inspector_snapshot_gives_names_and_cache_keys(rt):
    named = rt.loader(lambda job: job.request, name=AWKWARD)
    cache = rt.memory_cache()
    cell = rt.loadable(named, name="profile <" + "\u00e9>")
    assert cell.load(b"r", cache=cache, cache_key="user/7 \u00e9").value(WAIT) == b"r"
    bare = rt.loadable(rt.loader(lambda job: job.request))
    assert bare.load(b"s").value(WAIT) == b"s"
    proc = rt.process(name="save")
    url = rt.start_inspector()
    _, _, token = parts(url)
    raw = get(url, f"/snapshot?token={token}")[2]
    # Markup characters are escaped in the JSON too (it may end up in a page).
    assert b"<" not in raw and b">" not in raw and b"&" not in raw
    snapshot = json.loads(raw)
    cells = {c["id"]: c for c in snapshot["cells"]}
    assert cells[cell.id]["name"] == "profile <\u00e9>" and cells[cell.id]["key"] == "user/7 \u00e9"
    assert "name" not in cells[bare.id] and "key" not in cells[bare.id]
    assert cells[proc.id]["name"] == "save" and cells[proc.id]["kind"] == "process"
    loaders = {entry["id"]: entry for entry in snapshot["loaders"]}
    assert loaders[named.id]["name"] == AWKWARD
    assert all("name" not in entry for entry in snapshot["loaders"] if entry["id"] != named.id)


@pytest.mark.skipif(chromium_path() is None, reason="chromium is not installed (make test-python installs it)")
def test_the_page_shows_names_and_keys_as_text(rt):
    markup = '<img src=x onerror="window.injected=1">'
    loader = rt.loader(lambda job: job.request, name="api " + markup)
    cache = rt.memory_cache()
    cell = rt.loadable(loader, name="cell " + markup)
    assert cell.load(b"r", cache=cache, cache_key="key " + markup).value(WAIT) == b"r"
    url = rt.start_inspector(interval=0.1)
    browser = Browser(timeout=WAIT)
    try:
        browser.navigate(url)
        row = browser.evaluate("""
new Promise((resolve) => {
  const check = () => {
    const row = document.querySelector('tr[data-cell="%d"]');
    if (row) { resolve(Array.from(row.cells, (c) => c.textContent)); return true; }
    return false;
  };
  if (!check()) {
    const observer = new MutationObserver(() => { if (check()) observer.disconnect(); });
    observer.observe(document.body, { subtree: true, childList: true });
  }
})""" % cell.id)
        assert "cell " + markup in row and "key " + markup in row
        loaders = browser.evaluate("document.getElementById('loaders').textContent")
        assert "api " + markup in loaders
        assert browser.evaluate("document.querySelectorAll('img').length") == 0
        assert browser.evaluate("window.injected === undefined") is True
    finally:
        browser.close()
