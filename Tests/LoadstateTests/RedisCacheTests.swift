import Testing
#if canImport(Glibc)
import Glibc
#endif
@_spi(LoadstateC) @testable import Loadstate

/// The Redis cache against a real redis-server. Two runtimes with their own
/// Redis cache on one server stand for two processes (the C tests fork).
@Suite(.serialized, .timeLimit(.minutes(2)))
struct RedisCacheTests {
    let redis: TestRedis

    init() throws {
        redis = try TestRedis()
    }

    /// A runtime with a manual loader, one cell and a Redis cache under `prefix`.
    struct Process {
        let f: CoreFixture
        let cache: RedisCache

        init(_ redis: TestRedis, prefix: String, leaseMs: UInt64 = 10_000,
             configure: (inout RedisCache.Options) -> Void = { _ in }) throws {
            f = try CoreFixture()
            var options = RedisCache.Options()
            options.keyPrefix = Array(prefix.utf8)
            options.leaseMs = leaseMs
            options.reconnectMaxMs = 200
            options.commandTimeoutMs = 1_000
            configure(&options)
            cache = try RedisCache(url: redis.url, options: options, runtime: f.runtime)
        }

        /// A shared, cache-first load of `key`.
        func load(_ key: String, policy: CachePolicy = .cacheFirst) {
            let use = CacheUse<String>(store: cache, key: Array(key.utf8), policy: policy, freshMs: 60_000,
                                       encode: { Array($0.utf8) }, decode: { String(decoding: $0, as: UTF8.self) })
            let spec = LoadSpec(loader: f.loader as Loader<String, String>, request: key,
                                options: LoadOptions(shareKey: Array(key.utf8)), cache: use)
            f.cell.noteLoadRequested(loader: f.loader.id)
            f.onLoop { $0.load(spec) }
        }

        /// The next event that ends a load (loaded or error).
        func settled() async -> CellState<String, String> {
            while true {
                let event = await f.log.next()
                if event.state.status == .loaded || event.state.status == .error, !event.state.isRefreshing {
                    return event.state
                }
            }
        }
    }

    /// Waits (5 s at most) until `done`: for counters of the cache, which
    /// move on the loop when Redis answers.
    private func waitUntil(_ done: () -> Bool) async {
        let deadline = Loadstate.Clock.monotonicMs() + 5_000
        while !done() && Loadstate.Clock.monotonicMs() < deadline { usleep(1_000) }
        #expect(done())
    }

    private func text(_ entry: CacheEntry?) -> String? {
        entry.map { String(decoding: $0.value, as: UTF8.self) }
    }

