"""Runtime metrics through the binding: Runtime.stats()."""

from __future__ import annotations

from conftest import WAIT

import pytest

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


def test_loads_the_cache_answered_count_as_loads(rt):
    loader = rt.loader(lambda job: job.request.upper())
    cache = rt.memory_cache()
    cell = rt.loadable(loader)
    first = loadstate.CachePolicy.CACHE_FIRST
    assert cell.load(b"a", cache=cache, policy=first, fresh=60).value(WAIT) == b"A"
    assert cell.load(b"a", cache=cache, policy=first, fresh=60).value(WAIT) == b"A"      # a hit
    with pytest.raises(loadstate.LoadFailed):
        cell.load(b"b", cache=cache, policy=loadstate.CachePolicy.CACHE_ONLY).value(WAIT)  # a miss
    loads = rt.stats().loaders[loader.id]
    assert (loads.started, loads.succeeded, loads.failed) == (3, 2, 1)
    assert loads.latency_count == 3
    assert rt.stats().loads.started == 3


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
    maximum = samples("loadstate_load_duration_quantile_seconds", loader=loader, quantile="1")[0].value
    median = samples("loadstate_load_duration_quantile_seconds", loader=loader, quantile="0.5")[0].value
    assert 0 <= median <= maximum


def test_metrics_text_grows_with_many_loaders(rt):
    loaders = [rt.loader(lambda job: job.request) for _ in range(20)]
    text = rt.metrics_text()
    assert len(text) > 16 * 1024
    assert all(f'loadstate_jobs_in_flight{{loader="{loader.id}"}} 0\n' in text for loader in loaders)
