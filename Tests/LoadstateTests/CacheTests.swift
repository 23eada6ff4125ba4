import CLibUV
import Testing
@_spi(LoadstateC) @testable import Loadstate
#if canImport(Glibc)
import Glibc
#endif

// MARK: - Helpers

private func b(_ text: String) -> [UInt8] {
    Array(text.utf8)
}

/// A wall clock the test moves by hand.
final class ManualClock: @unchecked Sendable {
    private let ms = Locked<UInt64>(1_700_000_000_000)

    var now: UInt64 { ms.withLock { $0 } }

    func advance(_ delta: UInt64) {
        ms.withLock { $0 += delta }
    }

    var closure: @Sendable () -> UInt64 {
        { [self] in now }
    }
}

/// A directory of its own under /tmp, removed with what it holds.
final class TemporaryDirectory {
    let path: String

    init() {
        var template = Array("/tmp/loadstate-cache-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { fatalError("mkdtemp failed") }
        path = String(cString: made)
    }

    func file(_ name: String) -> String {
        path + "/" + name
    }

    deinit {
        Self.remove(path)
    }

    private static func remove(_ path: String) {
        if let dir = opendir(path) {
            while let entry = readdir(dir) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
                if name == "." || name == ".." { continue }
                let child = path + "/" + name
                var st = stat()
                if lstat(child, &st) == 0 && (st.st_mode & S_IFMT) == S_IFDIR {
                    remove(child)
                } else {
                    unlink(child)
                }
            }
            closedir(dir)
        }
        rmdir(path)
    }
}

private func fileMode(_ path: String) -> mode_t? {
    var st = stat()
    return stat(path, &st) == 0 ? st.st_mode & 0o777 : nil
}

private func writeFile(_ path: String, _ bytes: [UInt8]) {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    precondition(fd >= 0)
    bytes.withUnsafeBytes { _ = write(fd, $0.baseAddress, $0.count) }
    close(fd)
}

private func readFile(_ path: String) -> [UInt8] {
    let fd = open(path, O_RDONLY)
    guard fd >= 0 else { return [] }
    defer { close(fd) }
    var result: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
        let n = read(fd, &buffer, buffer.count)
        if n <= 0 { break }
        result += buffer[0..<n]
    }
    return result
}

private let anyID = HandleTable().makeID(.cache)

private func memoryCache(maxEntries: Int = 10_000, maxBytes: Int = 1 << 20, ttlMs: UInt64 = 0,
                         clock: ManualClock = ManualClock()) -> MemoryCache {
    MemoryCache(id: anyID, name: "test", options: .init(maxEntries: maxEntries, maxBytes: maxBytes, ttlMs: ttlMs),
                now: clock.closure)
}

private func persistentCache(_ path: String, maxBytes: Int = 1 << 20, ttlMs: UInt64 = 0, replaceDamaged: Bool = false,
                             clock: ManualClock = ManualClock()) throws(CacheError) -> PersistentCache {
    try PersistentCache(id: anyID, path: path,
                        options: .init(maxBytes: maxBytes, ttlMs: ttlMs, replaceDamaged: replaceDamaged),
                        now: clock.closure)
}

/// The behaviours both stores share, run against each of them.
enum CacheKind: CaseIterable, CustomStringConvertible {
    case memory, persistent

    var description: String { self == .memory ? "memory" : "persistent" }

    func make(_ dir: TemporaryDirectory, maxEntries: Int = 10_000, maxBytes: Int = 1 << 20, ttlMs: UInt64 = 0,
              clock: ManualClock = ManualClock()) throws -> any CacheStore {
        switch self {
        case .memory:
            return memoryCache(maxEntries: maxEntries, maxBytes: maxBytes, ttlMs: ttlMs, clock: clock)
        case .persistent:
            return try persistentCache(dir.file("cache.db"), maxBytes: maxBytes, ttlMs: ttlMs, clock: clock)
        }
    }
}

// MARK: - Both stores

@Suite(.timeLimit(.minutes(3)))
struct CacheStoreTests {
    @Test(arguments: CacheKind.allCases)
    func getReturnsTheValueItsStoredAtTimeAndNotStale(_ store: CacheKind) throws {
        let dir = TemporaryDirectory()
        let clock = ManualClock()
        let cache = try store.make(dir, clock: clock)
        defer { cache.close() }
        let storedAt = clock.now
        try cache.put(b("k"), b("value"))
        clock.advance(250)
        let entry = try cache.get(b("k"))
        #expect(entry == CacheEntry(value: b("value"), storedAtMs: storedAt, expiresAtMs: 0, isStale: false))
        #expect(try cache.get(b("other")) == nil)
    }

