//! A runtime's metrics (`lds_runtime_stats`).

use std::collections::BTreeMap;

use crate::cache::CacheStats;
use crate::error::{Result, check};
use crate::runtime::Runtime;
use crate::sys;

/// The load counters of a loader or of a whole runtime (`lds_load_metrics`).
///
/// Every load that started ends once: `started` is `succeeded + failed +
/// cancelled + timed_out + from_cache` plus the loads running. Latencies are in
/// microseconds, from a load's start to its end (retries included); loads
/// from the cache are not timed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoadMetrics {
    /// Loads that started (those a cache answered alone included).
    pub started: u64,
    /// Loads that ended loaded (or finished).
    pub succeeded: u64,
    /// Loads that ended in an error other than a timeout.
    pub failed: u64,
    /// Loads cancelled, reset, superseded or freed.
    pub cancelled: u64,
    /// Loads ended by their timeout.
    pub timed_out: u64,
    /// Retries: attempts after the first.
    pub retried: u64,
    /// Loads that joined another load's running job.
    pub shared: u64,
    /// Jobs started (a runtime: by its loaders alive).
    pub jobs_started: u64,
    /// Jobs started and not yet ended.
    pub jobs_in_flight: u64,
    /// Loads measured (those that ended).
    pub latency_count: u64,
    /// Their total latency.
    pub latency_sum_us: u64,
    /// The longest.
    pub latency_max_us: u64,
    /// The median, estimated from the buckets.
    pub latency_p50_us: u64,
    /// The 90th percentile, estimated from the buckets.
    pub latency_p90_us: u64,
    /// The 99th percentile, estimated from the buckets.
    pub latency_p99_us: u64,
    /// Bucket `i` counts loads that took less than 2^i microseconds (the
    /// last one: the rest).
    pub latency_buckets: [u64; sys::LDS_LATENCY_BUCKETS],
    /// Jobs the loader's limits held in its queue.
    pub jobs_queued: u64,
    /// Queued jobs admitted (their waits measured).
    pub queue_wait_count: u64,
    /// Their total wait.
    pub queue_wait_sum_us: u64,
    /// The longest wait.
    pub queue_wait_max_us: u64,
    /// The median wait, estimated from the buckets.
    pub queue_wait_p50_us: u64,
    /// The 90th percentile wait, estimated from the buckets.
    pub queue_wait_p90_us: u64,
    /// The 99th percentile wait, estimated from the buckets.
    pub queue_wait_p99_us: u64,
    /// The waits, in the latency buckets' bounds.
    pub queue_wait_buckets: [u64; sys::LDS_LATENCY_BUCKETS],
    /// Loads a cache answered alone, without a job: a cache-first hit, or
    /// any cache-only read (a miss too, which ends in its error). They
    /// start and end at once (`lds_runtime_statistics.loads_from_cache`).
    pub from_cache: u64,
}

impl From<&sys::lds_load_metrics> for LoadMetrics {
    fn from(m: &sys::lds_load_metrics) -> LoadMetrics {
        LoadMetrics {
            started: m.started,
            succeeded: m.succeeded,
            failed: m.failed,
            cancelled: m.cancelled,
            timed_out: m.timed_out,
            retried: m.retried,
            shared: m.shared,
            jobs_started: m.jobs_started,
            jobs_in_flight: m.jobs_in_flight,
            latency_count: m.latency_count,
            latency_sum_us: m.latency_sum_us,
            latency_max_us: m.latency_max_us,
            latency_p50_us: m.latency_p50_us,
            latency_p90_us: m.latency_p90_us,
            latency_p99_us: m.latency_p99_us,
            latency_buckets: m.latency_buckets,
            jobs_queued: m.jobs_queued,
            queue_wait_count: m.queue_wait_count,
            queue_wait_sum_us: m.queue_wait_sum_us,
            queue_wait_max_us: m.queue_wait_max_us,
            queue_wait_p50_us: m.queue_wait_p50_us,
            queue_wait_p90_us: m.queue_wait_p90_us,
            queue_wait_p99_us: m.queue_wait_p99_us,
            queue_wait_buckets: m.queue_wait_buckets,
            // Not in `lds_load_metrics`: `Runtime::stats` sets it.
            from_cache: 0,
        }
    }
}

