//! Checks `loadstate::sys` against `include/loadstate.h`: a small C program
//! compiled with `cc` prints every struct's size, alignment and field
//! offsets and every constant, and the test compares them with Rust's view.

#![allow(clippy::cast_lossless)] // the casts mirror the C types the layout is checked against
#![allow(clippy::cast_possible_wrap)] // casts of small test numbers known to fit
#![allow(clippy::format_push_string)] // building test output; speed does not matter here
#![allow(clippy::needless_pass_by_value)] // helpers take owned values to keep call sites short
#![allow(clippy::too_many_lines)] // one scenario per test, read from top to bottom

use std::collections::{BTreeSet, HashMap, HashSet};
use std::mem::{align_of, offset_of, size_of};
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use loadstate::sys::*;

/// The fixed part of the probe: struct layouts and `*_INIT` values. The
/// constants are added from the header's own `#define` lines.
const PROBE_STRUCTS: &str = r#"
#include <stdio.h>
#include <stddef.h>
#include "loadstate.h"

#define SIZE(t) printf("size %s %zu\nalign %s %zu\n", #t, sizeof(t), #t, _Alignof(t))
#define FIELD(t, f) printf("offset %s.%s %zu\n", #t, #f, offsetof(t, f))
#define EVENT_FIELDS(t) \
  FIELD(t, type); FIELD(t, cell); FIELD(t, seq); FIELD(t, status); FIELD(t, kind); \
  FIELD(t, flags); FIELD(t, value); FIELD(t, value_len); FIELD(t, request); \
  FIELD(t, request_len); FIELD(t, error_domain); FIELD(t, error_code); \
  FIELD(t, error_message); FIELD(t, attempt); FIELD(t, elapsed_ms); \
  FIELD(t, progress_done); FIELD(t, progress_total); FIELD(t, updated_at_ms)
#define CONST(c) printf("const %s %lld\n", #c, (long long)(c))
#define U(x) ((unsigned long long)(x))

