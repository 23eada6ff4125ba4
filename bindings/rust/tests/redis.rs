//! The Redis cache through the safe API, against a real redis-server on
//! 127.0.0.1 and a free port. Two runtimes, each with its own `RedisCache` of
//! one server and key prefix, stand for two processes.

#![allow(clippy::needless_pass_by_value)] // helpers take owned values to keep call sites short
#![allow(clippy::similar_names)] // bindings named in pairs on purpose (tx/rx, first/second)

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::redis_server::{RedisServer, Reply, redis_name};
use common::{DEADLINE, job_queue};
use loadstate::{
    CachePolicy, ErrorDomain, ErrorKind, Flags, LoadOptions, Loader, RedisCache, RedisCacheOptions, RedisErrorKind,
    Runtime, Status,
};

/// Short enough that a test waits little for the cache to notice a restart.
const RECONNECT_MAX: Duration = Duration::from_millis(200);

fn wait_for(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + DEADLINE;
    while !condition() {
        assert!(Instant::now() < deadline, "{what}: not within {DEADLINE:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn connected(cache: &RedisCache) -> bool {
    let status = cache.status().unwrap();
    status.connected && status.subscribed
}

/// A Redis cache of the test's server under the prefix "test:", connected.
fn open(runtime: &Runtime, server: &RedisServer, options: RedisCacheOptions) -> RedisCache {
    let cache = runtime.redis_cache(&server.url, &options).unwrap();
    wait_for("the cache connects", || connected(&cache));
    cache
}

fn options() -> RedisCacheOptions {
    RedisCacheOptions::new().key_prefix("test:").reconnect_max(RECONNECT_MAX)
}

/// A loader that records its requests and returns `prefix` + the request.
fn counting(runtime: &Runtime, prefix: &'static [u8]) -> (Loader, Arc<Mutex<Vec<Vec<u8>>>>) {
    let calls = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&calls);
    let loader = runtime
        .loader(move |job| {
            seen.lock().unwrap().push(job.request().to_vec());
            let mut value = prefix.to_vec();
            value.extend_from_slice(job.request());
            job.succeed(&value).unwrap();
        })
        .unwrap();
    (loader, calls)
}

/// Loads `request` into a new cell and returns its settled value.
fn load(runtime: &Runtime, loader: &Loader, request: &[u8], options: &LoadOptions) -> loadstate::Event {
    let (cell, events) = runtime.loadable().unwrap();
    cell.load_with(loader, request, options).unwrap();
    events.wait_until(|e| e.is_settled() && !e.flags.contains(Flags::REFRESHING), DEADLINE).unwrap()
}

#[test]
fn a_redis_cache_stores_finds_lists_and_removes_under_its_prefix() {
    let server = RedisServer::new();
    let runtime = Runtime::new().unwrap();
    let cache = open(&runtime, &server, options());
    cache.put(b"user/1", b"Ada").unwrap();
    cache.put(b"user/2", b"Bob").unwrap();
    let entry = cache.get(b"user/1").unwrap().expect("a hit");
    assert_eq!((entry.value.as_slice(), entry.stale), (&b"Ada"[..], false));
    assert_eq!(cache.get(b"user/3").unwrap(), None);
    let mut keys = cache.keys(b"user/").unwrap();
    keys.sort();
    assert_eq!(keys, vec![b"user/1".to_vec(), b"user/2".to_vec()]);
    let mut names = vec![redis_name("test:", "v:", "user/1"), redis_name("test:", "v:", "user/2")];
    names.sort();
    assert_eq!(server.entry_names(""), names);
    assert!(cache.remove(b"user/2").unwrap());
    assert!(!cache.remove(b"user/2").unwrap());
    cache.clear().unwrap();
    assert_eq!(cache.keys(b"").unwrap(), Vec::<Vec<u8>>::new());
    assert_eq!(server.entry_names("test:"), Vec::<Vec<u8>>::new());
    let stats = cache.stats().unwrap();
    assert!(stats.hits >= 1 && stats.misses >= 1, "{stats:?}");
    assert!(format!("{cache:?}").starts_with("RedisCache"));
}

#[test]
fn entries_live_in_redis_for_the_cache_ttl_capped_by_max_ttl() {
    let server = RedisServer::new();
    let runtime = Runtime::new().unwrap();
    let cache = open(&runtime, &server, options().ttl(Duration::from_secs(30)));
    cache.put(b"k", b"v").unwrap();
    let Reply::Integer(ttl) = server.command(&["PTTL", std::str::from_utf8(&redis_name("test:", "v:", "k")).unwrap()])
    else {
        panic!()
    };
    assert!(ttl > 0 && ttl <= 30_000, "{ttl}");
    let capped = open(
        &runtime,
        &server,
        options().key_prefix("capped:").ttl(Duration::from_secs(3600)).max_ttl(Duration::from_secs(10)),
    );
    capped.put(b"k", b"v").unwrap();
    let Reply::Integer(ttl) =
        server.command(&["PTTL", std::str::from_utf8(&redis_name("capped:", "v:", "k")).unwrap()])
    else {
        panic!()
    };
    assert!(ttl > 0 && ttl <= 10_000, "{ttl}");
}

#[test]
fn a_cached_load_fills_redis_and_another_runtime_loads_nothing() {
    let server = RedisServer::new();
    let (first, second) = (Runtime::new().unwrap(), Runtime::new().unwrap());
    let (first_cache, second_cache) = (open(&first, &server, options()), open(&second, &server, options()));
    let (first_loader, first_calls) = counting(&first, b"first ");
    let (second_loader, second_calls) = counting(&second, b"second ");
    let cache_first = |cache: &RedisCache| {
        LoadOptions::new().cache(cache).cache_policy(CachePolicy::CacheFirst).fresh(Duration::from_secs(60))
    };
    let loaded = load(&first, &first_loader, b"k", &cache_first(&first_cache));
    assert_eq!((loaded.value.as_deref(), loaded.is_from_cache()), (Some(&b"first k"[..]), false));
    // The result is stored in Redis after the LOADED event (see the report): wait for it.
    wait_for("the first runtime stores its result", || server.entry_names("test:").len() == 1);
    let loaded = load(&second, &second_loader, b"k", &cache_first(&second_cache));
    assert_eq!((loaded.status, loaded.value.as_deref()), (Status::Loaded, Some(&b"first k"[..])));
    assert!(loaded.is_from_cache());
    assert_eq!((first_calls.lock().unwrap().len(), second_calls.lock().unwrap().len()), (1, 0));
}

#[test]
fn a_shared_load_calls_one_loader_among_two_runtimes() {
    let server = RedisServer::new();
    let (holder, waiter) = (Runtime::new().unwrap(), Runtime::new().unwrap());
    let (holder_cache, waiter_cache) = (open(&holder, &server, options()), open(&waiter, &server, options()));
    let (holder_loader, jobs) = job_queue(&holder);
    let (waiter_loader, waiter_calls) = counting(&waiter, b"waiter ");

    let (holder_cell, holder_events) = holder.loadable().unwrap();
    holder_cell.load_with(&holder_loader, b"k", &LoadOptions::new().share(true).cache(&holder_cache)).unwrap();
    let job = jobs.next(); // the holder has the lease
    let (waiting, events) = waiter.loadable().unwrap();
    waiting.load_with(&waiter_loader, b"k", &LoadOptions::new().share(true).cache(&waiter_cache)).unwrap();
    assert_eq!(events.recv_timeout(DEADLINE).unwrap().status, Status::Loading);
    wait_for("the second runtime waits for the lease", || waiter_cache.status().unwrap().leases_waited == 1);
    job.succeed(b"from the holder").unwrap();
    let loaded = events.wait_until(loadstate::Event::is_settled, DEADLINE).unwrap();
    assert_eq!(loaded.value.as_deref(), Some(&b"from the holder"[..]));
    holder_events.wait_until(loadstate::Event::is_settled, DEADLINE).unwrap();
    assert!(waiter_calls.lock().unwrap().is_empty());
    // The holder counts its result published when Redis answers, which may come after the waiter has it.
    wait_for("the holder counts its result published", || holder_cache.status().unwrap().published == 1);
    assert_eq!(holder_cache.status().unwrap().leases_taken, 1);
    let waited = waiter_cache.status().unwrap();
    assert_eq!((waited.leases_taken, waited.results_received), (0, 1), "{waited:?}");
}

#[test]
fn a_lease_released_by_a_cancelled_load_is_taken_over() {
    let server = RedisServer::new();
    let (holder, waiter) = (Runtime::new().unwrap(), Runtime::new().unwrap());
    let (holder_cache, waiter_cache) = (open(&holder, &server, options()), open(&waiter, &server, options()));
    let (holder_loader, jobs) = job_queue(&holder);
    let (waiter_loader, waiter_calls) = counting(&waiter, b"waiter ");
    let (cell, _holder_events) = holder.loadable().unwrap();
    cell.load_with(&holder_loader, b"k", &LoadOptions::new().share(true).cache(&holder_cache)).unwrap();
    let _job = jobs.next();
    let leases: Vec<Vec<u8>> =
        server.keys("test:*").into_iter().filter(|k| k.windows(3).any(|w| w == b"}l:")).collect();
    assert_eq!(leases, vec![redis_name("test:", "l:", "k")]);
    let (waiting, events) = waiter.loadable().unwrap();
    waiting.load_with(&waiter_loader, b"k", &LoadOptions::new().share(true).cache(&waiter_cache)).unwrap();
    wait_for("the second runtime waits for the lease", || waiter_cache.status().unwrap().leases_waited == 1);
    cell.cancel().unwrap();
    let loaded = events.wait_until(loadstate::Event::is_settled, DEADLINE).unwrap();
    assert_eq!(loaded.value.as_deref(), Some(&b"waiter k"[..]));
    assert_eq!(waiter_calls.lock().unwrap().len(), 1);
    assert_eq!(waiter_cache.status().unwrap().takeovers, 1);
}

#[test]
fn a_lease_of_a_dropped_runtime_is_released() {
    let server = RedisServer::new();
    let waiter = Runtime::new().unwrap();
    let waiter_cache = open(&waiter, &server, options());
    let (waiter_loader, waiter_calls) = counting(&waiter, b"waiter ");
    let (waiting, events) = waiter.loadable().unwrap();
    {
        let holder = Runtime::new().unwrap();
        let holder_cache = open(&holder, &server, options().lease(Duration::from_secs(5)));
        let (holder_loader, jobs) = job_queue(&holder);
        let (cell, _events) = holder.loadable().unwrap();
        cell.load_with(&holder_loader, b"k", &LoadOptions::new().share(true).cache(&holder_cache)).unwrap();
        let _job = jobs.next();
        waiting.load_with(&waiter_loader, b"k", &LoadOptions::new().share(true).cache(&waiter_cache)).unwrap();
        wait_for("the second runtime waits for the lease", || waiter_cache.status().unwrap().leases_waited == 1);
    } // dropping the holder's runtime cancels its job, which releases the lease
    let loaded = events.wait_until(loadstate::Event::is_settled, Duration::from_secs(2));
    assert!(loaded.is_ok(), "the lease of a dropped runtime is released: the waiter takes over within 2 s of 5");
    assert_eq!(loaded.unwrap().value.as_deref(), Some(&b"waiter k"[..]));
    assert_eq!(waiter_calls.lock().unwrap().len(), 1);
}

#[test]
fn a_load_waiting_for_a_lease_calls_its_loader_when_redis_goes_down() {
    let mut server = RedisServer::new();
    let (holder, waiter) = (Runtime::new().unwrap(), Runtime::new().unwrap());
    let leased = options().lease(Duration::from_secs(5));
    let (holder_cache, waiter_cache) = (open(&holder, &server, leased.clone()), open(&waiter, &server, leased));
    let (holder_loader, jobs) = job_queue(&holder);
    let (waiter_loader, _calls) = counting(&waiter, b"waiter ");
    let (cell, _holder_events) = holder.loadable().unwrap();
    cell.load_with(&holder_loader, b"k", &LoadOptions::new().share(true).cache(&holder_cache)).unwrap();
    let job = jobs.next();
    let (waiting, events) = waiter.loadable().unwrap();
    waiting.load_with(&waiter_loader, b"k", &LoadOptions::new().share(true).cache(&waiter_cache)).unwrap();
    wait_for("the second runtime waits for the lease", || waiter_cache.status().unwrap().leases_waited == 1);
    server.kill();
    // Redis is unreachable: the waiting load calls its loader, well before the lease's 5 s have passed.
    let loaded = events.wait_until(loadstate::Event::is_settled, Duration::from_secs(2));
    job.succeed(b"holder").unwrap();
    assert_eq!(loaded.expect("the waiter loads within 2 s").value.as_deref(), Some(&b"waiter k"[..]));
}

#[test]
fn invalidating_in_one_runtime_reloads_the_cells_of_another() {
    let server = RedisServer::new();
    let (first, second) = (Runtime::new().unwrap(), Runtime::new().unwrap());
    let (first_cache, second_cache) = (open(&first, &server, options()), open(&second, &server, options()));
    let (second_loader, second_calls) = counting(&second, b"second ");
    let (cell, events) = second.loadable().unwrap();
    cell.load_with(&second_loader, b"user/1", &LoadOptions::new().cache(&second_cache)).unwrap();
    events.wait_until(|e| e.status == Status::Loaded, DEADLINE).unwrap();
    first_cache.invalidate(b"user/").unwrap();
    let reloading = events.recv_timeout(DEADLINE).unwrap();
    assert_eq!(reloading.status, Status::Loaded);
    assert!(reloading.flags.contains(Flags::STALE | Flags::REFRESHING), "{reloading:?}");
    let reloaded = events.wait_until(|e| !e.flags.contains(Flags::REFRESHING), DEADLINE).unwrap();
    assert_eq!(reloaded.value.as_deref(), Some(&b"second user/1"[..]));
    assert_eq!(second_calls.lock().unwrap().len(), 2);
    assert_eq!(second_cache.status().unwrap().invalidations, 1);
}

#[test]
fn redis_stopped_fails_cache_calls_but_not_loads_and_restarted_works_again() {
    let mut server = RedisServer::new();
    let runtime = Runtime::new().unwrap();
    let short = Duration::from_secs(1);
    let cache = open(&runtime, &server, options().command_timeout(short).connect_timeout(short));
    let (loader, calls) = counting(&runtime, b"loaded ");
    cache.put(b"k", b"cached").unwrap();
    server.stop();

    let error = cache.put(b"k", b"while down").unwrap_err();
    assert_eq!((error.kind(), error.code()), (ErrorKind::Redis, -11));
    let reason = error.redis_kind().expect("the cache's reason");
    assert!(
        matches!(
            reason,
            RedisErrorKind::Connect | RedisErrorKind::Down | RedisErrorKind::TimedOut | RedisErrorKind::Refused
        ),
        "{error}"
    );
    assert_eq!(cache.get(b"k").unwrap_err().kind(), ErrorKind::Redis);
    let status = cache.status().unwrap();
    assert!(!status.connected && status.last_error_kind.is_some() && !status.last_error.is_empty(), "{status:?}");

    for options in [
        LoadOptions::new().cache(&cache).cache_policy(CachePolicy::CacheFirst).fresh(Duration::from_secs(60)),
        LoadOptions::new().cache(&cache).share(true),
        LoadOptions::new().cache(&cache).cache_policy(CachePolicy::CacheThenLoad),
    ] {
        let loaded = load(&runtime, &loader, b"k", &options);
        assert_eq!((loaded.status, loaded.value.as_deref()), (Status::Loaded, Some(&b"loaded k"[..])));
    }
    assert_eq!(calls.lock().unwrap().len(), 3);
    let failed = load(&runtime, &loader, b"k", &LoadOptions::new().cache(&cache).cache_policy(CachePolicy::CacheOnly));
    assert_eq!(failed.status, Status::Error);
    let error = failed.error.expect("an error");
    assert_eq!(error.domain, ErrorDomain::Redis, "{error:?}");
    assert!(matches!(RedisErrorKind::from_raw(error.code), Some(kind) if !matches!(kind, RedisErrorKind::Other(_))));

    server.start();
    wait_for("the cache reconnects", || connected(&cache));
    cache.put(b"k", b"after the restart").unwrap();
    assert_eq!(cache.get(b"k").unwrap().unwrap().value, b"after the restart");
    let cached = load(
        &runtime,
        &loader,
        b"k",
        &LoadOptions::new().cache(&cache).cache_policy(CachePolicy::CacheFirst).fresh(Duration::from_secs(60)),
    );
    assert_eq!(cached.value.as_deref(), Some(&b"after the restart"[..]));
    assert_eq!(calls.lock().unwrap().len(), 3);
    assert!(cache.status().unwrap().connects >= 4);
}

#[test]
fn a_value_over_max_value_bytes_is_not_stored() {
    let server = RedisServer::new();
    let runtime = Runtime::new().unwrap();
    let cache = open(&runtime, &server, options().max_value_bytes(16));
    let error = cache.put(b"k", &[b'x'; 17]).unwrap_err();
    assert_eq!((error.kind(), error.redis_kind()), (ErrorKind::Redis, Some(RedisErrorKind::TooBig)));
    assert_eq!(cache.get(b"k").unwrap(), None);
    let (loader, _calls) = counting(&runtime, b"");
    let loaded = load(&runtime, &loader, &[b'y'; 17], &LoadOptions::new().cache(&cache));
    assert_eq!(loaded.value.as_deref(), Some(&[b'y'; 17][..]));
    assert_eq!(server.entry_names(""), Vec::<Vec<u8>>::new());
}

#[test]
fn a_front_memory_tier_serves_reads_and_drops_what_another_runtime_invalidates() {
    let server = RedisServer::new();
    let (first, second) = (Runtime::new().unwrap(), Runtime::new().unwrap());
    let fronted = options().memory_max_entries(100).memory_ttl(Duration::from_secs(60));
    let (cache, other_cache) = (open(&first, &server, fronted), open(&second, &server, options()));
    cache.put(b"k", b"v").unwrap();
    assert_eq!(cache.get(b"k").unwrap().unwrap().value, b"v");
    assert_eq!(cache.stats().unwrap().entries, 1);
    other_cache.invalidate(b"k").unwrap();
    wait_for("the invalidation reaches the first runtime", || cache.status().unwrap().invalidations == 1);
    assert!(cache.get(b"k").unwrap().expect("still in Redis").stale);
}

#[test]
fn get_many_reads_a_batch_and_fails_key_by_key_while_redis_is_down() {
    let mut server = RedisServer::new();
    let runtime = Runtime::new().unwrap();
    let short = Duration::from_secs(1);
    let fronted = options().command_timeout(short).connect_timeout(short).memory_max_entries(10);
    let cache = open(&runtime, &server, fronted);
    let keys: Vec<Vec<u8>> = (0..1000).map(|i| format!("key:{i}").into_bytes()).collect();
    for key in &keys[..500] {
        cache.put(key, key).unwrap();
    }
    let found = cache.get_many(&keys).unwrap();
    for (i, entry) in found.into_iter().enumerate() {
        assert_eq!(entry.unwrap().map(|e| e.value), (i < 500).then(|| keys[i].clone()), "key {i}");
    }
    let stats = cache.stats().unwrap();
    assert_eq!((stats.hits, stats.misses), (500, 500));
    // The front tier holds the last key read: it answers while Redis is
    // down; a key it does not hold fails alone.
    assert!(cache.get(&keys[499]).unwrap().is_some());
    server.stop();
    let found = cache.get_many(&[&keys[499], &keys[0]]).unwrap();
    assert_eq!(found[0].as_ref().unwrap().as_ref().unwrap().value, keys[499]);
    let error = found[1].as_ref().unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Redis);
    assert!(matches!(
        error.redis_kind(),
        Some(RedisErrorKind::Connect | RedisErrorKind::Down | RedisErrorKind::TimedOut | RedisErrorKind::Refused)
    ));
}