    /// A value of megabytes (over the 4 MiB a loopback socket buffers):
    /// its command takes several writes, the socket taking part of the
    /// buffer at a time, and its reply several reads.
    @Test func valuesOfMegabytesRoundTrip() async throws {
        let p = try Process(redis, prefix: "mega:")
        defer { p.f.close() }
        var big = [UInt8](repeating: 0xAB, count: 6 << 20)
        for i in stride(from: 0, to: big.count, by: 4_093) { big[i] = UInt8(truncatingIfNeeded: i / 4_093) }
        let values = [big, Array("small".utf8), Array(big.prefix(5 << 20).reversed())]
        for (n, value) in values.enumerated() { try p.cache.put(Array("m\(n)".utf8), value) }
        for (n, value) in values.enumerated() { #expect(try p.cache.get(Array("m\(n)".utf8))?.value == value) }
        let found = try p.cache.entries(for: (0..<3).map { Array("m\($0)".utf8) })
        for (n, value) in values.enumerated() { #expect((try? found[n].get())??.value == value) }
    }

    @Test func directCallsRoundTripThroughRedis() async throws {
        let p = try Process(redis, prefix: "direct:")
        defer { p.f.close() }
        try p.cache.put(Array("a/1".utf8), Array("one".utf8))
        try p.cache.put(Array("a/2".utf8), Array("two".utf8))
        try p.cache.put(Array("b/1".utf8), Array("three".utf8))
        #expect(text(try p.cache.get(Array("a/1".utf8))) == "one")
        #expect(try p.cache.get(Array("missing".utf8)) == nil)
        #expect(Set(try p.cache.keys(prefix: Array("a/".utf8)).map { String(decoding: $0, as: UTF8.self) })
                == ["a/1", "a/2"])
        #expect(try p.cache.markStale(prefix: Array("a/".utf8)) == 2)
        #expect(try p.cache.get(Array("a/1".utf8))?.isStale == true)
        #expect(try p.cache.remove(Array("a/1".utf8)))
        #expect(try !p.cache.remove(Array("a/1".utf8)))
        let stats = try p.cache.stats()
        #expect(stats.hits == 2 && stats.misses == 1)
        // Another prefix is another namespace.
        let other = try Process(redis, prefix: "other:")
        defer { other.f.close() }
        #expect(try other.cache.get(Array("a/2".utf8)) == nil)
        try p.cache.clear()
        #expect(try p.cache.keys(prefix: []).isEmpty)
        #expect(p.cache.status().connected)
    }

    @Test func aValueOverTheBoundIsNotStored() async throws {
        let p = try Process(redis, prefix: "big:") { $0.maxValueBytes = 1_000 }
        defer { p.f.close() }
        let cache = p.cache
        #expect(throws: CacheError.self) { try cache.put(Array("k".utf8), [UInt8](repeating: 1, count: 1_001)) }
        #expect(cache.status().lastErrorCode == .tooBig)
        #expect(try cache.get(Array("k".utf8)) == nil)
    }

    @Test func badURLsAreRefused() throws {
        let f = try CoreFixture()
        defer { f.close() }
        #expect(throws: CacheError(.notSupported, "rediss:// (TLS) is not supported: this build's hiredis has no TLS; "
                                   + "reach a TLS-only Redis through a local TLS tunnel (stunnel, socat)")) {
            try RedisCache(url: "rediss://127.0.0.1:6379", runtime: f.runtime)
        }
        for url in ["http://x", "redis://", "redis://host:99999", "redis://h/x",
                    "unix://relative", "redis://a b"] {
            #expect(throws: CacheError.self) { try RedisCache(url: url, runtime: f.runtime) }
        }
        let parsed = RedisURL("redis://user:s%40cret@[::1]:7000/3")
        #expect(parsed?.address == .tcp(host: "::1", port: 7000))
        #expect(parsed?.password == "s@cret" && parsed?.user == "user" && parsed?.database == 3)
        #expect(RedisURL("unix:///run/redis.sock?db=2")?.address == .unix(path: "/run/redis.sock"))
        // Between brackets, an IPv6 address and nothing else.
        #expect(RedisURL("redis://[::ffff:127.0.0.1]:7000")?.address == .tcp(host: "::ffff:127.0.0.1", port: 7000))
        #expect(RedisURL("redis://[::1]")?.address == .tcp(host: "::1", port: 6379))
        for url in ["redis://[127.0.0.1:1]", "redis://[127.0.0.1]:7000", "redis://[localhost]", "redis://[]:7000",
                    "redis://[fe80::1%eth0]", "redis://[::1", "redis://[:::1]"] {
            #expect(RedisURL(url) == nil, "\(url)")
        }
    }

    @Test func sharedLoadsOfTwoProcessesCallOneLoader() async throws {
        let a = try Process(redis, prefix: "share:")
        let b = try Process(redis, prefix: "share:")
        defer { a.f.close(); b.f.close() }
        a.load("k")
        let job = await a.f.loader.nextJob()  // A holds the lease now
        b.load("k")
        #expect(await b.f.log.next().state.status == .loading)
        await waitUntil { b.cache.status().leasesWaited == 1 }
        a.f.submit(.succeed("from A"), job)
        #expect(await a.settled().value == "from A")
        #expect(await b.settled().value == "from A")
        #expect(b.f.loader.startedJobs == 0)
        await waitUntil { a.cache.status().published == 1 }
        #expect(b.cache.status().leasesWaited == 1 && b.cache.status().resultsReceived == 1)
    }

    @Test func aCancelledHolderHandsTheLeaseOver() async throws {
        let a = try Process(redis, prefix: "handover:")
        let b = try Process(redis, prefix: "handover:")
        defer { a.f.close(); b.f.close() }
        a.load("k")
        _ = await a.f.loader.nextJob()
        b.load("k")
        #expect(await b.f.log.next().state.status == .loading)
        await waitUntil { b.cache.status().leasesWaited == 1 }
        a.f.onLoop { $0.cancel() }  // the lease is released: B takes it at once
        let job = await b.f.loader.nextJob()
        b.f.submit(.succeed("from B"), job)
        #expect(await b.settled().value == "from B")
        #expect(b.cache.status().takeovers == 1)
    }

    /// The leases outlive the time limit: a lease left behind by a closed
    /// runtime would make the other process wait past it.
    @Test(.timeLimit(.minutes(1))) func aRuntimeClosedRightAfterItsResultOrMidLoadHandsOver() async throws {
        let a = try Process(redis, prefix: "closing:", leaseMs: 120_000)
        let b = try Process(redis, prefix: "closing:", leaseMs: 120_000)
        let c = try Process(redis, prefix: "closing:", leaseMs: 120_000)
        defer { b.f.close(); c.f.close() }
        // A's result is published, then A's runtime closes at once: B, waiting, gets it.
        a.load("k1")
        let job = await a.f.loader.nextJob()
        b.load("k1")
        await waitUntil { b.cache.status().leasesWaited == 1 }
        a.f.submit(.succeed("from A"), job)
        a.f.close()
        #expect(await b.settled().value == "from A")
        // B holds k2's lease when its runtime closes: C, waiting, takes over.
        b.load("k2")
        _ = await b.f.loader.nextJob()
        c.load("k2")
        await waitUntil { c.cache.status().leasesWaited == 1 }
        b.f.close()
        let taken = await c.f.loader.nextJob()
        c.f.submit(.succeed("from C"), taken)
        #expect(await c.settled().value == "from C")
    }

    /// The lease outlives the time limit: a waiting load that waited for it
    /// after Redis went away would fail.
    @Test(.timeLimit(.minutes(1))) func aWaitingLoadLoadsItselfWhenRedisGoesAway() async throws {
        let a = try Process(redis, prefix: "gone:", leaseMs: 120_000)
        let b = try Process(redis, prefix: "gone:", leaseMs: 120_000)
        defer { a.f.close(); b.f.close() }
        a.load("k")
        _ = await a.f.loader.nextJob()
        b.load("k")
        await waitUntil { b.cache.status().leasesWaited == 1 }
        redis.stop()
        let job = await b.f.loader.nextJob()
        b.f.submit(.succeed("from B"), job)
        #expect(await b.settled().value == "from B")
    }

    @Test func aHolderWhoseLeaseExpiredIsFenced() async throws {
        let a = try Process(redis, prefix: "fence:", leaseMs: 300)
        let b = try Process(redis, prefix: "fence:", leaseMs: 300)
        defer { a.f.close(); b.f.close() }
        a.load("k")
        let late = await a.f.loader.nextJob()
        b.load("k")
        // A's lease expires without a result: B takes the key over.
        let job = await b.f.loader.nextJob()
        b.f.submit(.succeed("from B"), job)
        #expect(await b.settled().value == "from B")
        // A finishes late: its value is shown to its own cell, not stored.
        a.f.submit(.succeed("from A"), late)
        #expect(await a.settled().value == "from A")
        await withCheckedContinuation { done in a.f.runtime.loop.execute { done.resume() } }
        await waitUntil { a.cache.status().fenced == 1 }
        #expect(text(try b.cache.get(Array("k".utf8))) == "from B")
    }

    /// The leases outlive the time limit: a reload that waited for a lease
    /// to expire instead of for the other process's result fails.
    @Test(.timeLimit(.minutes(1))) func invalidationReachesTheOtherProcess() async throws {
        let a = try Process(redis, prefix: "inval:", leaseMs: 120_000)
        let b = try Process(redis, prefix: "inval:", leaseMs: 120_000)
        defer { a.f.close(); b.f.close() }
        for p in [a, b] {
            p.f.loader.onStart = { id, runtime in
                runtime.submit(.succeed("v\(Int.random(in: 0..<1_000_000))"), job: id, of: Job<String, String>.self)
            }
        }
        a.load("user/1")
        let first = await a.settled().value
        b.load("user/1")
        #expect(await b.settled().value == first)  // from the cache
        try a.f.runtime.invalidate(a.cache, prefix: Array("user/".utf8))
        // B's cell shows its value stale while it reloads, then the new value.
        let stale = await b.f.log.next().state
        #expect(stale.isStale && stale.isRefreshing && stale.value == first)
        let reloaded = await b.settled().value
        #expect(reloaded != first)
        #expect(await a.settled().value == reloaded)
        // One of the two processes called its loader for the reload.
        #expect(a.f.loader.startedJobs + b.f.loader.startedJobs == 2)
        #expect(b.cache.status().invalidations == 1)
    }

    @Test func loadsCompleteWhileRedisIsDownAndTheCacheResumes() async throws {
        let p = try Process(redis, prefix: "down:")
        defer { p.f.close() }
        try p.cache.put(Array("k".utf8), Array("v".utf8))
        redis.stop()
        do {
            try p.cache.put(Array("k".utf8), Array("w".utf8))
            Issue.record("a put with Redis down succeeded")
        } catch {
            #expect(error.code == .redis)
        }
        p.f.loader.onStart = { id, runtime in
            runtime.submit(.succeed("loaded"), job: id, of: Job<String, String>.self)
        }
        p.load("other")
        #expect(await p.settled().value == "loaded")
        // A cache-only load cannot complete without Redis: an error of its domain.
        p.load("k", policy: .cacheOnly)
        let failed = await p.settled()
        #expect(failed.status == .error && failed.error?.domain == .redis)
        try redis.start()
        let deadline = Loadstate.Clock.monotonicMs() + 10_000
        while !p.cache.status().connected && Loadstate.Clock.monotonicMs() < deadline { usleep(10_000) }
        #expect(p.cache.status().connected)
        try p.cache.put(Array("k".utf8), Array("again".utf8))
        #expect(text(try p.cache.get(Array("k".utf8))) == "again")
    }

    @Test func theFrontTierServesHitsAndDropsWhatOtherProcessesChange() async throws {
        let p = try Process(redis, prefix: "front:") { $0.memoryMaxEntries = 100 }
        let (f, a) = (p.f, p.cache)
        let b = try Process(redis, prefix: "front:")
        defer { f.close(); b.f.close() }
        // A subscription that comes up drops the front tier: wait for it first.
        await waitUntil { a.status().subscribed }
        try a.put(Array("k".utf8), Array("one".utf8))
        #expect(text(try a.get(Array("k".utf8))) == "one")
        // The entry is in A's front tier; a cache-first load finds it
        // without a round trip (the loop answers at once).
        let front = await withCheckedContinuation { done in f.runtime.loop.execute { done.resume(returning: a.hasLocalEntry(Array("k".utf8))) } }
        #expect(front)
        #expect(try a.stats().entries == 1)
        // B's put is published: A's front entry goes, and A reads the new value.
        try b.cache.put(Array("k".utf8), Array("two".utf8))
        let deadline = Loadstate.Clock.monotonicMs() + 5_000
        while Loadstate.Clock.monotonicMs() < deadline {
            let dropped = await withCheckedContinuation { done in
                f.runtime.loop.execute { done.resume(returning: !a.hasLocalEntry(Array("k".utf8))) }
            }
            if dropped { break }
            usleep(2_000)
        }
        #expect(text(try a.get(Array("k".utf8))) == "two")
    }

    @Test func entriesForKeysPipelinesOneBatchAndFailsKeyByKeyWhileRedisIsDown() async throws {
        let p = try Process(redis, prefix: "batch:") { $0.memoryMaxEntries = 10 }
        defer { p.f.close() }
        let keys = (0..<1_000).map { Array("key:\($0)".utf8) }
        for key in keys.prefix(500) { try p.cache.put(key, key) }
        let found = try p.cache.entries(for: keys)
        #expect(found.count == keys.count)
        for (i, entry) in found.enumerated() {
            #expect((try? entry.get()?.value) == (i < 500 ? keys[i] : nil), "key \(i)")
        }
        let stats = try p.cache.stats()
        #expect(stats.hits == 500 && stats.misses == 500)
        #expect(try p.cache.entries(for: []).isEmpty)
        // Redis stops: a key the front tier holds (the last one read) still
        // answers, every other one fails alone.
        let held = [keys[499]], gone = [keys[0]]
        #expect(text(try p.cache.get(keys[499])) == "key:499")
        redis.stop()
        let answers = try p.cache.entries(for: held + gone)
        #expect(text(try answers[0].get()) == "key:499")
        #expect(throws: CacheError.self) { try answers[1].get() }
        // On the loop thread the whole call is refused.
        let refused = await withCheckedContinuation { done in
            p.f.runtime.loop.execute {
                do {
                    _ = try p.cache.entries(for: held)
                    done.resume(returning: false)
                } catch {
                    done.resume(returning: (error as? CacheError)?.code == .wrongState)
                }
            }
        }
        #expect(refused)
    }

    @Test func callsOnTheLoopThreadAreRefused() async throws {
        let p = try Process(redis, prefix: "loop:")
        defer { p.f.close() }
        let refused = await withCheckedContinuation { done in
            p.f.runtime.loop.execute {
                do {
                    _ = try p.cache.keys(prefix: [])
                    done.resume(returning: false)
                } catch {
                    done.resume(returning: (error as? CacheError)?.code == .wrongState)
                }
            }
        }
        #expect(refused)
        // An invalidation asked on the loop (the inspector's action) is sent without waiting.
        try p.cache.put(Array("k".utf8), Array("v".utf8))
        let invalidated = await withCheckedContinuation { done in
            p.f.runtime.loop.execute {
                done.resume(returning: (try? p.f.runtime.invalidate(p.cache, prefix: Array("k".utf8))) != nil)
            }
        }
        #expect(invalidated)
        await waitUntil { (try? p.cache.get(Array("k".utf8)))??.isStale == true }
    }
}