int main(void) {
  SIZE(lds_event); EVENT_FIELDS(lds_event);
  SIZE(lds_snapshot); EVENT_FIELDS(lds_snapshot);
  SIZE(lds_runtime_options);
  FIELD(lds_runtime_options, size); FIELD(lds_runtime_options, delivery); FIELD(lds_runtime_options, spin_us);
  FIELD(lds_runtime_options, queue_max); FIELD(lds_runtime_options, flags);
  SIZE(lds_inspector_options);
  FIELD(lds_inspector_options, size); FIELD(lds_inspector_options, flags);
  FIELD(lds_inspector_options, max_clients); FIELD(lds_inspector_options, interval_ms);
  FIELD(lds_inspector_options, idle_timeout_ms); FIELD(lds_inspector_options, max_cells);
  lds_inspector_options io = LDS_INSPECTOR_OPTIONS_INIT;
  printf("init lds_inspector_options %u %u %u %u %u %u\n", io.size, io.flags, io.max_clients, io.interval_ms,
         io.idle_timeout_ms, io.max_cells);
  SIZE(lds_observation);
  FIELD(lds_observation, size); FIELD(lds_observation, what); FIELD(lds_observation, event);
  FIELD(lds_observation, job); FIELD(lds_observation, loader); FIELD(lds_observation, cell);
  FIELD(lds_observation, attempt); FIELD(lds_observation, outcome); FIELD(lds_observation, error_domain);
  FIELD(lds_observation, error_code); FIELD(lds_observation, time_ns); FIELD(lds_observation, duration_ns);
  FIELD(lds_observation, request); FIELD(lds_observation, request_len);
  SIZE(lds_load_metrics);
  FIELD(lds_load_metrics, started); FIELD(lds_load_metrics, succeeded); FIELD(lds_load_metrics, failed);
  FIELD(lds_load_metrics, cancelled); FIELD(lds_load_metrics, timed_out); FIELD(lds_load_metrics, retried);
  FIELD(lds_load_metrics, shared); FIELD(lds_load_metrics, jobs_started); FIELD(lds_load_metrics, jobs_in_flight);
  FIELD(lds_load_metrics, latency_count); FIELD(lds_load_metrics, latency_sum_us);
  FIELD(lds_load_metrics, latency_max_us); FIELD(lds_load_metrics, latency_p50_us);
  FIELD(lds_load_metrics, latency_p90_us); FIELD(lds_load_metrics, latency_p99_us);
  FIELD(lds_load_metrics, latency_buckets); FIELD(lds_load_metrics, jobs_queued);
  FIELD(lds_load_metrics, queue_wait_count); FIELD(lds_load_metrics, queue_wait_sum_us);
  FIELD(lds_load_metrics, queue_wait_max_us); FIELD(lds_load_metrics, queue_wait_p50_us);
  FIELD(lds_load_metrics, queue_wait_p90_us); FIELD(lds_load_metrics, queue_wait_p99_us);
  FIELD(lds_load_metrics, queue_wait_buckets);
  SIZE(lds_loader_metrics);
  FIELD(lds_loader_metrics, loader); FIELD(lds_loader_metrics, loads);
  SIZE(lds_cache_metrics);
  FIELD(lds_cache_metrics, cache); FIELD(lds_cache_metrics, persistent); FIELD(lds_cache_metrics, reserved);
  FIELD(lds_cache_metrics, stats);
  SIZE(lds_runtime_statistics);
  FIELD(lds_runtime_statistics, size); FIELD(lds_runtime_statistics, enabled);
  FIELD(lds_runtime_statistics, cells_alive); FIELD(lds_runtime_statistics, events_delivered);
  FIELD(lds_runtime_statistics, loads); FIELD(lds_runtime_statistics, loaders);
  FIELD(lds_runtime_statistics, loaders_cap); FIELD(lds_runtime_statistics, loader_count);
  FIELD(lds_runtime_statistics, caches); FIELD(lds_runtime_statistics, caches_cap);
  FIELD(lds_runtime_statistics, cache_count); FIELD(lds_runtime_statistics, loads_from_cache);
  FIELD(lds_runtime_statistics, loaders_from_cache); FIELD(lds_runtime_statistics, online);
  FIELD(lds_runtime_statistics, foreground); FIELD(lds_runtime_statistics, loads_paused);
  FIELD(lds_runtime_statistics, loads_paused_total);
  SIZE(lds_load_options);
  FIELD(lds_load_options, size); FIELD(lds_load_options, flags); FIELD(lds_load_options, timeout_ms);
  FIELD(lds_load_options, interrupts_ms); FIELD(lds_load_options, interrupt_count);
  FIELD(lds_load_options, retries); FIELD(lds_load_options, retry_base_ms);
  FIELD(lds_load_options, retry_max_ms); FIELD(lds_load_options, cache); FIELD(lds_load_options, cache_key);
  FIELD(lds_load_options, cache_key_len); FIELD(lds_load_options, cache_policy); FIELD(lds_load_options, fresh_ms);
  FIELD(lds_load_options, max_age_ms); FIELD(lds_load_options, priority);
  FIELD(lds_load_options, refresh_interval_ms); FIELD(lds_load_options, placeholder);
  FIELD(lds_load_options, placeholder_len); FIELD(lds_load_options, foreground_throttle_ms);
  SIZE(lds_id);
  SIZE(lds_file_options);
  FIELD(lds_file_options, size); FIELD(lds_file_options, chunk_size); FIELD(lds_file_options, max_size);
  FIELD(lds_file_options, max_concurrent); FIELD(lds_file_options, rate_per_s); FIELD(lds_file_options, burst);
  FIELD(lds_file_options, name);
  SIZE(lds_exec_options);
  FIELD(lds_exec_options, size); FIELD(lds_exec_options, flags); FIELD(lds_exec_options, kill_grace_ms);
  FIELD(lds_exec_options, max_output); FIELD(lds_exec_options, max_concurrent);
  FIELD(lds_exec_options, rate_per_s); FIELD(lds_exec_options, burst); FIELD(lds_exec_options, name);
  SIZE(lds_exec_request);
  FIELD(lds_exec_request, size); FIELD(lds_exec_request, argv); FIELD(lds_exec_request, env);
  FIELD(lds_exec_request, cwd);
  SIZE(lds_http_options);
  FIELD(lds_http_options, size); FIELD(lds_http_options, max_connections); FIELD(lds_http_options, user_agent);
  FIELD(lds_http_options, proxy); FIELD(lds_http_options, max_concurrent); FIELD(lds_http_options, rate_per_s);
  FIELD(lds_http_options, burst); FIELD(lds_http_options, max_per_host); FIELD(lds_http_options, name);
  SIZE(lds_http_request);
  FIELD(lds_http_request, size); FIELD(lds_http_request, method); FIELD(lds_http_request, url);
  FIELD(lds_http_request, headers); FIELD(lds_http_request, header_count); FIELD(lds_http_request, body);
  FIELD(lds_http_request, body_len); FIELD(lds_http_request, timeout_ms); FIELD(lds_http_request, max_redirects);
  FIELD(lds_http_request, max_body); FIELD(lds_http_request, flags); FIELD(lds_http_request, ca_file);
  SIZE(lds_http_response);
  FIELD(lds_http_response, status); FIELD(lds_http_response, headers); FIELD(lds_http_response, headers_len);
  FIELD(lds_http_response, body); FIELD(lds_http_response, body_len);
  SIZE(lds_memory_cache_options);
  FIELD(lds_memory_cache_options, size); FIELD(lds_memory_cache_options, name);
  FIELD(lds_memory_cache_options, max_entries); FIELD(lds_memory_cache_options, max_bytes);
  FIELD(lds_memory_cache_options, ttl_ms); FIELD(lds_memory_cache_options, unobserved_ms);
  SIZE(lds_persistent_cache_options);
  FIELD(lds_persistent_cache_options, size); FIELD(lds_persistent_cache_options, flags);
  FIELD(lds_persistent_cache_options, path); FIELD(lds_persistent_cache_options, max_bytes);
  FIELD(lds_persistent_cache_options, ttl_ms);
  SIZE(lds_cache_value);
  FIELD(lds_cache_value, value); FIELD(lds_cache_value, value_len); FIELD(lds_cache_value, stored_at_ms);
  FIELD(lds_cache_value, expires_at_ms); FIELD(lds_cache_value, stale);
  SIZE(lds_record);
  FIELD(lds_record, size); FIELD(lds_record, what); FIELD(lds_record, user_data); FIELD(lds_record, job);
  FIELD(lds_record, event);
  SIZE(lds_loader_options);
  FIELD(lds_loader_options, size); FIELD(lds_loader_options, start); FIELD(lds_loader_options, cancel);
  FIELD(lds_loader_options, free_data); FIELD(lds_loader_options, loader_data);
  FIELD(lds_loader_options, max_concurrent); FIELD(lds_loader_options, rate_per_s); FIELD(lds_loader_options, burst);
  FIELD(lds_loader_options, name);
  SIZE(lds_cell_options);
  FIELD(lds_cell_options, size); FIELD(lds_cell_options, on_event); FIELD(lds_cell_options, user_data);
  FIELD(lds_cell_options, name);
  SIZE(lds_pages_options);
  FIELD(lds_pages_options, size); FIELD(lds_pages_options, on_event); FIELD(lds_pages_options, user_data);
  FIELD(lds_pages_options, name); FIELD(lds_pages_options, max_pages);
  SIZE(lds_page_request);
  FIELD(lds_page_request, request); FIELD(lds_page_request, request_len); FIELD(lds_page_request, cursor);
  FIELD(lds_page_request, cursor_len); FIELD(lds_page_request, direction);
  SIZE(lds_op);
  FIELD(lds_op, op); FIELD(lds_op, code); FIELD(lds_op, target); FIELD(lds_op, loader); FIELD(lds_op, data);
  FIELD(lds_op, data_len);
  SIZE(lds_cache_statistics);
  FIELD(lds_cache_statistics, hits); FIELD(lds_cache_statistics, misses); FIELD(lds_cache_statistics, evictions);
  FIELD(lds_cache_statistics, expirations); FIELD(lds_cache_statistics, entries); FIELD(lds_cache_statistics, bytes);
  SIZE(lds_cache_update);
  FIELD(lds_cache_update, cache); FIELD(lds_cache_update, key); FIELD(lds_cache_update, key_len);
  FIELD(lds_cache_update, value); FIELD(lds_cache_update, value_len);
  SIZE(lds_cache_prefix);
  FIELD(lds_cache_prefix, cache); FIELD(lds_cache_prefix, prefix); FIELD(lds_cache_prefix, prefix_len);
  SIZE(lds_mutation_options);
  FIELD(lds_mutation_options, size); FIELD(lds_mutation_options, flags); FIELD(lds_mutation_options, optimistic);
  FIELD(lds_mutation_options, optimistic_count); FIELD(lds_mutation_options, invalidate);
  FIELD(lds_mutation_options, invalidate_count);
  lds_mutation_options mu = LDS_MUTATION_OPTIONS_INIT;
  printf("init lds_mutation_options %u %u %d %zu %d %zu\n", mu.size, mu.flags, mu.optimistic != NULL,
         mu.optimistic_count, mu.invalidate != NULL, mu.invalidate_count);
  SIZE(lds_cache_key_list);
  FIELD(lds_cache_key_list, count); FIELD(lds_cache_key_list, keys); FIELD(lds_cache_key_list, lengths);
  FIELD(lds_cache_key_list, block);

  SIZE(lds_redis_cache_options);
  FIELD(lds_redis_cache_options, size); FIELD(lds_redis_cache_options, flags);
  FIELD(lds_redis_cache_options, key_prefix); FIELD(lds_redis_cache_options, ttl_ms);
  FIELD(lds_redis_cache_options, max_ttl_ms); FIELD(lds_redis_cache_options, max_value_bytes);
  FIELD(lds_redis_cache_options, command_timeout_ms); FIELD(lds_redis_cache_options, connect_timeout_ms);
  FIELD(lds_redis_cache_options, lease_ms); FIELD(lds_redis_cache_options, reconnect_max_ms);
  FIELD(lds_redis_cache_options, memory_max_entries); FIELD(lds_redis_cache_options, memory_max_bytes);
  FIELD(lds_redis_cache_options, memory_ttl_ms);
  SIZE(lds_redis_status);
  FIELD(lds_redis_status, size); FIELD(lds_redis_status, connected); FIELD(lds_redis_status, subscribed);
  FIELD(lds_redis_status, last_error_code); FIELD(lds_redis_status, connects); FIELD(lds_redis_status, errors);
  FIELD(lds_redis_status, leases_taken); FIELD(lds_redis_status, leases_waited);
  FIELD(lds_redis_status, results_received); FIELD(lds_redis_status, takeovers);
  FIELD(lds_redis_status, published); FIELD(lds_redis_status, fenced); FIELD(lds_redis_status, invalidations);
  FIELD(lds_redis_status, last_error);

  lds_loader_options lso = LDS_LOADER_OPTIONS_INIT;
  printf("init lds_loader_options %u %d\n", lso.size,
         lso.start != NULL || lso.cancel != NULL || lso.free_data != NULL || lso.loader_data != NULL ||
         lso.name != NULL);
  lds_cell_options co = LDS_CELL_OPTIONS_INIT;
  printf("init lds_cell_options %u %d\n", co.size, co.on_event != NULL || co.user_data != NULL || co.name != NULL);
  lds_pages_options pgo = LDS_PAGES_OPTIONS_INIT;
  printf("init lds_pages_options %u %d %u\n", pgo.size, pgo.on_event != NULL || pgo.user_data != NULL || pgo.name != NULL,
         pgo.max_pages);
  lds_runtime_options ro = LDS_RUNTIME_OPTIONS_INIT;
  printf("init lds_runtime_options %u %u %u %u %u\n", ro.size, ro.delivery, ro.spin_us, ro.queue_max, ro.flags);
  lds_runtime_statistics rs = LDS_RUNTIME_STATISTICS_INIT;
  printf("init lds_runtime_statistics %u %d %u %u\n", rs.size,
         rs.loaders != NULL || rs.caches != NULL || rs.enabled != 0 || rs.loads.started != 0 ||
         rs.loads_from_cache != 0 || rs.loaders_from_cache != NULL,
         rs.loaders_cap, rs.caches_cap);
  lds_load_options lo = LDS_LOAD_OPTIONS_INIT;
  printf("init lds_load_options %u %u %u %d %zu %u %u %u %llu %d %zu %u %u %llu\n", lo.size, lo.flags,
         lo.timeout_ms, lo.interrupts_ms != NULL, lo.interrupt_count, lo.retries, lo.retry_base_ms,
         lo.retry_max_ms, U(lo.cache), lo.cache_key != NULL, lo.cache_key_len, lo.cache_policy, lo.fresh_ms,
         U(lo.max_age_ms));
  lds_file_options fo = LDS_FILE_OPTIONS_INIT;
  printf("init lds_file_options %u %u %llu\n", fo.size, fo.chunk_size, U(fo.max_size));
  lds_exec_options eo = LDS_EXEC_OPTIONS_INIT;
  printf("init lds_exec_options %u %u %u %llu\n", eo.size, eo.flags, eo.kill_grace_ms, U(eo.max_output));
  lds_exec_request er = LDS_EXEC_REQUEST_INIT;
  printf("init lds_exec_request %u %d\n", er.size, er.argv != NULL || er.env != NULL || er.cwd != NULL);
  lds_http_options ho = LDS_HTTP_OPTIONS_INIT;
  printf("init lds_http_options %u %u %d %d\n", ho.size, ho.max_connections, ho.user_agent != NULL,
         ho.proxy != NULL);
  lds_http_request hr = LDS_HTTP_REQUEST_INIT;
  printf("init lds_http_request %u %d %zu %zu %u %u %llu %u\n", hr.size,
         hr.method != NULL || hr.url != NULL || hr.headers != NULL || hr.body != NULL || hr.ca_file != NULL,
         hr.header_count, hr.body_len, hr.timeout_ms, hr.max_redirects, U(hr.max_body), hr.flags);
  lds_memory_cache_options mo = LDS_MEMORY_CACHE_OPTIONS_INIT;
  printf("init lds_memory_cache_options %u %d %llu %llu %llu %llu\n", mo.size, mo.name != NULL,
         U(mo.max_entries), U(mo.max_bytes), U(mo.ttl_ms), U(mo.unobserved_ms));
  lds_redis_cache_options rco = LDS_REDIS_CACHE_OPTIONS_INIT;
  printf("init lds_redis_cache_options %u %u %d %llu %llu %llu %u %u %u %u %llu %llu %llu\n", rco.size, rco.flags,
         rco.key_prefix != NULL, U(rco.ttl_ms), U(rco.max_ttl_ms), U(rco.max_value_bytes), rco.command_timeout_ms,
         rco.connect_timeout_ms, rco.lease_ms, rco.reconnect_max_ms, U(rco.memory_max_entries),
         U(rco.memory_max_bytes), U(rco.memory_ttl_ms));
  lds_persistent_cache_options po = LDS_PERSISTENT_CACHE_OPTIONS_INIT;
  printf("init lds_persistent_cache_options %u %u %d %llu %llu\n", po.size, po.flags, po.path != NULL,
         U(po.max_bytes), U(po.ttl_ms));
"#;

fn header_text() -> String {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(manifest.join("../../include/loadstate.h")).unwrap()
}

/// The text without `/* */` and `//` comments.
fn strip_comments(text: &str) -> String {
    let mut code = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("/*") {
        code.push_str(&rest[..start]);
        rest = rest[start..].split_once("*/").map_or("", |(_, after)| after);
    }
    code.push_str(rest);
    code.lines().map(|l| l.split("//").next().unwrap()).collect::<Vec<_>>().join("\n")
}

/// The object-like `LDS_*` macros of the header, `*_INIT` initializers
/// apart: `(constants, initializers)`.
fn header_defines() -> (BTreeSet<String>, BTreeSet<String>) {
    let (mut constants, mut initializers) = (BTreeSet::new(), BTreeSet::new());
    for line in strip_comments(&header_text()).lines() {
        let Some(rest) = line.trim_start().strip_prefix("#define ") else { continue };
        let name: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
        if !name.starts_with("LDS_") || rest[name.len()..].starts_with('(') {
            continue;
        }
        if name.ends_with("_INIT") {
            initializers.insert(name)
        } else {
            constants.insert(name)
        };
    }
    (constants, initializers)
}

/// The names after `typedef struct` in the header.
fn header_structs() -> BTreeSet<String> {
    let code = strip_comments(&header_text());
    code.split("typedef struct ")
        .skip(1)
        .map(|rest| rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect())
        .collect()
}

/// The probe: the fixed part, one CONST line per constant of the header.
fn probe_source() -> String {
    let mut source = PROBE_STRUCTS.to_owned();
    for name in header_defines().0 {
        source += &format!("  CONST({name});\n");
    }
    source += "  return 0;\n}\n";
    source
}

/// The probe's lines as key → value, computed once per test process.
fn probe() -> HashMap<String, String> {
    static LINES: OnceLock<HashMap<String, String>> = OnceLock::new();
    LINES.get_or_init(run_probe).clone()
}

/// Compiles and runs the probe.
fn run_probe() -> HashMap<String, String> {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let include = manifest.join("../../include");
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("layout-probe-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let source = dir.join("probe.c");
    let binary = dir.join("probe");
    std::fs::write(&source, probe_source()).unwrap();
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_owned());
    let status = Command::new(&cc)
        .args(["-std=c11", "-Wall", "-Werror", "-I"])
        .arg(&include)
        .arg("-o")
        .arg(&binary)
        .arg(&source)
        .status()
        .unwrap_or_else(|e| panic!("cannot run {cc}: {e}"));
    assert!(status.success(), "the layout probe did not compile");
    let output = Command::new(&binary).output().unwrap();
    assert!(output.status.success());
    let _ = std::fs::remove_dir_all(&dir);
    String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|line| {
            let (kind, rest) = line.split_once(' ').unwrap();
            let (name, value) = rest.split_once(' ').unwrap();
            (format!("{kind} {name}"), value.to_owned())
        })
        .collect()
}