    @Test(arguments: CacheKind.allCases)
    func entriesForKeysLooksEachUpLikeGet(_ store: CacheKind) throws {
        let dir = TemporaryDirectory()
        let clock = ManualClock()
        let cache = try store.make(dir, maxEntries: 3, clock: clock)
        defer { cache.close() }
        try cache.put(b("old"), b("gone"), ttlMs: 100)
        try cache.put(b("a"), b("alpha"))
        clock.advance(100)
        try cache.put(b("b"), b("beta"))
        let found = try cache.entries(for: [b("a"), b("missing"), b("old"), b("b"), b("a")])
        #expect(found.map { try? $0.get()?.value } == [b("alpha"), nil, nil, b("beta"), b("alpha")])
        #expect(found.allSatisfy { if case .success = $0 { true } else { false } })
        let stats = try cache.stats()
        #expect(stats.hits == 3 && stats.misses == 2 && stats.expirations == 1)
        #expect(try cache.entries(for: []).isEmpty)
        // A hit is a use: "b" was put after "a", but "a" was read last.
        if store == .memory {
            try cache.put(b("c"), b("gamma"))
            try cache.put(b("d"), b("delta"))
            #expect(try cache.get(b("b")) == nil)
            #expect(try cache.get(b("a")) != nil)
        }
        let tooMany = [[UInt8]](repeating: b("a"), count: cacheBatchMax + 1)
        #expect(throws: CacheError(.tooBig, "\(cache.name): \(cacheBatchMax + 1) keys in one batch (at most \(cacheBatchMax))")) {
            try cache.entries(for: tooMany)
        }
        #expect(try cache.entries(for: [[UInt8]](repeating: b("a"), count: cacheBatchMax)).count == cacheBatchMax)
    }

    @Test(arguments: CacheKind.allCases)
    func emptyKeysAndValuesAreEntriesLikeAnyOther(_ store: CacheKind) throws {
        let dir = TemporaryDirectory()
        let cache = try store.make(dir)
        defer { cache.close() }
        try cache.put([], b("for the empty key"))
        try cache.put(b("empty"), [])
        #expect(try cache.get([])?.value == b("for the empty key"))
        #expect(try cache.get(b("empty"))?.value == [])
        #expect(try cache.stats().bytes == UInt64(17 + 5))
    }

    @Test(arguments: CacheKind.allCases)
    func keysListsLiveEntriesUnderAPrefixWithoutUsingThem(_ store: CacheKind) throws {
        let dir = TemporaryDirectory()
        let clock = ManualClock()
        let cache = try store.make(dir, clock: clock)
        defer { cache.close() }
        try cache.put(b("b/1"), b("v"), ttlMs: 100)
        try cache.put(b("a/1"), b("v"))
        try cache.put(b("b/2"), b("v"))
        try cache.put([0xFF, 0x00], b("v"))
        let all = try cache.keys(prefix: [])
        #expect(all == (store == .memory ? [[0xFF, 0x00], b("b/2"), b("a/1"), b("b/1")]
                                         : [b("a/1"), b("b/1"), b("b/2"), [0xFF, 0x00]]))
        #expect(Set(try cache.keys(prefix: b("b/"))) == [b("b/1"), b("b/2")])
        #expect(try cache.keys(prefix: [0xFF]) == [[0xFF, 0x00]])
        #expect(try cache.keys(prefix: b("c")) == [])
        clock.advance(100)
        #expect(Set(try cache.keys(prefix: b("b/"))) == [b("b/2")])
        // Listing is no use: the counters did not move and the expired entry is still held.
        let stats = try cache.stats()
        #expect(stats.hits == 0 && stats.misses == 0 && stats.entries == 4)
    }

    @Test(arguments: CacheKind.allCases)
    func countCountsWhatKeysListsUpToALimit(_ store: CacheKind) throws {
        let dir = TemporaryDirectory()
        let clock = ManualClock()
        let cache = try store.make(dir, clock: clock)
        defer { cache.close() }
        try cache.put(b("b/1"), b("v"), ttlMs: 100)
        for key in [b("a/1"), b("b/2"), b("b/3"), []] { try cache.put(key, b("v")) }
        #expect(try cache.count(prefix: [], limit: 0) == 5)
        #expect(try cache.count(prefix: b("b/"), limit: 0) == 3)
        #expect(try cache.count(prefix: b("b/"), limit: 2) == 2)
        #expect(try cache.count(prefix: [], limit: 1) == 1)
        #expect(try cache.count(prefix: b("c"), limit: 0) == 0)
        clock.advance(100)
        #expect(try cache.count(prefix: [], limit: 0) == UInt64(try cache.keys(prefix: []).count))
        #expect(try cache.count(prefix: b("b/"), limit: 0) == 2)
        // Counting is no use: the counters did not move and the expired entry is still held.
        let stats = try cache.stats()
        #expect(stats.hits == 0 && stats.misses == 0 && stats.entries == 5)
    }

    @Test(arguments: CacheKind.allCases)
    func aPutReplacesTheEntryAndItsSize(_ store: CacheKind) throws {
        let dir = TemporaryDirectory()
        let cache = try store.make(dir)
        defer { cache.close() }
        try cache.put(b("k"), b("first value"))
        try cache.put(b("k"), b("second"))
        #expect(try cache.get(b("k"))?.value == b("second"))
        let stats = try cache.stats()
        #expect(stats.entries == 1)
        #expect(stats.bytes == 1 + 6)
    }

    @Test(arguments: CacheKind.allCases)
    func leastRecentlyUsedEntriesAreEvictedFirst(_ store: CacheKind) throws {
        let dir = TemporaryDirectory()
        // Each entry takes 1 + 9 bytes: three fit.
        let cache = try store.make(dir, maxBytes: 30)
        defer { cache.close() }
        try cache.put(b("a"), b("123456789"))
        try cache.put(b("b"), b("123456789"))
        try cache.put(b("c"), b("123456789"))
        _ = try cache.get(b("a"))  // a is now the most recent; b the least
        try cache.put(b("d"), b("123456789"))
        #expect(try cache.get(b("b")) == nil)
        #expect(try cache.get(b("a")) != nil)
        #expect(try cache.get(b("c")) != nil)
        #expect(try cache.get(b("d")) != nil)
        // Now the order from least recent is a, c, d: two puts evict a and c.
        try cache.put(b("e"), b("123456789"))
        try cache.put(b("f"), b("123456789"))
        #expect(try cache.get(b("a")) == nil)
        #expect(try cache.get(b("c")) == nil)
        #expect(try cache.get(b("d")) != nil)
        #expect(try cache.stats().evictions == 3)
    }

    @Test(arguments: CacheKind.allCases)
    func theByteBoundHoldsAndCountsKeysAndValues(_ store: CacheKind) throws {
        let dir = TemporaryDirectory()
        let cache = try store.make(dir, maxBytes: 100)
        defer { cache.close() }
        try cache.put(b("k1"), [UInt8](repeating: 1, count: 48))  // 50 bytes
        try cache.put(b("k2"), [UInt8](repeating: 2, count: 48))  // 100 bytes: still within
        var stats = try cache.stats()
        #expect(stats.bytes == 100 && stats.entries == 2 && stats.evictions == 0)
        try cache.put(b("k3"), [UInt8](repeating: 3, count: 8))  // 110: k1 goes
        stats = try cache.stats()
        #expect(stats.bytes == 60 && stats.entries == 2 && stats.evictions == 1)
        #expect(try cache.get(b("k1")) == nil)
    }

    @Test(arguments: CacheKind.allCases)
    func anEntryLargerThanTheBoundIsNotKeptAndDropsTheOldOne(_ store: CacheKind) throws {
        let dir = TemporaryDirectory()
        let cache = try store.make(dir, maxBytes: 100)
        defer { cache.close() }
        try cache.put(b("small"), b("v"))
        try cache.put(b("big"), b("old"))
        try cache.put(b("big"), [UInt8](repeating: 0, count: 100))
        #expect(try cache.get(b("big")) == nil)
        #expect(try cache.get(b("small"))?.value == b("v"))
        let stats = try cache.stats()
        #expect(stats.entries == 1 && stats.evictions == 1)
    }

    @Test(arguments: CacheKind.allCases)
    func entriesExpireAfterTheirTimeToLive(_ store: CacheKind) throws {
        let dir = TemporaryDirectory()
        let clock = ManualClock()
        let cache = try store.make(dir, ttlMs: 1000, clock: clock)
        defer { cache.close() }
        let t0 = clock.now
        try cache.put(b("default"), b("1"))
        try cache.put(b("forever"), b("2"), ttlMs: 0)
        try cache.put(b("longer"), b("3"), ttlMs: 5000)
        #expect(try cache.get(b("default"))?.expiresAtMs == t0 + 1000)
        clock.advance(999)
        #expect(try cache.get(b("default")) != nil)
        clock.advance(1)
        #expect(try cache.get(b("default")) == nil)
        #expect(try cache.get(b("longer")) != nil)
        clock.advance(4000)
        #expect(try cache.get(b("longer")) == nil)
        clock.advance(1_000_000_000)
        #expect(try cache.get(b("forever"))?.value == b("2"))
        let stats = try cache.stats()
        #expect(stats.expirations == 2)
        #expect(stats.entries == 1)
    }

    @Test(arguments: CacheKind.allCases)
    func statsCountHitsMissesAndWhatIsHeld(_ store: CacheKind) throws {
        let dir = TemporaryDirectory()
        let cache = try store.make(dir, maxEntries: 2)
        defer { cache.close() }
        try cache.put(b("a"), b("xx"))
        try cache.put(b("bb"), b("yyy"))
        _ = try cache.get(b("a"))
        _ = try cache.get(b("a"))
        _ = try cache.get(b("nope"))
        var stats = try cache.stats()
        #expect(stats.hits == 2 && stats.misses == 1)
        #expect(stats.entries == 2 && stats.bytes == 3 + 5)
        #expect(try cache.remove(b("a")))
        #expect(try !cache.remove(b("a")))
        try cache.clear()
        stats = try cache.stats()
        #expect(stats.entries == 0 && stats.bytes == 0)
        #expect(stats.hits == 2 && stats.misses == 1)
        #expect(try cache.get(b("bb")) == nil)
    }

    @Test(arguments: CacheKind.allCases)
    func markStaleFlagsAPrefixAndAPutClearsTheFlag(_ store: CacheKind) throws {
        let dir = TemporaryDirectory()
        let cache = try store.make(dir)
        defer { cache.close() }
        for key in ["user/1", "user/2", "users", "post/1", "use"] {
            try cache.put(b(key), b("v"))
        }
        #expect(try cache.markStale(prefix: b("user/")) == 2)
        #expect(try cache.get(b("user/1"))?.isStale == true)
        #expect(try cache.get(b("user/2"))?.isStale == true)
        #expect(try cache.get(b("users"))?.isStale == false)
        #expect(try cache.get(b("use"))?.isStale == false)
        try cache.put(b("user/1"), b("new"))
        #expect(try cache.get(b("user/1"))?.isStale == false)
        #expect(try cache.removeAll(prefix: b("user")) == 3)
        #expect(try cache.get(b("user/2")) == nil)
        #expect(try cache.get(b("post/1")) != nil)
        #expect(try cache.markStale(prefix: []) == 2)
        #expect(try cache.get(b("use"))?.isStale == true)
    }

    @Test(arguments: CacheKind.allCases)
    func prefixesEndingInFFAreMatchedExactly(_ store: CacheKind) throws {
        let dir = TemporaryDirectory()
        let cache = try store.make(dir)
        defer { cache.close() }
        try cache.put([0x01, 0xFF], b("a"))
        try cache.put([0x01, 0xFF, 0x00], b("b"))
        try cache.put([0x01, 0xFF, 0xFF, 0x07], b("c"))
        try cache.put([0x02], b("d"))
        try cache.put([0xFF, 0xFF], b("e"))
        try cache.put([0xFF], b("f"))
        #expect(try cache.removeAll(prefix: [0x01, 0xFF]) == 3)
        #expect(try cache.markStale(prefix: [0xFF, 0xFF]) == 1)
        #expect(try cache.get([0xFF])?.isStale == false)
        #expect(try cache.removeAll(prefix: [0xFF]) == 2)
        #expect(try cache.stats().entries == 1)
    }

    /// 100,000 inserts into each store (20,000 into the persistent one under
    /// a sanitizer, which makes SQLite's work many times slower); the
    /// persistent store's bounds are checked every 100 inserts.
    @Test(.timeLimit(.minutes(3)),
          arguments: [(CacheKind.memory, 100_000),
                      (CacheKind.persistent, getenv("LOADSTATE_SANITIZED") == nil ? 100_000 : 20_000)])
    func boundsHoldThroughManyRandomInserts(_ store: CacheKind, _ inserts: Int) throws {
        let dir = TemporaryDirectory()
        let maxEntries = 500, maxBytes = 128 << 10
        let cache = try store.make(dir, maxEntries: maxEntries, maxBytes: maxBytes)
        defer { cache.close() }
        var rng = SystemRandomNumberGenerator()
        var latest: [Int: [UInt8]] = [:]
        var broken = 0
        for i in 0..<inserts {
            let k = Int.random(in: 0..<2000, using: &rng)
            let size = Int.random(in: 0...(i % 100 == 0 ? 4096 : 600), using: &rng)
            let value = [UInt8](repeating: UInt8(truncatingIfNeeded: i), count: size)
            try cache.put(b("key-\(k)"), value)
            latest[k] = value
            if store == .persistent && i % 100 != 99 { continue }
            let stats = try cache.stats()
            let entryBound = store == .memory ? UInt64(maxEntries) : .max
            if stats.bytes > UInt64(maxBytes) || stats.entries > entryBound { broken += 1 }
        }
        #expect(broken == 0)
        let stats = try cache.stats()
        #expect(stats.evictions > 0)
        // Whatever is still held is the last value put under its key.
        var held = 0, wrong = 0, bytes = 0
        for (k, value) in latest {
            guard let entry = try cache.get(b("key-\(k)")) else { continue }
            held += 1
            bytes += b("key-\(k)").count + entry.value.count
            if entry.value != value { wrong += 1 }
        }
        #expect(wrong == 0)
        #expect(UInt64(held) == stats.entries)
        #expect(UInt64(bytes) == stats.bytes)
        #expect(bytes > maxBytes / 2)
    }
}