#[test]
fn bad_urls_and_options_are_refused() {
    let server = RedisServer::new();
    let runtime = Runtime::new().unwrap();
    for url in ["http://127.0.0.1/", "redis://127.0.0.1:notaport/", "redis://a\0b"] {
        let error = runtime.redis_cache(url, &RedisCacheOptions::new()).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::InvalidArgument, "{url}");
    }
    let tls = runtime.redis_cache("rediss://127.0.0.1:6380/", &RedisCacheOptions::new()).unwrap_err();
    assert_eq!(tls.kind(), ErrorKind::NotSupported);
    let nul = RedisCacheOptions::new().key_prefix("a\0b");
    assert_eq!(runtime.redis_cache(&server.url, &nul).unwrap_err().kind(), ErrorKind::InvalidArgument);
    let too_big = RedisCacheOptions::new().max_value_bytes(loadstate::VALUE_MAX as u64 + 1);
    assert_eq!(runtime.redis_cache(&server.url, &too_big).unwrap_err().kind(), ErrorKind::InvalidArgument);
}

#[test]
fn cache_calls_from_a_loop_callback_are_refused() {
    let server = RedisServer::new();
    let runtime = Runtime::new().unwrap();
    let cache = Arc::new(open(&runtime, &server, options()));
    let seen = Arc::new(Mutex::new(None));
    let (inner, result) = (Arc::clone(&cache), Arc::clone(&seen));
    let loader = runtime
        .loader(move |job| {
            let many = inner.get_many(&[b"k"]).map(|_| ());
            *result.lock().unwrap() = Some((inner.get(b"k").map(|_| ()), many));
            job.succeed(b"").unwrap();
        })
        .unwrap();
    load(&runtime, &loader, b"", &LoadOptions::new());
    let (get, many) = seen.lock().unwrap().take().expect("the loader ran");
    assert_eq!(get.unwrap_err().kind(), ErrorKind::State);
    assert_eq!(many.unwrap_err().kind(), ErrorKind::State);
}
