"""Runtime metrics through the binding: Runtime.stats()."""

from __future__ import annotations

from conftest import WAIT

import loadstate
from loadstate import Status


def test_stats_count_loads_per_runtime_and_per_loader(rt):
    upper = rt.loader(lambda job: job.request.upper())

    @rt.loader
    def fails(job):
        raise loadstate.LoadFailed(42, "nope")

    cell = rt.loadable(upper)
    for request in (b"a", b"b", b"c"):
        assert cell.load(request).value(WAIT) == request.upper()
    failing = rt.loadable(fails)
    assert failing.load(b"x").state(WAIT).status == Status.ERROR
    stats = rt.stats()
    assert stats.enabled and stats.cells_alive == 2
    assert (stats.loads.started, stats.loads.succeeded, stats.loads.failed, stats.loads.cancelled) == (4, 3, 1, 0)
    assert stats.loads.latency_count == 4 and sum(stats.loads.latency_buckets) == 4
    assert stats.loads.latency_p50_us <= stats.loads.latency_p99_us <= stats.loads.latency_max_us
    assert stats.loaders[upper.id].succeeded == 3 and stats.loaders[upper.id].failed == 0
    assert stats.loaders[fails.id].failed == 1
    # Two events per load: LOADING and the end.
    assert stats.events_delivered == 8


def test_stats_list_caches_and_many_loaders(rt):
    loaders = [rt.loader(lambda job: job.request) for _ in range(40)]
    cache = rt.memory_cache()
    cache["k"] = b"v"
    assert cache["k"] == b"v" and "missing" not in cache
    stats = rt.stats()
    assert set(stats.loaders) == {loader.id for loader in loaders}
    assert stats.caches[cache.id] == cache.stats()


def test_a_runtime_without_metrics_counts_nothing():
    with loadstate.Runtime(metrics=False) as rt:
        cell = rt.loadable(rt.loader(lambda job: job.request))
        assert cell.load(b"a").value(WAIT) == b"a"
        stats = rt.stats()
        assert not stats.enabled and stats.loads.started == 0 and stats.events_delivered == 0
        assert stats.cells_alive == 1


def test_metrics_text_parses_back_with_prometheus_clients_parser(rt):
    from prometheus_client.parser import text_string_to_metric_families

    upper = rt.loader(lambda job: job.request.upper())
    cell = rt.loadable(upper)
    for request in (b"a", b"b"):
        cell.load(request).value(WAIT)
    gone = rt.loader(lambda job: job.request)
    other = rt.loadable(gone)
    assert other.load(b"x").value(WAIT) == b"x"
    gone.close()
    cache = rt.memory_cache()
    cache["k"] = b"v"
    assert cache["k"] == b"v"

    families = {f.name: f for f in text_string_to_metric_families(rt.metrics_text())}
    def samples(family, **labels):
        return [s for s in families[family].samples if all(s.labels.get(k) == v for k, v in labels.items())]

    loader = str(upper.id)
    assert families["loadstate_loads_started"].type == "counter"
    assert samples("loadstate_loads_started", loader=loader)[0].value == 2
    # The closed loader's load is counted under "freed": the sum is the runtime's total.
    assert sum(s.value for s in samples("loadstate_loads_started")) == rt.stats().loads.started == 3
    assert samples("loadstate_loads_ended", loader=loader, outcome="succeeded")[0].value == 2
    histogram = families["loadstate_load_duration_seconds"]
    assert histogram.type == "histogram"
    buckets = [s for s in histogram.samples if s.name.endswith("_bucket") and s.labels["loader"] == loader]
    assert buckets[-1].labels["le"] == "+Inf" and buckets[-1].value == 2
    assert [b.value for b in buckets] == sorted(b.value for b in buckets)
    count = [s for s in histogram.samples if s.name.endswith("_count") and s.labels["loader"] == loader]
    assert count[0].value == 2
    assert samples("loadstate_cells_alive")[0].value == 2
    assert samples("loadstate_cache_hits", cache=str(cache.id), kind="memory")[0].value == 1
    maximum = samples("loadstate_load_duration_max_seconds", loader=loader)[0].value
    total = [s for s in histogram.samples if s.name.endswith("_sum") and s.labels["loader"] == loader][0].value
    assert 0 < maximum <= total


def test_metrics_text_grows_with_many_loaders(rt):
    loaders = [rt.loader(lambda job: job.request) for _ in range(20)]
    text = rt.metrics_text()
    assert len(text) > 16 * 1024
    assert all(f'loadstate_jobs_in_flight{{loader="{loader.id}"}} 0\n' in text for loader in loaders)