// MARK: - Memory cache

@Suite(.timeLimit(.minutes(1)))
struct MemoryCacheTests {
    @Test func getsAndPutsKeepRecencyOrder() {
        let cache = memoryCache()
        for key in ["a", "b", "c"] { cache.put(b(key), b("v")) }
        #expect(cache.keys(prefix: []) == [b("c"), b("b"), b("a")])
        _ = cache.get(b("a"))
        #expect(cache.keys(prefix: []) == [b("a"), b("c"), b("b")])
        cache.put(b("b"), b("w"))
        #expect(cache.keys(prefix: []) == [b("b"), b("a"), b("c")])
        cache.remove(b("a"))
        #expect(cache.keys(prefix: []) == [b("b"), b("c")])
        _ = cache.get(b("missing"))
        #expect(cache.keys(prefix: []) == [b("b"), b("c")])
    }

    @Test func theEntryCountBoundEvictsTheLeastRecent() {
        let cache = memoryCache(maxEntries: 3)
        for i in 0..<5 { cache.put(b("k\(i)"), b("v")) }
        let stats = cache.stats()
        #expect(stats.entries == 3 && stats.evictions == 2)
        #expect(cache.keys(prefix: []) == [b("k4"), b("k3"), b("k2")])
    }

    @Test func freedSlotsAreReused() {
        let cache = memoryCache(maxEntries: 2)
        for i in 0..<1000 { cache.put(b("k\(i)"), b("v")) }
        #expect(cache.keys(prefix: []) == [b("k999"), b("k998")])
        #expect(cache.stats().evictions == 998)
    }