/// What Redis hands back is read without trusting it: entries of another
/// shape are misses, never traps; URLs that do not parse are refused.
@Suite struct RedisInputTests {
    @Test func clusterSlotsAreRedisClusters() {
        // The CRC16 of the Redis Cluster specification, and its hash tags.
        #expect(Array("123456789".utf8).withUnsafeBytes { RedisCluster.crc16($0) } == 0x31c3)
        #expect(RedisCluster.slot(of: Array("foo".utf8)) == 12_182)
        #expect(RedisCluster.slot(of: Array("{user1000}.following".utf8))
                == RedisCluster.slot(of: Array("{user1000}.followers".utf8)))
        #expect(RedisCluster.slot(of: Array("foo{}{bar}".utf8)) != RedisCluster.slot(of: Array("bar".utf8)))
        #expect(RedisCluster.slot(of: Array("foo{{bar}}zap".utf8)) == RedisCluster.slot(of: Array("{bar".utf8)))
        // A key's entry, lease and fencing counter share a slot.
        let names = RedisKeys(prefix: Array("app:".utf8))
        let key = Array("user/7".utf8)
        let slot = RedisCluster.slot(of: names.entry(key))
        #expect(RedisCluster.slot(of: names.lease(key)) == slot && RedisCluster.slot(of: names.fence(key)) == slot)
        #expect(RedisCluster.slot(of: names.keysIndex) == RedisCluster.slot(of: names.expiryIndex))
        // The table of slots by tag agrees with the rule applied to whole names, with or without a
        // hash tag in the prefix.
        for prefix in ["app:", "{tenant}:"] {
            let keys = RedisKeys(prefix: Array(prefix.utf8))
            let table = keys.slotsOfTags()
            for k in ["", "a", "user/7", "\u{ff}"] {
                let key = Array(k.utf8)
                #expect(Int(table[key.withUnsafeBytes { RedisKeys.tagNumber($0) }]) == RedisCluster.slot(of: keys.entry(key)))
            }
        }
        // Redirections.
        let moved = RedisCluster.Redirect("MOVED 3999 127.0.0.1:6381")
        #expect(moved?.ask == false && moved?.slot == 3_999 && moved?.node == "127.0.0.1:6381")
        #expect(RedisCluster.Redirect("ASK 1 [::1]:7000")?.ask == true)
        #expect(RedisCluster.Redirect("MOVED 16384 127.0.0.1:1") == nil)
        #expect(RedisCluster.Redirect("MOVED 1 127.0.0.1:0") == nil && RedisCluster.Redirect("ERR x") == nil)
    }

    @Test func clusterURLsNameTheirSeeds() {
        let url = RedisURL("redis+cluster://u:p%40ss@10.0.0.1:7000,node-b,[::1]:7002/0")
        #expect(url?.cluster == [.tcp(host: "10.0.0.1", port: 7000), .tcp(host: "node-b", port: 6379),
                                 .tcp(host: "::1", port: 7002)])
        #expect(url?.address == .tcp(host: "10.0.0.1", port: 7000) && url?.user == "u" && url?.password == "p@ss")
        #expect(RedisURL("redis://h:1")?.cluster == [])
        for bad in ["redis+cluster://h:1/2", "redis+cluster://", "redis+cluster://h:1,,h:2", "redis+cluster://h:0",
                    "redis+cluster://" + Array(repeating: "h:1", count: 65).joined(separator: ",")] {
            #expect(RedisURL(bad) == nil, "\(bad)")
        }
    }

    @Test func prefixesBecomeLexicographicRanges() {
        func range(_ p: [UInt8]) -> [[UInt8]] { let r = RedisKeys.lexRange(p); return [r.min, r.max] }
        #expect(range([]) == [Array("-".utf8), Array("+".utf8)])
        #expect(range(Array("ab".utf8)) == [Array("[ab".utf8), Array("(ac".utf8)])
        #expect(range([0x61, 0xff]) == [[UInt8(ascii: "["), 0x61, 0xff], Array("(b".utf8)])
        #expect(range([0xff, 0xff]) == [[UInt8(ascii: "["), 0xff, 0xff], Array("+".utf8)])
    }

    @Test func commandsAreEncodedInTheProtocolsForm() {
        func text(_ command: RedisCommand) -> String { String(decoding: command.bytes, as: UTF8.self) }
        #expect(text(RedisCommand([Array("SET".utf8), Array("k".utf8), []])) == "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n")
        #expect(text(RedisCommand([])) == "*0\r\n")
        let key = [UInt8](repeating: UInt8(ascii: "x"), count: 12_345)
        // The GET of an entry: prefix, hash tag, "v:", key, in one argument.
        let p = Array("p:".utf8)
        let name = RedisKeys(prefix: p).entry(key)
        #expect(name.count == 2 + 7 + 12_345 && name.starts(with: Array("p:{".utf8)) && name[6...8] == ArraySlice("}v:".utf8))
        #expect(RedisCommand(getEntry: p, key).bytes == RedisCommand([Array("GET".utf8), name]).bytes)
        #expect(RedisCommand(getEntry: [], []).bytes == RedisCommand([Array("GET".utf8), RedisKeys(prefix: []).entry([])]).bytes)
        // The tag is the same for a key's entry, lease and fencing counter,
        // and the one other implementations compute (FNV-1a of "a" folded).
        let a = RedisKeys(prefix: p)
        #expect(a.entry(Array("a".utf8)) == Array("p:{90a}v:a".utf8))
        #expect(a.lease(Array("a".utf8)) == Array("p:{90a}l:a".utf8) && a.fence(Array("a".utf8)) == Array("p:{90a}f".utf8))
        // A group: the same GETs back to back, each command found again by its index.
        var group = RedisCommandGroup(reservingCommands: 3, bytes: 0)
        let keys: [[UInt8]] = [Array("a".utf8), [], key]
        for k in keys { k.withUnsafeBytes { group.appendGet(p, $0) } }
        #expect(group.count == 3)
        #expect(group.bytes == keys.flatMap { RedisCommand(getEntry: p, $0).bytes })
        for (i, k) in keys.enumerated() {
            #expect(group.withCommand(i) { Array($0) } == RedisCommand(getEntry: p, k).bytes)
        }
        let one = RedisCommandGroup(RedisCommand([Array("PING".utf8)]))
        #expect(one.count == 1 && one.withCommand(0) { Array($0) } == RedisCommand([Array("PING".utf8)]).bytes)
        #expect(RedisCommandGroup(reservingCommands: 4, bytes: 64).count == 0)
    }

    @Test func entriesOfAnotherShapeDoNotDecode() {
        let good = RedisEntry.encode(Array("value".utf8), meta: [1, 2, 3], storedAtMs: 42, expiresAtMs: 99, token: 7)
        let entry = RedisEntry.decode(good)
        #expect(entry?.value == Array("value".utf8) && entry?.meta == [1, 2, 3])
        #expect(entry?.storedAtMs == 42 && entry?.expiresAtMs == 99 && entry?.isStale == false)
        // Every truncation, a metadata length past the end, another format or stale byte.
        for n in 0..<RedisEntry.headerSize + 3 { #expect(RedisEntry.decode(Array(good.prefix(n))) == nil) }
        var long = good
        long.replaceSubrange(26..<30, with: [0xFF, 0xFF, 0xFF, 0xFF])
        #expect(RedisEntry.decode(long) == nil)
        var format = good
        format[0] = 2
        #expect(RedisEntry.decode(format) == nil)
        var stale = good
        stale[1] = 9
        #expect(RedisEntry.decode(stale) == nil)
        // Random bytes: nil or an entry, never a trap.
        var rng = SplitMix(seed: 21)
        for _ in 0..<20_000 {
            let count = Int(rng.next() % 64)
            var bytes = (0..<count).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            if count > 1, rng.next() % 2 == 0 { bytes[0] = 1; bytes[1] = 0 }
            _ = RedisEntry.decode(bytes)
        }
    }

    @Test func urlsOfEveryShapeParseOrAreRefused() {
        var rng = SplitMix(seed: 22)
        let pieces = ["redis://", "unix://", "/", ":", "@", "[", "]", "?db=", "%", "%4", "%41", "65536", "0", "6379",
                      "host", "::1", "a b", "\u{0}", "db=x", "&"]
        for _ in 0..<20_000 {
            let n = Int(rng.next() % 8)
            let text = (0..<n).map { _ in pieces[Int(rng.next() % UInt64(pieces.count))] }.joined()
            _ = RedisURL(text)
        }
        #expect(RedisURL(String(repeating: "a", count: 5_000)) == nil)
    }
}