/// A runtime's metrics (`lds_runtime_statistics`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimeStats {
    /// Whether the runtime counts (see [`Runtime::without_metrics`]).
    pub enabled: bool,
    /// Cells made and not freed.
    pub cells_alive: u64,
    /// Cell events handed to their callbacks.
    pub events_delivered: u64,
    /// The loads of every loader, freed ones included.
    pub loads: LoadMetrics,
    /// The counters of each loader alive, by [`crate::Loader::id`].
    pub loaders: BTreeMap<u64, LoadMetrics>,
    /// The counters of each cache open, by [`crate::Cache::id`].
    pub caches: BTreeMap<u64, CacheStats>,
    /// Whether the runtime is online ([`Runtime::set_online`]).
    pub online: bool,
    /// Whether the runtime is in the foreground ([`Runtime::set_foreground`]).
    pub foreground: bool,
    /// Loads and retries waiting for the runtime to be online now.
    pub loads_paused: u64,
    /// Loads and retries that waited so, since the runtime began.
    pub loads_paused_total: u64,
}

impl Runtime {
    /// The runtime's metrics in the Prometheus text exposition format
    /// (version 0.0.4), for a `/metrics` page. Load series are labelled
    /// `loader` (the loader's name, escaped, else its id; `freed` for the
    /// loaders dropped since; loaders of one name share a series), cache
    /// series `cache` and `kind`; see
    /// `lds_runtime_metrics_text` in `loadstate.h` for the families.
    pub fn metrics_text(&self) -> Result<String> {
        let mut room = 16 * 1024;
        loop {
            let mut buf = vec![0u8; room];
            let mut len = 0usize;
            // SAFETY: valid handle; buf holds `room` bytes.
            let rc =
                unsafe { sys::lds_runtime_metrics_text(self.as_ptr(), buf.as_mut_ptr().cast(), room, &raw mut len) };
            if rc == sys::LDS_ETOOBIG {
                // Loaders may appear meanwhile: some room to spare.
                room = len.saturating_add(1 + 4096);
                continue;
            }
            check(rc)?;
            buf.truncate(len);
            return Ok(String::from_utf8_lossy(&buf).into_owned());
        }
    }

    /// The runtime's metrics now: load counters and latencies per runtime
    /// and per loader, and each cache's counters. Safe from any thread,
    /// callbacks included.
    pub fn stats(&self) -> Result<RuntimeStats> {
        let (mut loader_room, mut cache_room) = (16usize, 16usize);
        loop {
            let mut loaders =
                vec![sys::lds_loader_metrics { loader: 0, loads: sys::lds_load_metrics::zeroed() }; loader_room];
            let mut caches = vec![
                sys::lds_cache_metrics {
                    cache: 0,
                    persistent: 0,
                    reserved: 0,
                    stats: sys::lds_cache_statistics::default()
                };
                cache_room
            ];
            let mut loaders_from_cache = vec![0u64; loader_room];
            let mut out = sys::lds_runtime_statistics::INIT;
            out.loaders = loaders.as_mut_ptr();
            out.loaders_from_cache = loaders_from_cache.as_mut_ptr();
            out.loaders_cap = u32::try_from(loader_room).unwrap_or(u32::MAX);
            out.caches = caches.as_mut_ptr();
            out.caches_cap = u32::try_from(cache_room).unwrap_or(u32::MAX);
            // SAFETY: valid handle; the arrays hold the capacities given.
            check(unsafe { sys::lds_runtime_stats(self.as_ptr(), &raw mut out) })?;
            let (loader_count, cache_count) = (out.loader_count as usize, out.cache_count as usize);
            if loader_count > loader_room || cache_count > cache_room {
                // More appeared than there was room for: ask again.
                loader_room = loader_room.max(loader_count + 16);
                cache_room = cache_room.max(cache_count + 16);
                continue;
            }
            return Ok(RuntimeStats {
                enabled: out.enabled != 0,
                cells_alive: out.cells_alive,
                events_delivered: out.events_delivered,
                loads: LoadMetrics { from_cache: out.loads_from_cache, ..LoadMetrics::from(&out.loads) },
                loaders: loaders[..loader_count]
                    .iter()
                    .zip(&loaders_from_cache)
                    .map(|(l, &from_cache)| (l.loader, LoadMetrics { from_cache, ..LoadMetrics::from(&l.loads) }))
                    .collect(),
                caches: caches[..cache_count]
                    .iter()
                    .map(|c| {
                        let s = &c.stats;
                        let stats = CacheStats {
                            hits: s.hits,
                            misses: s.misses,
                            evictions: s.evictions,
                            expirations: s.expirations,
                            entries: s.entries,
                            bytes: s.bytes,
                        };
                        (c.cache, stats)
                    })
                    .collect(),
                online: out.online != 0,
                foreground: out.foreground != 0,
                loads_paused: out.loads_paused,
                loads_paused_total: out.loads_paused_total,
            });
        }
    }
}