    @Test func randomOperationsMatchASimpleModel() {
        // The model: keys from most to least recent, and their values.
        var order: [Int] = []
        var values: [Int: [UInt8]] = [:]
        let cache = memoryCache(maxEntries: 40)
        var rng = SystemRandomNumberGenerator()
        var mismatches = 0
        for i in 0..<30_000 {
            let k = Int.random(in: 0..<120, using: &rng)
            switch Int.random(in: 0..<10, using: &rng) {
            case 0..<4:
                let value = [UInt8](repeating: UInt8(truncatingIfNeeded: i), count: i % 7)
                cache.put(b("k\(k)"), value)
                order.removeAll { $0 == k }
                order.insert(k, at: 0)
                values[k] = value
                if order.count > 40 { values[order.removeLast()] = nil }
            case 4..<9:
                let got = cache.get(b("k\(k)"))?.value
                if got != values[k] { mismatches += 1 }
                if got != nil {
                    order.removeAll { $0 == k }
                    order.insert(k, at: 0)
                }
            default:
                if cache.remove(b("k\(k)")) != (values[k] != nil) { mismatches += 1 }
                order.removeAll { $0 == k }
                values[k] = nil
            }
            if i % 100 == 0 && cache.keys(prefix: []) != order.map({ b("k\($0)") }) { mismatches += 1 }
        }
        #expect(mismatches == 0)
        #expect(cache.keys(prefix: []) == order.map { b("k\($0)") })
    }

    @Test func theNameIsKept() {
        let cache = MemoryCache(id: anyID, name: "avatars")
        #expect(cache.name == "avatars")
    }

    @Test func aClosedCacheHoldsNothing() {
        let cache = memoryCache()
        cache.put(b("k"), b("v"))
        cache.close()
        #expect(cache.get(b("k")) == nil)
        cache.put(b("k"), b("v"))
        #expect(cache.get(b("k")) == nil)
        #expect(cache.stats().entries == 0)
    }

    @Test func manyThreadsShareOneCache() async {
        let cache = memoryCache(maxEntries: 100, maxBytes: 4096)
        await withTaskGroup(of: Void.self) { group in
            for t in 0..<4 {
                group.addTask {
                    for i in 0..<20_000 {
                        let key = b("k\((i * 7 + t) % 300)")
                        if i % 3 == 0 {
                            cache.put(key, [UInt8](repeating: UInt8(t), count: i % 64))
                        } else {
                            _ = cache.get(key)
                        }
                    }
                }
            }
        }
        let stats = cache.stats()
        #expect(stats.entries <= 100 && stats.bytes <= 4096)
        #expect(stats.hits + stats.misses == 4 * 13_333)
        #expect(UInt64(cache.keys(prefix: []).count) == stats.entries)
    }

    @Test func theRuntimeClosesItsCaches() throws {
        let runtime = try Runtime()
        let cache = MemoryCache(id: runtime.table.makeID(.cache), name: "shared")
        runtime.table.insert(cache)
        cache.put(b("k"), b("v"))
        #expect(runtime.table.lookup(cache.id, as: MemoryCache.self) === cache)
        #expect(runtime.close() == .ok)
        #expect(cache.get(b("k")) == nil)
    }
}

// MARK: - Persistent cache