/// A connection's groups of commands (a batch's GETs): each command is
/// answered once, by its index; what does not fit fails alone; a dropped
/// connection fails what it had not answered.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct RedisConnectionGroupTests {
    let redis: TestRedis
    let f: CoreFixture

    init() throws {
        redis = try TestRedis()
        f = try CoreFixture()
    }

    /// What one command of a group got: its reply as text, or the failure's code.
    enum Answer: Equatable {
        case text(String)
        case null
        case failed(RedisFailure.Code)
    }

    /// Sends `group` on a new connection (started in the same turn of the
    /// loop, so the group waits for it) with at most `pendingMax` commands
    /// waiting; the answers by index, once every command has one.
    func answers(_ group: RedisCommandGroup, pendingMax: Int, commandTimeoutMs: UInt64 = 2_000,
                 before: [RedisCommand] = []) throws -> [Int: [Answer]] {
        let all = LoopReply<[Int: [Answer]]>()
        var got: [Int: [Answer]] = [:]
        var count = 0
        let expected = group.count
        nonisolated(unsafe) var connection: RedisConnection?
        guard let url = RedisURL(redis.url) else { throw ResultCodeError.failed("url") }
        let settings = RedisConnection.Settings(url: url, commandTimeoutMs: commandTimeoutMs, connectTimeoutMs: 2_000,
                                                reconnectMaxMs: 200, pendingMax: pendingMax)
        f.runtime.loop.execute { [f] in
            let c = RedisConnection(loop: f.runtime.loop, settings: settings)
            connection = c
            c.start()
            for command in before { c.send(command) { _ in } }
            c.send(group) { i, result in
                let answer: Answer
                switch result {
                case .failure(let failure): answer = .failed(failure.code)
                case .success(let reply):
                    switch RedisReply(reply) {
                    case .string(let bytes): answer = .text(String(decoding: bytes, as: UTF8.self))
                    case .status(let text): answer = .text(text)
                    case .integer(let n): answer = .text(String(n))
                    case .null: answer = .null
                    default: answer = .failed(.reply)
                    }
                }
                got[i, default: []].append(answer)
                count += 1
                if count == expected { all.put(got) }
            }
        }
        defer { f.runtime.loop.execute { connection?.close() } }
        guard let result = all.take(timeoutMs: 10_000) else { throw ResultCodeError.failed("no answers") }
        return result
    }

    private func command(_ words: String...) -> RedisCommand { RedisCommand(words.map { Array($0.utf8) }) }

    @Test func eachCommandOfAGroupIsAnsweredOnceByItsIndex() throws {
        var group = RedisCommandGroup(reservingCommands: 4, bytes: 0)
        group.append(command("SET", "g:a", "one"))
        group.append(command("GET", "g:a"))
        "g:missing".utf8.withContiguousStorageIfAvailable { group.appendGet([], UnsafeRawBufferPointer($0)) }
        group.append(command("INCR", "g:n"))
        let got = try answers(group, pendingMax: 100)
        #expect(got == [0: [.text("OK")], 1: [.text("one")], 2: [.null], 3: [.text("1")]])
    }

    @Test func commandsOverTheBoundFailAloneAndTheOthersAreAnswered() throws {
        var group = RedisCommandGroup(reservingCommands: 6, bytes: 0)
        for _ in 0..<6 { group.append(command("PING")) }
        // Two commands wait already: four of the group fit, two do not.
        let got = try answers(group, pendingMax: 6, before: [command("PING"), command("PING")])
        #expect(got == [0: [.text("PONG")], 1: [.text("PONG")], 2: [.text("PONG")], 3: [.text("PONG")],
                        4: [.failed(.queue)], 5: [.failed(.queue)]])
        // No room at all: every command fails.
        let none = try answers(group, pendingMax: 2, before: [command("PING"), command("PING")])
        #expect(none == Dictionary(uniqueKeysWithValues: (0..<6).map { ($0, [Answer.failed(.queue)]) }))
    }

    @Test func aDroppedConnectionFailsWhatItHadNotAnsweredOnce() throws {
        // BLPOP holds the connection: its reply and those after it do not
        // come within the command timeout, and the connection is dropped.
        var group = RedisCommandGroup(reservingCommands: 3, bytes: 0)
        group.append(command("PING"))
        group.append(command("BLPOP", "g:never", "0"))
        group.append(command("PING"))
        let got = try answers(group, pendingMax: 100, commandTimeoutMs: 300)
        #expect(got == [0: [.text("PONG")], 1: [.failed(.timedOut)], 2: [.failed(.timedOut)]])
    }
}