def test_loads_a_cache_answers_alone_count_as_loads_from_cache(rt):
    from prometheus_client.parser import text_string_to_metric_families

    calls = []

    @rt.loader
    def upper(job):
        calls.append(job.request)
        return job.request.upper()

    other = rt.loader(lambda job: job.request)
    cache = rt.memory_cache()
    cell = rt.loadable(upper)
    first = dict(cache=cache, cache_key="k", policy=loadstate.CachePolicy.CACHE_FIRST, fresh=60)
    # A miss: the loader runs and fills the cache; then two hits, answered by the cache alone.
    assert cell.load(b"a", **first).value(WAIT) == b"A"
    for _ in range(2):
        state = cell.load(b"a", **first).state(WAIT)
        assert state.value == b"A" and state.from_cache
    assert calls == [b"a"]
    # Cache-only: a hit and a miss (which ends in its error), neither calls a loader.
    only = dict(cache=cache, policy=loadstate.CachePolicy.CACHE_ONLY)
    assert cell.load(b"a", cache_key="k", **only).state(WAIT).value == b"A"
    assert cell.load(b"a", cache_key="absent", **only).state(WAIT).status == Status.ERROR
    assert calls == [b"a"]
    assert rt.loadable(other).load(b"x").value(WAIT) == b"x"

    stats = rt.stats()
    mine = stats.loaders[upper.id]
    assert (mine.started, mine.succeeded, mine.from_cache, mine.failed) == (5, 1, 4, 0)
    # Not timed: only the load that ran a job is measured.
    assert mine.latency_count == 1
    assert stats.loaders[other.id].from_cache == 0
    assert (stats.loads.started, stats.loads.from_cache, stats.loads.succeeded) == (6, 4, 2)
    loads = stats.loads
    assert loads.started == loads.succeeded + loads.failed + loads.cancelled + loads.timed_out + loads.from_cache
    assert stats.caches[cache.id].hits == 3 and stats.caches[cache.id].misses == 2

    families = {f.name: f for f in text_string_to_metric_families(rt.metrics_text())}
    ended = {(s.labels["loader"], s.labels["outcome"]): s.value for s in families["loadstate_loads_ended"].samples}
    assert ended[(str(upper.id), "from_cache")] == 4 and ended[(str(upper.id), "succeeded")] == 1
    assert ended[(str(other.id), "from_cache")] == 0
    started = {s.labels["loader"]: s.value for s in families["loadstate_loads_started"].samples}
    assert started[str(upper.id)] == 5


def test_a_runtime_without_metrics_counts_no_cache_answer():
    with loadstate.Runtime(metrics=False) as rt:
        cache = rt.memory_cache()
        cache["k"] = b"v"
        cell = rt.loadable(rt.loader(lambda job: job.request))
        assert cell.load(b"a", cache=cache, cache_key="k", policy=loadstate.CachePolicy.CACHE_ONLY).value(WAIT) == b"v"
        stats = rt.stats()
        assert stats.loads.started == 0 and stats.loads.from_cache == 0


def test_the_metrics_text_passes_promtool(rt, tmp_path):
    """`promtool check metrics` (Debian's prometheus package, installed by `make deps`) finds nothing to
    complain of in the text of a runtime that has loaded, failed, retried, cached, shared and queued."""
    import shutil
    import subprocess
    import threading

    promtool = shutil.which("promtool")
    assert promtool, "promtool is missing: `make deps` installs Debian's prometheus package"
    # Named loaders (a name is an escaped label value; see test_names.py) beside unnamed ones.
    upper = rt.loader(lambda job: job.request.upper(), name='upper "\u00e9" \\ \u2713')
    attempts = {"n": 0}

    @rt.loader(name="flaky")
    def flaky(job):
        attempts["n"] += 1
        if attempts["n"] < 2:
            raise loadstate.LoadFailed(7, "once")
        return b"ok"

    @rt.loader
    def fails(job):
        raise loadstate.LoadFailed(42, "nope")

    release = threading.Event()
    limited = rt.loader(lambda job: release.wait(10) and job.request, limits=loadstate.Limits(max_concurrent=1))
    cache = rt.memory_cache()
    cell = rt.loadable(upper)
    assert cell.load(b"a", cache=cache, cache_key="a", policy=loadstate.CachePolicy.CACHE_FIRST).value(WAIT) == b"A"
    assert cell.load(b"a", cache=cache, cache_key="a", policy=loadstate.CachePolicy.CACHE_FIRST).value(WAIT) == b"A"
    assert rt.loadable(flaky).load(b"x", retries=2, retry_base=0.001).value(WAIT) == b"ok"
    assert rt.loadable(fails).load(b"x").state(WAIT).status == Status.ERROR
    first, second = rt.loadable(limited), rt.loadable(limited)
    loads = [first.load(b"1"), second.load(b"2")]
    release.set()
    assert [load.value(WAIT) for load in loads] == [b"1", b"2"]
    text = rt.metrics_text()
    assert "loadstate_jobs_queued_total" in text and 'outcome="from_cache"' in text
    assert 'loadstate_loads_ended_total{loader="upper \\"\u00e9\\" \\\\ \u2713",outcome="succeeded"} 2\n' in text
    assert f'loadstate_loads_started_total{{loader="{fails.id}"}} 1\n' in text
    checked = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0 and checked.stdout == "" and checked.stderr == "", checked
