import Testing
@_spi(LoadstateC) @testable import Loadstate
#if canImport(Glibc)
import Glibc
#endif

private func b(_ text: String) -> [UInt8] {
    Array(text.utf8)
}

private let anyID = HandleTable().makeID(.cache)

/// Metadata kept beside a value (`CacheEntry.meta`), in both stores.
@Suite struct CacheMetaTests {
    private func stores(_ dir: TemporaryDirectory, maxBytes: Int = 1 << 20) throws -> [any CacheStore] {
        [MemoryCache(id: anyID, name: "meta", options: .init(maxBytes: maxBytes)),
         try PersistentCache(id: anyID, path: dir.file("meta.db"), options: .init(maxBytes: maxBytes))]
    }

    @Test func metadataIsKeptBesideTheValueAndReplacedByEveryPut() throws {
        let dir = TemporaryDirectory()
        for cache in try stores(dir) {
            defer { cache.close() }
            try cache.put(b("k"), b("value"), ttlMs: nil, meta: b("validators"))
            #expect(try cache.get(b("k"))?.meta == b("validators"), "\(cache.name)")
            #expect(try cache.get(b("k"))?.value == b("value"), "\(cache.name)")
            try cache.put(b("k"), b("value 2"))
            #expect(try cache.get(b("k"))?.meta == [], "\(cache.name)")
        }
    }

    @Test func metadataCountsTowardsTheByteBound() throws {
        let dir = TemporaryDirectory()
        for cache in try stores(dir, maxBytes: 100) {
            defer { cache.close() }
            try cache.put(b("k"), b("v"), ttlMs: nil, meta: [UInt8](repeating: 7, count: 50))
            #expect(try cache.stats().bytes == 52, "\(cache.name)")
            // Over the bound with its metadata: not kept.
            try cache.put(b("k2"), b("v"), ttlMs: nil, meta: [UInt8](repeating: 7, count: 100))
            #expect(try cache.get(b("k2")) == nil, "\(cache.name)")
        }
    }

    @Test func aVersionOneFileIsUpgradedAndKeepsItsEntries() throws {
        let dir = TemporaryDirectory()
        let path = dir.file("v1.db")
        close(open(path, O_CREAT | O_WRONLY, 0o600))
        let db = try SQLiteDatabase(path: path)
        // The schema of version 1, as the library before metadata wrote it.
        try db.execute("""
            CREATE TABLE entries (
                key BLOB NOT NULL PRIMARY KEY, size INTEGER NOT NULL, stored_at INTEGER NOT NULL,
                expires_at INTEGER NOT NULL, last_access INTEGER NOT NULL, stale INTEGER NOT NULL,
                value BLOB NOT NULL);
            CREATE INDEX entries_by_access ON entries (last_access);
            CREATE TABLE totals (id INTEGER PRIMARY KEY CHECK (id = 1), entries INTEGER NOT NULL,
                                 bytes INTEGER NOT NULL);
            INSERT INTO totals VALUES (1, 1, 6);
            CREATE TRIGGER entries_inserted AFTER INSERT ON entries BEGIN
                UPDATE totals SET entries = entries + 1, bytes = bytes + new.size; END;
            CREATE TRIGGER entries_deleted AFTER DELETE ON entries BEGIN
                UPDATE totals SET entries = entries - 1, bytes = bytes - old.size; END;
            CREATE TRIGGER entries_resized AFTER UPDATE OF size ON entries BEGIN
                UPDATE totals SET bytes = bytes - old.size + new.size; END;
            PRAGMA user_version = 1;
            """)
        try db.execute("INSERT INTO entries VALUES (x'6f6c64', 6, 1000, 0, 1, 0, x'616263')")
        db.close()
        let cache = try PersistentCache(id: anyID, path: path)
        #expect(try cache.get(b("old")) == CacheEntry(value: b("abc"), storedAtMs: 1000))
        try cache.put(b("new"), b("v"), ttlMs: nil, meta: b("m"))
        #expect(try cache.get(b("new"))?.meta == b("m"))
        #expect(try cache.integrityCheck() == "ok")
        cache.close()
        let reopened = try SQLiteDatabase(path: path)
        defer { reopened.close() }
        #expect(try reopened.scalar("PRAGMA user_version") == PersistentCacheSchema.version)
    }
}