@Suite(.timeLimit(.minutes(1)))
struct PersistentCacheTests {
    @Test func entriesAreServedAfterARestart() throws {
        let dir = TemporaryDirectory()
        let path = dir.file("cache.db")
        let clock = ManualClock()
        let storedAt = clock.now
        var cache = try persistentCache(path, clock: clock)
        try cache.put(b("a"), b("alpha"))
        try cache.put(b("b"), b("beta"), ttlMs: 60_000)
        try cache.put(b("c"), [UInt8](repeating: 7, count: 300_000))
        try cache.markStale(prefix: b("b"))
        cache.close()
        #expect(throws: CacheError.self) { try cache.get(b("a")) }

        clock.advance(10)
        cache = try persistentCache(path, clock: clock)
        defer { cache.close() }
        #expect(try cache.get(b("a")) == CacheEntry(value: b("alpha"), storedAtMs: storedAt))
        #expect(try cache.get(b("b")) == CacheEntry(value: b("beta"), storedAtMs: storedAt,
                                                     expiresAtMs: storedAt + 60_000, isStale: true))
        #expect(try cache.get(b("c"))?.value.count == 300_000)
        let stats = try cache.stats()
        #expect(stats.entries == 3 && stats.bytes == 6 + 5 + 300_001)
        #expect(stats.hits == 3 && stats.misses == 0)
    }

    @Test func recencyRecordedByGetsSurvivesARestart() throws {
        let dir = TemporaryDirectory()
        let path = dir.file("cache.db")
        var cache = try persistentCache(path, maxBytes: 30)
        try cache.put(b("a"), b("123456789"))
        try cache.put(b("b"), b("123456789"))
        try cache.put(b("c"), b("123456789"))
        _ = try cache.get(b("a"))
        cache.close()
        cache = try persistentCache(path, maxBytes: 30)
        defer { cache.close() }
        try cache.put(b("d"), b("123456789"))
        #expect(try cache.get(b("b")) == nil)
        #expect(try cache.get(b("a")) != nil)
    }

    @Test func getsWriteTheirRecencyOnlyInBatches() throws {
        let dir = TemporaryDirectory()
        let path = dir.file("cache.db")
        let cache = try PersistentCache(id: anyID, path: path, options: .init(pendingAccessLimit: 100))
        defer { cache.close() }
        for i in 0..<250 { try cache.put(b("k\(i)"), b("v")) }
        let db = try SQLiteDatabase(path: path)
        defer { db.close() }
        let maxAccess = try db.scalar("SELECT max(last_access) FROM entries")
        for i in 0..<99 { #expect(try cache.get(b("k\(i)")) != nil) }
        // 99 distinct keys read: nothing written yet.
        #expect(try db.scalar("SELECT count(*) FROM entries WHERE last_access > \(maxAccess)") == 0)
        #expect(try cache.get(b("k99")) != nil)
        #expect(try db.scalar("SELECT count(*) FROM entries WHERE last_access > \(maxAccess)") == 100)
        for i in 100..<150 { #expect(try cache.get(b("k\(i)")) != nil) }
        cache.close()
        #expect(try db.scalar("SELECT count(*) FROM entries WHERE last_access > \(maxAccess)") == 150)
    }

    @Test func anEvictionWritesTheRecencyOfTheEntriesItPasses() throws {
        let dir = TemporaryDirectory()
        let path = dir.file("cache.db")
        // Ten entries of 10 bytes fit.
        let cache = try persistentCache(path, maxBytes: 100)
        defer { cache.close() }
        for i in 0..<10 { try cache.put(b("k\(i)"), b("12345678")) }
        for i in [0, 1, 2, 5] { _ = try cache.get(b("k\(i)")) }
        try cache.put(b("ka"), b("12345678"))
        // k0, k1 and k2 were read since: k3 is the least recent.
        #expect(try cache.get(b("k3")) == nil)
        let db = try SQLiteDatabase(path: path)
        defer { db.close() }
        // Passing k0..k2 wrote their accesses; k5's is still in memory.
        #expect(try db.scalar("SELECT count(*) FROM entries WHERE last_access > 10") == 4)
        for i in 0..<3 { try cache.put(b("n\(i)"), b("12345678")) }
        #expect(try cache.get(b("k4")) == nil)
        #expect(try cache.get(b("k6")) == nil)
        #expect(try cache.get(b("k7")) == nil)
        #expect(try cache.get(b("k5")) != nil)
        #expect(try cache.get(b("k0")) != nil)
    }

    @Test func theFileAndItsCompanionsHaveMode0600() throws {
        let dir = TemporaryDirectory()
        let path = dir.file("cache.db")
        let cache = try persistentCache(path)
        defer { cache.close() }
        try cache.put(b("k"), b("v"))
        #expect(fileMode(path) == 0o600)
        #expect(fileMode(path + "-wal") == 0o600)
        #expect(fileMode(path + "-shm") == 0o600)
    }

    @Test func aFileThatIsNotADatabaseIsAnIOErrorNamingItAndIsLeftAlone() throws {
        let dir = TemporaryDirectory()
        let path = dir.file("junk.db")
        let junk = b(String(repeating: "this is not an SQLite database. ", count: 200))
        writeFile(path, junk)
        do throws(CacheError) {
            _ = try persistentCache(path)
            Issue.record("a damaged file was opened")
        } catch {
            #expect(error.code == .io)
            #expect(error.message.contains(path))
            #expect(error.message.contains("not a database"))
        }
        #expect(readFile(path) == junk)
    }

    @Test func aDamagedFileIsReplacedWhenAskedTo() throws {
        let dir = TemporaryDirectory()
        let path = dir.file("junk.db")
        writeFile(path, b(String(repeating: "garbage ", count: 1000)))
        let cache = try persistentCache(path, replaceDamaged: true)
        defer { cache.close() }
        #expect(try cache.stats().entries == 0)
        try cache.put(b("k"), b("v"))
        #expect(try cache.get(b("k"))?.value == b("v"))
        #expect(fileMode(path) == 0o600)
        #expect(try cache.integrityCheck() == "ok")
    }

    @Test func anotherSchemaVersionIsAnIOErrorUnlessReplaced() throws {
        let dir = TemporaryDirectory()
        let path = dir.file("cache.db")
        let cache = try persistentCache(path)
        try cache.put(b("k"), b("v"))
        cache.close()
        let db = try SQLiteDatabase(path: path)
        try db.execute("PRAGMA user_version = 7")
        db.close()
        do throws(CacheError) {
            _ = try persistentCache(path)
            Issue.record("a file of another schema version was opened")
        } catch {
            #expect(error.code == .io)
            #expect(error.message.contains(path))
            #expect(error.message.contains("schema version 7"))
        }
        let replaced = try persistentCache(path, replaceDamaged: true)
        defer { replaced.close() }
        #expect(try replaced.get(b("k")) == nil)
        #expect(try replaced.stats().entries == 0)
    }

    @Test func aDatabaseOfAnotherProgramIsNotACache() throws {
        let dir = TemporaryDirectory()
        let path = dir.file("other.db")
        writeFile(path, [])
        let db = try SQLiteDatabase(path: path)
        try db.execute("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('keep me')")
        db.close()
        #expect(throws: CacheError.self) { try persistentCache(path) }
        let again = try SQLiteDatabase(path: path)
        defer { again.close() }
        #expect(try again.scalar("SELECT count(*) FROM notes") == 1)
    }

    @Test func aFileThatCannotBeCreatedIsAnIOError() throws {
        let dir = TemporaryDirectory()
        let path = dir.file("missing/cache.db")
        let error = #expect(throws: CacheError.self) { try persistentCache(path) }
        #expect(error?.code == .io)
        #expect(error?.message.contains(path) == true)
    }

    @Test func anEmptyFileBecomesACache() throws {
        let dir = TemporaryDirectory()
        let path = dir.file("empty.db")
        writeFile(path, [])
        let cache = try persistentCache(path)
        defer { cache.close() }
        try cache.put(b("k"), b("v"))
        #expect(try cache.get(b("k"))?.value == b("v"))
    }

    @Test func theRuntimeClosesItsCaches() throws {
        let dir = TemporaryDirectory()
        let runtime = try Runtime()
        let cache = try PersistentCache(id: runtime.table.makeID(.cache), path: dir.file("cache.db"))
        runtime.table.insert(cache)
        try cache.put(b("k"), b("v"))
        #expect(runtime.close() == .ok)
        #expect(throws: CacheError(.closed, "cache file \(dir.file("cache.db")) is closed")) {
            try cache.get(b("k"))
        }
        // The last connection closed: the WAL was checkpointed into the file.
        #expect(access(dir.file("cache.db-wal"), F_OK) != 0)
    }

    @Test func theKeyRangeOfAPrefixEndsAtItsSuccessor() {
        #expect(PersistentStore.successor(of: [1, 2]) == [1, 3])
        #expect(PersistentStore.successor(of: [1, 0xFF]) == [2])
        #expect(PersistentStore.successor(of: [0xFF, 0xFF]) == nil)
        #expect(PersistentStore.successor(of: []) == nil)
    }

    /// The size of a file, 0 when it does not exist.
    private func fileSize(_ path: String) -> Int {
        var st = stat()
        return stat(path, &st) == 0 ? Int(st.st_size) : 0
    }

    @Test func theLogIsCheckpointedOnAThreadOfItsOwn() throws {
        let dir = TemporaryDirectory()
        let path = dir.file("cache.db")
        let cache = try persistentCache(path, maxBytes: 1 << 30)
        defer { cache.close() }
        // About 11 log pages a put: past the 1,000 that wake the thread,
        // short of the 4,000 past which the writer checkpoints itself.
        let value = [UInt8](repeating: 3, count: 40_000)
        for i in 0..<120 { try cache.put(b("k\(i)"), value) }
        // The thread's checkpoint, waited for (a commit only wakes it).
        let deadline = Clock.monotonicNs() + 20_000_000_000
        while cache.backgroundCheckpoints == 0 && Clock.monotonicNs() < deadline { usleep(1000) }
        #expect(cache.backgroundCheckpoints >= 1)
        // Checkpointed: pages of the log were copied into the file itself
        // (those in the log when the thread ran, a megabyte at least).
        #expect(fileSize(path) > 1 << 20)
        #expect(try cache.get(b("k119"))?.value == value)
    }

    @Test func theLogStaysBoundedUnderWritesThatNeverPause() throws {
        let dir = TemporaryDirectory()
        let path = dir.file("cache.db")
        let cache = try persistentCache(path, maxBytes: 1 << 30)
        // About 26 log pages a put, 2,000 puts: 220 MB of log without
        // checkpoints; the writer's own checkpoints past 4,000 pages keep it
        // near 16 MiB (31 MiB at most measured).
        let value = [UInt8](repeating: 5, count: 100_000)
        var peak = 0
        for i in 0..<2000 {
            try cache.put(b("k\(i % 500)"), value)
            if i % 20 == 0 { peak = max(peak, fileSize(path + "-wal")) }
        }
        #expect(peak > 0 && peak < 64 << 20, "the log peaked at \(peak) bytes")
        #expect(try cache.get(b("k499"))?.value == value)
        cache.close()
        // The last connection's close checkpoints and removes the log.
        #expect(fileSize(path + "-wal") == 0)
        let again = try persistentCache(path, maxBytes: 1 << 30)
        defer { again.close() }
        #expect(try again.get(b("k0"))?.value == value)
        #expect(try again.integrityCheck() == "ok")
    }
}