struct Checker {
    c: HashMap<String, String>,
    checked: HashSet<String>,
    mismatches: Vec<String>,
}

impl Checker {
    fn check(&mut self, key: &str, rust: impl ToString) {
        let rust = rust.to_string();
        match self.c.get(key) {
            Some(c) if *c == rust => {}
            Some(c) => self.mismatches.push(format!("{key}: C {c}, Rust {rust}")),
            None => self.mismatches.push(format!("{key}: not printed by the probe")),
        }
        self.checked.insert(key.to_owned());
    }
}

macro_rules! event_fields {
    ($checker:expr, $t:ident) => {{
        let name = stringify!($t);
        $checker.check(&format!("size {name}"), size_of::<$t>());
        $checker.check(&format!("align {name}"), align_of::<$t>());
        $checker.check(&format!("offset {name}.type"), offset_of!($t, r#type));
        $checker.check(&format!("offset {name}.cell"), offset_of!($t, cell));
        $checker.check(&format!("offset {name}.seq"), offset_of!($t, seq));
        $checker.check(&format!("offset {name}.status"), offset_of!($t, status));
        $checker.check(&format!("offset {name}.kind"), offset_of!($t, kind));
        $checker.check(&format!("offset {name}.flags"), offset_of!($t, flags));
        $checker.check(&format!("offset {name}.value"), offset_of!($t, value));
        $checker.check(&format!("offset {name}.value_len"), offset_of!($t, value_len));
        $checker.check(&format!("offset {name}.request"), offset_of!($t, request));
        $checker.check(&format!("offset {name}.request_len"), offset_of!($t, request_len));
        $checker.check(&format!("offset {name}.error_domain"), offset_of!($t, error_domain));
        $checker.check(&format!("offset {name}.error_code"), offset_of!($t, error_code));
        $checker.check(&format!("offset {name}.error_message"), offset_of!($t, error_message));
        $checker.check(&format!("offset {name}.attempt"), offset_of!($t, attempt));
        $checker.check(&format!("offset {name}.elapsed_ms"), offset_of!($t, elapsed_ms));
        $checker.check(&format!("offset {name}.progress_done"), offset_of!($t, progress_done));
        $checker.check(&format!("offset {name}.progress_total"), offset_of!($t, progress_total));
        $checker.check(&format!("offset {name}.updated_at_ms"), offset_of!($t, updated_at_ms));
    }};
}

macro_rules! consts {
    ($checker:expr, $($c:ident),* $(,)?) => {
        $( $checker.check(concat!("const ", stringify!($c)), $c as i64); )*
    };
}

#[test]
fn structs_and_constants_match_the_c_header() {
    let mut checker = Checker { c: probe(), checked: HashSet::new(), mismatches: Vec::new() };

    event_fields!(checker, lds_event);
    event_fields!(checker, lds_snapshot);

    checker.check("size lds_runtime_options", size_of::<lds_runtime_options>());
    checker.check("align lds_runtime_options", align_of::<lds_runtime_options>());
    checker.check("offset lds_runtime_options.size", offset_of!(lds_runtime_options, size));
    checker.check("offset lds_runtime_options.delivery", offset_of!(lds_runtime_options, delivery));
    checker.check("offset lds_runtime_options.spin_us", offset_of!(lds_runtime_options, spin_us));
    checker.check("offset lds_runtime_options.queue_max", offset_of!(lds_runtime_options, queue_max));
    checker.check("offset lds_runtime_options.flags", offset_of!(lds_runtime_options, flags));

    macro_rules! fields {
        ($t:ident: $($f:ident),*) => {{
            let name = stringify!($t);
            checker.check(&format!("size {name}"), size_of::<$t>());
            checker.check(&format!("align {name}"), align_of::<$t>());
            $( checker.check(&format!("offset {name}.{}", stringify!($f)), offset_of!($t, $f)); )*
        }};
    }
    fields!(lds_load_options: size, flags, timeout_ms, interrupts_ms, interrupt_count, retries, retry_base_ms,
        retry_max_ms, cache, cache_key, cache_key_len, cache_policy, fresh_ms, max_age_ms, priority,
        refresh_interval_ms, placeholder, placeholder_len, foreground_throttle_ms);
    fields!(lds_file_options: size, chunk_size, max_size, max_concurrent, rate_per_s, burst, name);
    fields!(lds_exec_options: size, flags, kill_grace_ms, max_output, max_concurrent, rate_per_s, burst, name);
    fields!(lds_exec_request: size, argv, env, cwd);
    fields!(lds_http_options: size, max_connections, user_agent, proxy, max_concurrent, rate_per_s, burst,
        max_per_host, name);
    fields!(lds_http_request: size, method, url, headers, header_count, body, body_len, timeout_ms,
        max_redirects, max_body, flags, ca_file);
    fields!(lds_http_response: status, headers, headers_len, body, body_len);
    fields!(lds_memory_cache_options: size, name, max_entries, max_bytes, ttl_ms, unobserved_ms);
    fields!(lds_persistent_cache_options: size, flags, path, max_bytes, ttl_ms);
    fields!(lds_cache_value: value, value_len, stored_at_ms, expires_at_ms, stale);
    fields!(lds_cache_statistics: hits, misses, evictions, expirations, entries, bytes);
    fields!(lds_cache_key_list: count, keys, lengths, block);
    fields!(lds_cache_update: cache, key, key_len, value, value_len);
    fields!(lds_cache_prefix: cache, prefix, prefix_len);
    fields!(lds_mutation_options: size, flags, optimistic, optimistic_count, invalidate, invalidate_count);
    let mu = lds_mutation_options::INIT;
    checker.check(
        "init lds_mutation_options",
        format!(
            "{} {} {} {} {} {}",
            mu.size,
            mu.flags,
            i32::from(!mu.optimistic.is_null()),
            mu.optimistic_count,
            i32::from(!mu.invalidate.is_null()),
            mu.invalidate_count
        ),
    );
    fields!(lds_redis_cache_options: size, flags, key_prefix, ttl_ms, max_ttl_ms, max_value_bytes,
        command_timeout_ms, connect_timeout_ms, lease_ms, reconnect_max_ms, memory_max_entries, memory_max_bytes,
        memory_ttl_ms);
    fields!(lds_redis_status: size, connected, subscribed, last_error_code, connects, errors, leases_taken,
        leases_waited, results_received, takeovers, published, fenced, invalidations, last_error);
    fields!(lds_record: size, what, user_data, job, event);
    fields!(lds_op: op, code, target, loader, data, data_len);
    fields!(lds_loader_options: size, start, cancel, free_data, loader_data, max_concurrent, rate_per_s, burst, name);
    fields!(lds_cell_options: size, on_event, user_data, name);
    fields!(lds_pages_options: size, on_event, user_data, name, max_pages);
    fields!(lds_page_request: request, request_len, cursor, cursor_len, direction);
    fields!(lds_inspector_options: size, flags, max_clients, interval_ms, idle_timeout_ms, max_cells);
    let io = lds_inspector_options::INIT;
    checker.check(
        "init lds_inspector_options",
        format!(
            "{} {} {} {} {} {}",
            io.size, io.flags, io.max_clients, io.interval_ms, io.idle_timeout_ms, io.max_cells
        ),
    );
    fields!(lds_observation: size, what, event, job, loader, cell, attempt, outcome, error_domain, error_code,
        time_ns, duration_ns, request, request_len);
    fields!(lds_load_metrics: started, succeeded, failed, cancelled, timed_out, retried, shared, jobs_started,
        jobs_in_flight, latency_count, latency_sum_us, latency_max_us, latency_p50_us, latency_p90_us,
        latency_p99_us, latency_buckets, jobs_queued, queue_wait_count, queue_wait_sum_us, queue_wait_max_us,
        queue_wait_p50_us, queue_wait_p90_us, queue_wait_p99_us, queue_wait_buckets);
    fields!(lds_loader_metrics: loader, loads);
    fields!(lds_cache_metrics: cache, persistent, reserved, stats);
    fields!(lds_runtime_statistics: size, enabled, cells_alive, events_delivered, loads, loaders, loaders_cap,
        loader_count, caches, caches_cap, cache_count, loads_from_cache, loaders_from_cache, online, foreground,
        loads_paused, loads_paused_total);
    checker.check("size lds_id", size_of::<lds_id>());
    checker.check("align lds_id", align_of::<lds_id>());

    consts!(
        checker,
        LDS_VERSION_MAJOR,
        LDS_VERSION_MINOR,
        LDS_VERSION_PATCH,
        LDS_VERSION,
        LDS_OK,
        LDS_EINVAL,
        LDS_ENOENT,
        LDS_ESTATE,
        LDS_ECANCELED,
        LDS_ETIMEDOUT,
        LDS_ENOMEM,
        LDS_ECLOSED,
        LDS_ETOOBIG,
        LDS_EIO,
        LDS_EAGAIN,
        LDS_EREDIS,
        LDS_ENOTSUP,
        LDS_EOFFLINE,
        LDS_VALUE_MAX,
        LDS_QUEUE_MAX,
        LDS_NAME_MAX,
        LDS_PAGES_MAX,
        LDS_CURSOR_MAX,
        LDS_FLAG_PAGE_PREVIOUS,
        LDS_FLAG_PAGES_DROPPED,
        LDS_QUEUE_MAX_LIMIT,
        LDS_ABSENT,
        LDS_LOADING,
        LDS_LOADED,
        LDS_ERROR,
        LDS_IDLE,
        LDS_RUNNING,
        LDS_FINISHED,
        LDS_FAILED,
        LDS_EVENT_STATE,
        LDS_EVENT_PROGRESS,
        LDS_EVENT_INTERRUPT,
        LDS_RECORD_EVENT,
        LDS_RECORD_START,
        LDS_RECORD_CANCEL,
        LDS_OP_LOAD,
        LDS_OP_CANCEL,
        LDS_OP_YIELD,
        LDS_OP_SUCCEED,
        LDS_OP_FINISH,
        LDS_OP_FAIL,
        LDS_FLAG_REFRESHING,
        LDS_FLAG_PARTIAL,
        LDS_FLAG_STALE,
        LDS_FLAG_FROM_CACHE,
        LDS_FLAG_CANCELLED,
        LDS_FLAG_QUEUED,
        LDS_FLAG_REVALIDATED,
        LDS_FLAG_OPTIMISTIC,
        LDS_FLAG_ROLLED_BACK,
        LDS_MUTATE_POPULATE,
        LDS_MUTATION_KEYS_MAX,
        LDS_FLAG_PREVIOUS,
        LDS_FLAG_PLACEHOLDER,
        LDS_FLAG_PAUSED,
        LDS_FLAG_NO_VALUE,
        LDS_FLAG_PAGES_LOAD,
        LDS_LOAD_SILENT,
        LDS_LOAD_SHARE,
        LDS_LOAD_POLL_ON_ERROR,
        LDS_LOAD_IGNORE_CACHE_HEADERS,
        LDS_LOAD_NO_PROGRESS,
        LDS_LOAD_KEEP_PREVIOUS,
        LDS_LOAD_REFRESH_ON_FOREGROUND,
        LDS_LOAD_OFFLINE_FAIL,
        LDS_LOAD_OFFLINE_RUN,
        LDS_LOAD_POLL_IN_BACKGROUND,
        LDS_PRIORITY_PREFETCH,
        LDS_POLICY_LOAD_ONLY,
        LDS_POLICY_CACHE_FIRST,
        LDS_POLICY_CACHE_THEN_LOAD,
        LDS_POLICY_CACHE_ONLY,
        LDS_CACHE_REPLACE_DAMAGED,
        LDS_RUNTIME_NO_METRICS,
        LDS_RUNTIME_KEEP_FD,
        LDS_INSPECTOR_SHOW_VALUES,
        LDS_INSPECTOR_ACTIONS,
        LDS_INSPECTOR_ALLOW_REMOTE,
        LDS_INSPECTOR_WAITING_MAX,
        LDS_OBSERVE_EVENT,
        LDS_OBSERVE_JOB_START,
        LDS_OBSERVE_JOB_END,
        LDS_JOB_SUCCEEDED,
        LDS_JOB_FAILED,
        LDS_JOB_CANCELLED,
        LDS_LATENCY_BUCKETS,
        LDS_DELIVER_LOOP,
        LDS_DELIVER_POLL,
        LDS_DOMAIN_LOADSTATE,
        LDS_DOMAIN_HOST,
        LDS_DOMAIN_OS,
        LDS_DOMAIN_HTTP,
        LDS_DOMAIN_EXIT,
        LDS_DOMAIN_REDIS,
        LDS_REDIS_ECONNECT,
        LDS_REDIS_ETIMEDOUT,
        LDS_REDIS_EAUTH,
        LDS_REDIS_EREPLY,
        LDS_REDIS_ETOOBIG,
        LDS_REDIS_EDOWN,
        LDS_REDIS_ECLOSED,
        LDS_REDIS_EQUEUE,
        LDS_REDIS_EPROTO,
        LDS_REDIS_EREFUSED,
        LDS_REDIS_EUNREACHABLE,
        LDS_REDIS_REPLY_SLACK,
        LDS_REDIS_PENDING_MAX,
        LDS_REDIS_KEYS_MAX,
        LDS_CACHE_GET_MANY_MAX,
        LDS_EXEC_STREAM_LINES,
        LDS_HTTP_INSECURE,
        LDS_HTTP_NO_REDIRECTS,
        LDS_HTTP_NO_COMPRESSION,
        LDS_HTTP_HTTP2,
        LDS_HTTP_HTTP1,
        LDS_HTTP_NO_HEURISTIC_FRESHNESS,
        LDS_HTTP_NO_STALE_ON_DISCONNECT,
        LDS_HTTP_STATUS_LINE_MAX,
        LDS_HTTP_HEADERS_MAX,
        LDS_HTTP_HEADER_LINES_MAX,
        LDS_HTTP_TRAILERS_MAX,
    );

    let lso = lds_loader_options::INIT;
    checker.check(
        "init lds_loader_options",
        format!(
            "{} {}",
            lso.size,
            u8::from(
                lso.start.is_some()
                    || lso.cancel.is_some()
                    || lso.free_data.is_some()
                    || !lso.loader_data.is_null()
                    || !lso.name.is_null()
            )
        ),
    );
    let co = lds_cell_options::INIT;
    checker.check(
        "init lds_cell_options",
        format!("{} {}", co.size, u8::from(co.on_event.is_some() || !co.user_data.is_null() || !co.name.is_null())),
    );
    let po = lds_pages_options::INIT;
    checker.check(
        "init lds_pages_options",
        format!(
            "{} {} {}",
            po.size,
            u8::from(po.on_event.is_some() || !po.user_data.is_null() || !po.name.is_null()),
            po.max_pages
        ),
    );
    let ro = lds_runtime_options::INIT;
    checker.check(
        "init lds_runtime_options",
        format!("{} {} {} {} {}", ro.size, ro.delivery, ro.spin_us, ro.queue_max, ro.flags),
    );
    let rs = lds_runtime_statistics::INIT;
    let any_set = !rs.loaders.is_null()
        || !rs.caches.is_null()
        || rs.enabled != 0
        || rs.loads.started != 0
        || rs.loads_from_cache != 0
        || !rs.loaders_from_cache.is_null();
    checker.check(
        "init lds_runtime_statistics",
        format!("{} {} {} {}", rs.size, u8::from(any_set), rs.loaders_cap, rs.caches_cap),
    );
    let lo = lds_load_options::INIT;
    checker.check(
        "init lds_load_options",
        format!(
            "{} {} {} {} {} {} {} {} {} {} {} {} {} {}",
            lo.size,
            lo.flags,
            lo.timeout_ms,
            u8::from(!lo.interrupts_ms.is_null()),
            lo.interrupt_count,
            lo.retries,
            lo.retry_base_ms,
            lo.retry_max_ms,
            lo.cache,
            u8::from(!lo.cache_key.is_null()),
            lo.cache_key_len,
            lo.cache_policy,
            lo.fresh_ms,
            lo.max_age_ms
        ),
    );

    let fo = lds_file_options::INIT;
    checker.check("init lds_file_options", format!("{} {} {}", fo.size, fo.chunk_size, fo.max_size));
    let eo = lds_exec_options::INIT;
    checker.check("init lds_exec_options", format!("{} {} {} {}", eo.size, eo.flags, eo.kill_grace_ms, eo.max_output));
    let er = lds_exec_request::INIT;
    let any_set = !er.argv.is_null() || !er.env.is_null() || !er.cwd.is_null();
    checker.check("init lds_exec_request", format!("{} {}", er.size, u8::from(any_set)));
    let ho = lds_http_options::INIT;
    checker.check(
        "init lds_http_options",
        format!(
            "{} {} {} {}",
            ho.size,
            ho.max_connections,
            u8::from(!ho.user_agent.is_null()),
            u8::from(!ho.proxy.is_null())
        ),
    );
    let hr = lds_http_request::INIT;
    let any_set = !hr.method.is_null()
        || !hr.url.is_null()
        || !hr.headers.is_null()
        || !hr.body.is_null()
        || !hr.ca_file.is_null();
    checker.check(
        "init lds_http_request",
        format!(
            "{} {} {} {} {} {} {} {}",
            hr.size,
            u8::from(any_set),
            hr.header_count,
            hr.body_len,
            hr.timeout_ms,
            hr.max_redirects,
            hr.max_body,
            hr.flags
        ),
    );

    let mo = lds_memory_cache_options::INIT;
    checker.check(
        "init lds_memory_cache_options",
        format!(
            "{} {} {} {} {} {}",
            mo.size,
            u8::from(!mo.name.is_null()),
            mo.max_entries,
            mo.max_bytes,
            mo.ttl_ms,
            mo.unobserved_ms
        ),
    );
    let po = lds_persistent_cache_options::INIT;
    checker.check(
        "init lds_persistent_cache_options",
        format!("{} {} {} {} {}", po.size, po.flags, u8::from(!po.path.is_null()), po.max_bytes, po.ttl_ms),
    );

    let rco = lds_redis_cache_options::INIT;
    checker.check(
        "init lds_redis_cache_options",
        format!(
            "{} {} {} {} {} {} {} {} {} {} {} {} {}",
            rco.size,
            rco.flags,
            u8::from(!rco.key_prefix.is_null()),
            rco.ttl_ms,
            rco.max_ttl_ms,
            rco.max_value_bytes,
            rco.command_timeout_ms,
            rco.connect_timeout_ms,
            rco.lease_ms,
            rco.reconnect_max_ms,
            rco.memory_max_entries,
            rco.memory_max_bytes,
            rco.memory_ttl_ms
        ),
    );

    assert!(checker.mismatches.is_empty(), "layout mismatches:\n{}", checker.mismatches.join("\n"));
    let unchecked: Vec<&String> = checker.c.keys().filter(|key| !checker.checked.contains(*key)).collect();
    assert!(unchecked.is_empty(), "lines of the probe not compared: {unchecked:?}");
}

#[test]
fn library_version_matches_the_header() {
    assert_eq!(loadstate::version() >> 16, LDS_VERSION_MAJOR, "major version");
    assert_eq!(loadstate::version(), LDS_VERSION);
}

/// The `lds_*` functions declared in C code (comments stripped).
fn c_functions(code: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut search = code;
    while let Some(at) = search.find("lds_") {
        let tail = &search[at..];
        let end = tail.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(tail.len());
        let (name, after) = tail.split_at(end);
        let before = search[..at].trim_end();
        let boundary = !search[..at].ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_');
        if boundary && after.trim_start().starts_with('(') && !before.ends_with("(*") {
            names.insert(name.to_owned());
        }
        search = after;
    }
    names
}

/// The names following `keyword` (such as `pub fn`) in Rust code.
fn rust_items(code: &str, keyword: &str) -> BTreeSet<String> {
    code.split(keyword)
        .skip(1)
        .filter_map(|rest| {
            let name: String =
                rest.trim_start().chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            (name.starts_with("lds_") || name.starts_with("LDS_")).then_some(name)
        })
        .collect()
}

/// Every function, constant and struct of the header has its counterpart
/// in `sys`, and `sys` has nothing the header lacks. New structs and
/// initializers also need their lines in the probe.
#[test]
fn sys_declares_every_function_constant_and_struct_of_the_header() {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let sys = strip_comments(&std::fs::read_to_string(manifest.join("src/sys.rs")).unwrap());
    let header = strip_comments(&header_text());
    let (constants, initializers) = header_defines();
    let structs = header_structs();
    assert!(c_functions(&header).len() > 30 && constants.len() > 30 && structs.len() > 5, "the header parses");

    let mut problems = Vec::new();
    let mut compare = |what: &str, c: &BTreeSet<String>, rust: &BTreeSet<String>| {
        let missing: Vec<_> = c.difference(rust).collect();
        let extra: Vec<_> = rust.difference(c).collect();
        if !missing.is_empty() || !extra.is_empty() {
            problems.push(format!("{what}: missing in sys {missing:?}, not in the header {extra:?}"));
        }
    };
    compare("functions", &c_functions(&header), &rust_items(&sys, "pub fn"));
    compare("constants", &constants, &rust_items(&sys, "pub const"));
    compare("structs", &structs, &rust_items(&sys, "pub struct"));
    assert!(problems.is_empty(), "{}", problems.join("\n"));

    let probed = probe();
    let without_layout: Vec<_> =
        structs.iter().filter(|s| *s != "lds_runtime" && !probed.contains_key(&format!("size {s}"))).collect();
    assert!(without_layout.is_empty(), "structs the probe does not measure: {without_layout:?}");
    let without_init: Vec<_> = initializers
        .iter()
        .map(|i| i.trim_end_matches("_INIT").to_ascii_lowercase())
        .filter(|s| !probed.contains_key(&format!("init {s}")))
        .collect();
    assert!(without_init.is_empty(), "initializers the probe does not print: {without_init:?}");
}
