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