// MARK: - The C client: API checks and crash safety

/// Tests/support/cache_writer.c, compiled against the debug libloadstate.so.
private struct CacheClient {
    struct Unavailable: Error {
        let why: String
    }

    let executable: String

    static var repositoryRoot: String {
        var parts = #filePath.split(separator: "/", omittingEmptySubsequences: false)
        parts.removeLast(3)
        return parts.joined(separator: "/")
    }

    /// The directory of the test bundle, which holds libloadstate.so after `swift build`.
    private static var libraryDirectory: String {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let n = readlink("/proc/self/exe", &buffer, buffer.count)
        let exe = n > 0 ? String(decoding: buffer[..<n], as: UTF8.self) : repositoryRoot + "/.build/debug/x"
        return String(exe[..<(exe.lastIndex(of: "/") ?? exe.endIndex)])
    }

    private static func modified(_ path: String) -> Int {
        var st = stat()
        return stat(path, &st) == 0 ? Int(st.st_mtim.tv_sec) : -1
    }

    /// Compiles the client into `dir`, or says why it cannot.
    static func build(into dir: TemporaryDirectory) -> Result<CacheClient, Unavailable> {
        let root = repositoryRoot
        let lib = libraryDirectory + "/libloadstate.so"
        let sources = ["include/loadstate.h", "Sources/LoadstateC/Exports+Cache.swift",
                       "Sources/Loadstate/Cache/PersistentCache.swift", "Sources/Loadstate/Cache/PersistentStore.swift",
                       "Sources/Loadstate/Cache/MemoryCache.swift"]
        let libTime = modified(lib)
        if libTime < 0 { return .failure(Unavailable(why: "\(lib) is missing: run `swift build` before `swift test`")) }
        if let newer = sources.first(where: { modified(root + "/" + $0) > libTime }) {
            return .failure(Unavailable(why: "\(lib) is older than \(newer): run `swift build` before `swift test`"))
        }
        let executable = dir.file("cache_writer")
        let (status, output) = run(["cc", "-std=c11", "-Wall", "-Wextra", "-Werror", "-O1", "-I" + root + "/include",
                                    root + "/Tests/support/cache_writer.c", "-o", executable,
                                    "-L" + libraryDirectory, "-lloadstate", "-Wl,-rpath," + libraryDirectory])
        if status != 0 { return .failure(Unavailable(why: "cc failed (\(status)): \(output)")) }
        return .success(CacheClient(executable: executable))
    }

