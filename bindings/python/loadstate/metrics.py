"""A runtime's metrics (``lds_runtime_stats``): load counters per runtime and per loader, cache counters."""

from __future__ import annotations

import ctypes
from ctypes import byref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Dict, Tuple

from ._library import CacheMetricsC, LoaderMetricsC, LoadMetricsC, RuntimeStatisticsC
from .cache import CacheStats
from .enums import Code

if TYPE_CHECKING:
    from . import _core

# metrics_text and runtime_stats read a runtime's core for Runtime.metrics_text()
# and Runtime.stats(); they are not part of the public API.
__all__ = ["LoadMetrics", "RuntimeStats"]


@dataclass(frozen=True)
class LoadMetrics:
    """The load counters of a loader or of a whole runtime (``lds_load_metrics``).

    Every load that started ends once: ``started`` is ``succeeded + failed +
    cancelled + timed_out + from_cache`` plus the loads running. A load
    ``from_cache`` is one its cache answered alone, without a job: a
    ``CACHE_FIRST`` hit, or any ``CACHE_ONLY`` read (a miss too, which ends
    in its error; the cache's :class:`~loadstate.CacheStats` tell hits from
    misses); it is not timed. Latencies are in
    microseconds, from a load's start to its end (retries included); the
    quantiles are estimated from ``latency_buckets``, where bucket ``i``
    counts loads that took less than ``2**i`` microseconds (the last one:
    the rest). With loader limits, ``jobs_queued`` counts the jobs the
    loader's queue held and ``queue_wait_*`` how long they waited there.
    """

    started: int
    succeeded: int
    failed: int
    cancelled: int
    timed_out: int
    retried: int
    shared: int
    jobs_started: int
    jobs_in_flight: int
    latency_count: int
    latency_sum_us: int
    latency_max_us: int
    latency_p50_us: int
    latency_p90_us: int
    latency_p99_us: int
    latency_buckets: Tuple[int, ...]
    jobs_queued: int
    queue_wait_count: int
    queue_wait_sum_us: int
    queue_wait_max_us: int
    queue_wait_p50_us: int
    queue_wait_p90_us: int
    queue_wait_p99_us: int
    queue_wait_buckets: Tuple[int, ...]
    from_cache: int = 0

    @classmethod
    def _from_c(cls, m: LoadMetricsC, from_cache: int = 0) -> "LoadMetrics":
        return cls(m.started, m.succeeded, m.failed, m.cancelled, m.timed_out, m.retried, m.shared,
                   m.jobs_started, m.jobs_in_flight, m.latency_count, m.latency_sum_us, m.latency_max_us,
                   m.latency_p50_us, m.latency_p90_us, m.latency_p99_us, tuple(m.latency_buckets), m.jobs_queued,
                   m.queue_wait_count, m.queue_wait_sum_us, m.queue_wait_max_us, m.queue_wait_p50_us,
                   m.queue_wait_p90_us, m.queue_wait_p99_us, tuple(m.queue_wait_buckets), from_cache)


@dataclass(frozen=True)
class RuntimeStats:
    """A runtime's metrics (``lds_runtime_statistics``).

    Attributes:
        enabled: whether the runtime counts (``Runtime(metrics=False)`` counts nothing).
        cells_alive: cells made and not closed.
        events_delivered: cell events handed to their callbacks.
        loads: the loads of every loader, closed ones included.
        loaders: the counters of each loader alive, by :attr:`Loader.id`.
        caches: the counters of each cache open, by :attr:`Cache.id`.
        online: whether the runtime is online (:meth:`Runtime.set_online <loadstate.Runtime.set_online>`).
        foreground: whether the runtime is in the foreground (:meth:`Runtime.set_foreground
            <loadstate.Runtime.set_foreground>`).
        loads_paused: loads and retries waiting for the runtime to be online now.
        loads_paused_total: loads and retries that waited so, since the runtime began.
    """

    enabled: bool
    cells_alive: int
    events_delivered: int
    loads: LoadMetrics
    loaders: Dict[int, LoadMetrics]
    caches: Dict[int, CacheStats]
    online: bool = True
    foreground: bool = True
    loads_paused: int = 0
    loads_paused_total: int = 0


def metrics_text(core: "_core.Core") -> str:
    """The runtime's metrics in the Prometheus text format (``lds_runtime_metrics_text``)."""
    length = ctypes.c_size_t(0)
    room = 16 * 1024
    while True:
        buffer = ctypes.create_string_buffer(room)
        rc = core.dll.lds_runtime_metrics_text(core.c_handle, buffer, room, byref(length))
        if rc != Code.ETOOBIG:
            core.check(rc, "runtime metrics text")
            return buffer.raw[:length.value].decode("utf-8")
        # Loaders may appear meanwhile: some room to spare.
        room = length.value + 1 + 4096


def runtime_stats(core: "_core.Core") -> RuntimeStats:
    """Reads the runtime's metrics, with room for every loader and cache (asking again while more appeared)."""
    loader_room, cache_room = 16, 16
    while True:
        loaders = (LoaderMetricsC * loader_room)()
        loaders_from_cache = (ctypes.c_uint64 * loader_room)()
        caches = (CacheMetricsC * cache_room)()
        out = RuntimeStatisticsC()
        out.size = ctypes.sizeof(RuntimeStatisticsC)
        out.loaders, out.loaders_cap = loaders, loader_room
        out.loaders_from_cache = loaders_from_cache
        out.caches, out.caches_cap = caches, cache_room
        core.check(core.dll.lds_runtime_stats(core.c_handle, byref(out)), "runtime stats")
        if out.loader_count <= loader_room and out.cache_count <= cache_room:
            break
        loader_room = max(loader_room, out.loader_count + 16)
        cache_room = max(cache_room, out.cache_count + 16)
    return RuntimeStats(
        enabled=bool(out.enabled), cells_alive=out.cells_alive, events_delivered=out.events_delivered,
        loads=LoadMetrics._from_c(out.loads, out.loads_from_cache),
        loaders={loaders[i].loader: LoadMetrics._from_c(loaders[i].loads, loaders_from_cache[i])
                 for i in range(out.loader_count)},
        caches={c.cache: CacheStats(c.stats.hits, c.stats.misses, c.stats.evictions, c.stats.expirations,
                                    c.stats.entries, c.stats.bytes)
                for c in (caches[i] for i in range(out.cache_count))},
        online=bool(out.online), foreground=bool(out.foreground), loads_paused=out.loads_paused,
        loads_paused_total=out.loads_paused_total)