    /// `build`, recording why as the test's issue when the client cannot be built.
    static func built(into dir: TemporaryDirectory) -> CacheClient? {
        switch build(into: dir) {
        case .success(let client):
            return client
        case .failure(let failure):
            Issue.record(Comment(rawValue: failure.why))
            return nil
        }
    }

    /// Starts `argv` with stdout (and stderr when `mergeErrors`) to a pipe.
    static func spawn(_ argv: [String], mergeErrors: Bool) -> (pid: pid_t, output: Int32) {
        var fds: [Int32] = [0, 0]
        // Close-on-exec: a process another test spawns meanwhile must not
        // inherit the write end, or reading to the end never ends while it lives.
        precondition(uv_pipe(&fds, 0, 0) == 0)  // both ends close-on-exec
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        posix_spawn_file_actions_adddup2(&actions, fds[1], 1)
        if mergeErrors { posix_spawn_file_actions_adddup2(&actions, fds[1], 2) }
        posix_spawn_file_actions_addclose(&actions, fds[0])
        posix_spawn_file_actions_addclose(&actions, fds[1])
        let args: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) } + [nil]
        var pid: pid_t = 0
        let rc = posix_spawnp(&pid, argv[0], &actions, nil, args, environ)
        for a in args { free(a) }
        posix_spawn_file_actions_destroy(&actions)
        close(fds[1])
        precondition(rc == 0, "cannot start \(argv[0])")
        return (pid, fds[0])
    }

    /// Runs `argv` to its end: its exit status and output.
    static func run(_ argv: [String]) -> (Int32, String) {
        let (pid, fd) = spawn(argv, mergeErrors: true)
        var reader = LineReader(fd: fd)
        let output = reader.readToEnd()
        close(fd)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        let exited = status & 0x7F == 0
        return (exited ? (status >> 8) & 0xFF : 128 + (status & 0x7F), String(decoding: output, as: UTF8.self))
    }
}

/// Reads whole lines from a pipe.
private struct LineReader {
    let fd: Int32
    private var buffer: [UInt8] = []

    init(fd: Int32) {
        self.fd = fd
    }

    /// The next complete line, or nil at the end of the stream.
    mutating func readLine() -> String? {
        while true {
            if let newline = buffer.firstIndex(of: 10) {
                let line = String(decoding: buffer[..<newline], as: UTF8.self)
                buffer.removeSubrange(...newline)
                return line
            }
            var chunk = [UInt8](repeating: 0, count: 4096)
            let n = read(fd, &chunk, chunk.count)
            if n <= 0 { return nil }
            buffer += chunk[0..<n]
        }
    }

    mutating func readToEnd() -> [UInt8] {
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = read(fd, &chunk, chunk.count)
            if n <= 0 { break }
            buffer += chunk[0..<n]
        }
        defer { buffer = [] }
        return buffer
    }
}

/// Checks values against the ones cache_writer puts: byte i of the value of
/// key K is ((i + sum of K's bytes) * 131) mod 256, a run of `pattern`.
private struct WriterValues {
    /// pattern[j] = (j * 131) mod 256, long enough for any key and value.
    private let pattern = (0..<(1 << 17) + (1 << 16)).map { UInt8(truncatingIfNeeded: $0 &* 131) }

    func matches(_ value: [UInt8]?, key: String, length: Int) -> Bool {
        guard let value, value.count == length else { return false }
        let start = key.utf8.reduce(0) { $0 + Int($1) }
        return value.withUnsafeBytes { v in
            pattern.withUnsafeBytes { p in length == 0 || memcmp(v.baseAddress!, p.baseAddress! + start, length) == 0 }
        }
    }
}

/// Not under a sanitizer run (`make test-tsan` sets LOADSTATE_SANITIZED):
/// the C client built here is not instrumented like the library it links.
@Suite(.timeLimit(.minutes(1)), .enabled(if: getenv("LOADSTATE_SANITIZED") == nil))
struct CacheCAPITests {
    @Test func theCFunctionsOfBothStoresBehaveAsDocumented() throws {
        let dir = TemporaryDirectory()
        guard let client = CacheClient.built(into: dir) else { return }
        let (status, output) = CacheClient.run([client.executable, "check", dir.path])
        #expect(status == 0, Comment(rawValue: output))
        #expect(output == "ok\n")
    }

    /// Four processes open one new file at the same moment, 100 times:
    /// every open succeeds (creating the file, switching it to WAL and
    /// writing its schema are safe across processes).
    @Test func fourProcessesOpeningOneNewFileAllSucceed() throws {
        let dir = TemporaryDirectory()
        guard let client = CacheClient.built(into: dir) else { return }
        let (status, output) = CacheClient.run([client.executable, "open-race", dir.path, "100"])
        #expect(status == 0, Comment(rawValue: output))
        #expect(output == "0 of 400 opens failed\n")
    }

    /// A child puts entries in a loop and prints each key once its put
    /// returned; it is killed with SIGKILL 5–50 ms after it opened the
    /// cache, 50 times over the same file. After every kill the file opens,
    /// passes PRAGMA integrity_check, and holds every acknowledged entry.
    @Test func aProcessKilledWhileWritingLosesNoAcknowledgedWrite() throws {
        let dir = TemporaryDirectory()
        guard let client = CacheClient.built(into: dir) else { return }
        let path = dir.file("crash.db")
        let values = WriterValues()
        var acknowledged: [(key: String, length: Int)] = []
        var rng = SystemRandomNumberGenerator()
        for round in 0..<50 {
            let (pid, fd) = CacheClient.spawn([client.executable, "write", path, String(round)], mergeErrors: false)
            defer { close(fd) }
            var reader = LineReader(fd: fd)
            guard reader.readLine() == "ready" else {
                kill(pid, SIGKILL)
                waitpid(pid, nil, 0)
                Issue.record("round \(round): the writer did not open the cache")
                return
            }
            usleep(UInt32.random(in: 5_000...50_000, using: &rng))
            kill(pid, SIGKILL)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
            #expect(status & 0x7F == SIGKILL, "round \(round): the writer ended before it was killed")
            var written: [(key: String, length: Int)] = []
            while let line = reader.readLine() {
                let parts = line.split(separator: " ")
                guard parts.count == 2, let length = Int(parts[1]) else { continue }
                written.append((String(parts[0]), length))
            }
            acknowledged += written

            let cache = try persistentCache(path, maxBytes: 1 << 40)
            defer { cache.close() }
            #expect(try cache.integrityCheck() == "ok")
            let lost = try written.filter { try !values.matches(cache.get(b($0.key))?.value, key: $0.key, length: $0.length) }
            #expect(lost.isEmpty, "acknowledged writes lost: \(lost.prefix(5).map(\.key))")
        }
        #expect(acknowledged.count >= 50)
        let cache = try persistentCache(path, maxBytes: 1 << 40)
        defer { cache.close() }
        let lost = try acknowledged.filter { try !values.matches(cache.get(b($0.key))?.value, key: $0.key, length: $0.length) }
        #expect(lost.isEmpty)
        #expect(try cache.stats().entries >= UInt64(acknowledged.count))
    }
}

/// Another process holding a cache file's write lock: host threads wait for
/// it (outside the cache's lock), a runtime's loop thread never does.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct PersistentCacheLockTests {
    private func b(_ s: String) -> [UInt8] { Array(s.utf8) }

    /// A process holding the write lock of `path` until `release` is called.
    final class Locker {
        private let stdin: Int32
        init(_ path: String) {
            let (stdin, line) = startSupportScript("sqlite_locker.py", what: "the SQLite locker", arguments: [path])
            precondition(line == "held", "the locker said \(line)")
            self.stdin = stdin
        }
        func release() {
            let newline: [UInt8] = [10]
            _ = write(stdin, newline, 1)
        }
        deinit { close(stdin) }
    }

    /// Runs `body` on a thread of its own.
    private static func detached(_ body: @escaping () -> Void) {
        final class Box { let body: () -> Void; init(_ body: @escaping () -> Void) { self.body = body } }
        var thread = pthread_t()
        let rc = pthread_create(&thread, nil, { arg in
            guard let arg else { return nil }
            Unmanaged<Box>.fromOpaque(arg).takeRetainedValue().body()
            return nil
        }, Unmanaged.passRetained(Box(body)).toOpaque())
        precondition(rc == 0, "pthread_create")
        pthread_detach(thread)
    }

    @Test func aHostThreadWaitsForTheLockAndTheLoopThreadDoesNot() async throws {
        let dir = TemporaryDirectory()
        let runtime = try Runtime()
        defer { _ = runtime.close() }
        // Reads write their accesses every other read: while the file is
        // locked those writes fail, and the reads must not.
        let cache = try PersistentCache(id: runtime.table.makeID(.cache), path: dir.file("cache.db"),
                                        options: .init(pendingAccessLimit: 2))
        runtime.table.insert(cache)
        try cache.put(b("k"), b("v"))
        let locker = Locker(dir.file("cache.db"))

        // On the loop thread a write fails at once instead of waiting (the
        // 5 s a host thread may wait), and a read still answers.
        let onLoop = LoopReply<(put: Bool, ms: UInt64, read: [UInt8]?)>()
        runtime.loop.execute {
            let start = Loadstate.Clock.monotonicMs()
            let stored = (try? cache.put(self.b("k2"), self.b("v2"))) != nil
            let elapsed = Loadstate.Clock.monotonicMs() - start
            var read: [UInt8]?
            for _ in 0..<10 { read = try? cache.get(self.b("k"))?.value }
            onLoop.put((stored, elapsed, read))
        }
        let answer = try #require(onLoop.take(timeoutMs: 10_000))
        #expect(!answer.put)
        #expect(answer.ms < 1_000)
        #expect(answer.read == b("v"))

        // A host thread's write waits, outside the cache's lock: meanwhile
        // the loop thread reads without waiting behind it.
        let writer = LoopReply<Bool>()
        let started = LoopReply<Void>()
        Self.detached {
            started.put(())
            writer.put((try? cache.put(Array("k3".utf8), Array("v3".utf8))) != nil)
        }
        #expect(started.take(timeoutMs: 10_000) != nil)
        usleep(50_000)
        let read = LoopReply<(ms: UInt64, value: [UInt8]?)>()
        runtime.loop.execute {
            let start = Loadstate.Clock.monotonicMs()
            let value = try? cache.get(self.b("k"))?.value
            read.put((Loadstate.Clock.monotonicMs() - start, value))
        }
        let whileWaiting = try #require(read.take(timeoutMs: 10_000))
        #expect(whileWaiting.ms < 1_000 && whileWaiting.value == b("v"))
        #expect(writer.take(timeoutMs: 200) == nil, "the host thread's write waits for the lock")
        locker.release()
        #expect(writer.take(timeoutMs: 10_000) == true)
        #expect(try cache.get(b("k3"))?.value == b("v3"))
        #expect(try cache.get(b("k2")) == nil)
    }
}
