import CLoadstateABI
@_spi(LoadstateC) import Loadstate
#if canImport(Glibc)
import Glibc
#endif

/// Finds a live cache of either store.
/// `waits`: the call waits for a Redis cache's loop, so it is refused on
/// the loop thread (LDS_ESTATE).
@inline(__always)
private func withCache(_ rt: OpaquePointer?, _ id: UInt64, waits: Bool = true,
                       _ body: (any CacheStore) -> Int32) -> Int32 {
    withRuntime(rt) { runtime in
        guard let handle = runtime.table.lookup(id, as: Handle.self) else { return LDS_ENOENT }
        if let cache = handle as? MemoryCache { return body(cache) }
        if let cache = handle as? PersistentCache { return body(cache) }
        if let cache = handle as? RedisCache {
            if waits && runtime.loop.isLoopThread { return LDS_ESTATE }
            return body(cache)
        }
        return LDS_ENOENT
    }
}

/// A persistent or Redis cache for a direct call (memory caches are read
/// in place); nil with the code to return otherwise.
private func slowStore(_ runtime: Runtime, _ handle: Handle) -> Result<any CacheStore, ResultCode> {
    if let cache = handle as? PersistentCache { return .success(cache) }
    if let cache = handle as? RedisCache {
        return runtime.loop.isLoopThread ? .failure(.wrongState) : .success(cache)
    }
    return .failure(.notFound)
}

/// The return code of a failed cache operation. A cache closed under the
/// caller by `lds_cache_free` on another thread no longer has an id.
private func code(_ error: CacheError) -> Int32 {
    error.code == .closed ? LDS_ENOENT : error.code.rawValue
}

private func registerCache(_ runtime: Runtime, _ cache: Handle, _ out: UnsafeMutablePointer<UInt64>) -> Int32 {
    runtime.table.insert(cache)
    out.pointee = cache.id
    return LDS_OK
}

@_cdecl("lds_memory_cache_new")
public func ldsMemoryCacheNew(_ rt: OpaquePointer?, _ opts: UnsafePointer<lds_memory_cache_options>?,
                              _ out: UnsafeMutablePointer<UInt64>?) -> Int32 {
    guard let out else { return LDS_EINVAL }
    var options = MemoryCache.Options()
    var name = ""
    if let opts {
        let (c, size) = readSized(opts)
        // Callers built before unobserved_ms (since 0.5) end at ttl_ms.
        guard size >= MemoryLayout<lds_memory_cache_options>.offset(of: \lds_memory_cache_options.unobserved_ms)
                ?? MemoryLayout<lds_memory_cache_options>.size else { return LDS_EINVAL }
        if let n = c.name { name = String(cString: n) }
        if c.max_entries > 0 { options.maxEntries = Int(clamping: c.max_entries) }
        if c.max_bytes > 0 { options.maxBytes = Int(clamping: c.max_bytes) }
        options.ttlMs = c.ttl_ms
        options.unobservedMs = c.unobserved_ms
    }
    return withRuntime(rt) { runtime in
        let cache = MemoryCache(id: runtime.table.makeID(.cache), name: name, options: options)
        runtime.memoryCaches.pin(cache)
        return registerCache(runtime, cache, out)
    }
}

@_cdecl("lds_persistent_cache_new")
public func ldsPersistentCacheNew(_ rt: OpaquePointer?, _ opts: UnsafePointer<lds_persistent_cache_options>?,
                                  _ out: UnsafeMutablePointer<UInt64>?) -> Int32 {
    guard let opts, let out else { return LDS_EINVAL }
    let (c, size) = readSized(opts)
    guard size >= MemoryLayout<lds_persistent_cache_options>.size, let path = c.path,
          c.flags & ~UInt32(LDS_CACHE_REPLACE_DAMAGED) == 0 else { return LDS_EINVAL }
    var options = PersistentCache.Options()
    if c.max_bytes > 0 { options.maxBytes = Int(clamping: c.max_bytes) }
    options.ttlMs = c.ttl_ms
    options.replaceDamaged = c.flags & UInt32(LDS_CACHE_REPLACE_DAMAGED) != 0
    let file = String(cString: path)
    return withRuntime(rt) { runtime in
        do throws(CacheError) {
            let cache = try PersistentCache(id: runtime.table.makeID(.cache), path: file, options: options)
            return registerCache(runtime, cache, out)
        } catch {
            return error.code.rawValue
        }
    }
}

@_cdecl("lds_cache_free")
public func ldsCacheFree(_ rt: OpaquePointer?, _ id: UInt64) -> Int32 {
    withRuntime(rt) { runtime in
        let removed = runtime.table.withLock { storage -> (any CacheStore)? in
            guard let cache = storage.handles[id] as? any CacheStore else { return nil }
            storage.handles[id] = nil
            return cache
        }
        guard let cache = removed else { return LDS_ENOENT }
        runtime.memoryCaches.unpin(id)
        cache.close()
        return LDS_OK
    }
}

@_cdecl("lds_cache_put")
public func ldsCachePut(_ rt: OpaquePointer?, _ id: UInt64, _ key: UnsafeRawPointer?, _ keyLength: Int,
                        _ value: UnsafeRawPointer?, _ valueLength: Int) -> Int32 {
    let checked = checkBuffer(key, keyLength) == .ok ? checkBuffer(value, valueLength) : checkBuffer(key, keyLength)
    guard checked == .ok else { return checked.rawValue }
    return withCache(rt, id) { cache in
        if let memory = cache as? MemoryCache {
            // Copied once, into the entry.
            memory.put(UnsafeRawBufferPointer(start: keyLength == 0 ? nil : key, count: keyLength),
                       UnsafeRawBufferPointer(start: valueLength == 0 ? nil : value, count: valueLength), ttlMs: nil)
            return LDS_OK
        }
        let k: Bytes, v: Bytes
        switch (copyBytes(key, keyLength), copyBytes(value, valueLength)) {
        case (.failure(let rc), _), (_, .failure(let rc)): return rc.rawValue
        case (.success(let a), .success(let b)): (k, v) = (a, b)
        }
        do throws(CacheError) {
            try cache.put(k, v)
            // Newer data for a write that shows an optimistic value under the key.
            return withRuntime(rt) { runtime in
                runtime.notePut(cache, key: k)
                return LDS_OK
            }
        } catch {
            return code(error)
        }
    }
}

@_cdecl("lds_cache_get")
public func ldsCacheGet(_ rt: OpaquePointer?, _ id: UInt64, _ key: UnsafeRawPointer?, _ keyLength: Int,
                        _ out: UnsafeMutablePointer<lds_cache_value>?) -> Int32 {
    guard let out else { return LDS_EINVAL }
    out.pointee = lds_cache_value()
    let rc = checkBuffer(key, keyLength)
    guard rc == .ok else { return rc.rawValue }
    let k = UnsafeRawBufferPointer(start: keyLength == 0 ? nil : key, count: keyLength)
    return withRuntime(rt) { runtime in
        // A memory cache without the table's lock; others (and a cache
        // that found no free slot) through the table.
        if let rc = runtime.memoryCaches.find(id, { cache in cache.read(k) { give($0, out) } ?? 0 }) {
            return rc
        }
        guard let handle = runtime.table.lookup(id, as: Handle.self) else { return LDS_ENOENT }
        if let cache = handle as? MemoryCache {
            // Copied under the cache's lock: no allocation for the key.
            return cache.read(k) { give($0, out) } ?? 0
        }
        if let cache = handle as? PersistentCache {
            // Copied from SQLite's memory: no copy of the key or the entry in between.
            do throws(CacheError) {
                return try cache.read(k) { give($0, out) } ?? 0
            } catch {
                return code(error)
            }
        }
        let cache: any CacheStore
        switch slowStore(runtime, handle) {
        case .success(let store): cache = store
        case .failure(let rc): return rc.rawValue
        }
        do throws(CacheError) {
            guard let entry = try cache.get(Bytes(k)) else { return 0 }
            return entry.value.withUnsafeBytes { value in
                give(CacheEntryView(value: value, storedAtMs: entry.storedAtMs, expiresAtMs: entry.expiresAtMs,
                                    isStale: entry.isStale), out)
            }
        } catch {
            return code(error)
        }
    }
}

@_cdecl("lds_cache_get_many")
public func ldsCacheGetMany(_ rt: OpaquePointer?, _ id: UInt64, _ count: Int,
                            _ keys: UnsafePointer<UnsafeRawPointer?>?, _ keyLengths: UnsafePointer<Int>?,
                            _ out: UnsafeMutablePointer<lds_cache_value>?,
                            _ results: UnsafeMutablePointer<Int32>?) -> Int32 {
    // A count over the bound (or past SIZE_MAX / 2) touches neither array.
    guard count >= 0, count <= cacheBatchMax else { return LDS_ETOOBIG }
    guard count > 0 else { return withCache(rt, id) { _ in 0 } }
    if let out { out.initialize(repeating: lds_cache_value(), count: count) }
    if let results { results.initialize(repeating: 0, count: count) }
    guard let keys, let keyLengths, let out, let results else {
        results?.update(repeating: LDS_EINVAL, count: count)
        return LDS_EINVAL
    }
    let batch = KeyBatch(keys: keys, lengths: keyLengths, out: out, results: results, count: count)
    let rc = withRuntime(rt) { runtime in
        if let rc = runtime.memoryCaches.find(id, batch.read) { return rc }
        guard let handle = runtime.table.lookup(id, as: Handle.self) else { return LDS_ENOENT }
        if let cache = handle as? MemoryCache { return batch.read(cache) }
        switch slowStore(runtime, handle) {
        case .success(let store): return batch.get(store)
        case .failure(let rc): return rc.rawValue
        }
    }
    if rc < 0 { results.update(repeating: rc, count: count) }
    return rc
}

/// The caller's arrays of an `lds_cache_get_many` (`count` checked).
private struct KeyBatch {
    let keys: UnsafePointer<UnsafeRawPointer?>
    let lengths: UnsafePointer<Int>
    let out: UnsafeMutablePointer<lds_cache_value>
    let results: UnsafeMutablePointer<Int32>
    let count: Int

    /// Key `i`, or nil with its code in `results[i]` (LDS_EINVAL,
    /// LDS_ETOOBIG).
    func key(_ i: Int) -> UnsafeRawBufferPointer? {
        let rc = checkBuffer(keys[i], lengths[i])
        guard rc == .ok else {
            results[i] = rc.rawValue
            return nil
        }
        return UnsafeRawBufferPointer(start: lengths[i] == 0 ? nil : keys[i], count: lengths[i])
    }

    /// A memory cache: every key under one acquisition of its lock, each
    /// copied out in place. The number of hits.
    func read(_ cache: MemoryCache) -> Int32 {
        var hits: Int32 = 0
        cache.read(count: count, key: key) { i, entry in
            results[i] = entry.map { give($0, out + i) } ?? 0
            if results[i] == 1 { hits += 1 }
        }
        return hits
    }

    /// A persistent or Redis cache: the valid keys copied, looked up in one
    /// call. The number of hits, or the whole call's failure.
    func get(_ store: any CacheStore) -> Int32 {
        var indices: [Int] = []
        indices.reserveCapacity(count)
        let entries: [Result<CacheEntry?, CacheError>]
        do throws(CacheError) {
            if let redis = store as? RedisCache {
                // The GETs are encoded from the caller's keys at once.
                var keyBytes = 0
                for i in 0..<count { keyBytes &+= max(lengths[i], 0) }
                var batch = RedisCache.GetBatch(of: redis, count: count, keyBytes: keyBytes)
                for i in 0..<count {
                    if let k = key(i) {
                        indices.append(i)
                        batch.append(k)
                    }
                }
                guard !indices.isEmpty else { return 0 }
                entries = try redis.entries(batch)
            } else {
                var copies: [Bytes] = []
                for i in 0..<count {
                    if let k = key(i) {
                        indices.append(i)
                        copies.append(Bytes(k))
                    }
                }
                guard !copies.isEmpty else { return 0 }
                entries = try store.entries(for: copies)
            }
        } catch {
            return code(error)
        }
        var hits: Int32 = 0
        for (i, entry) in zip(indices, entries) {
            switch entry {
            case .success(nil): results[i] = 0
            case .success(let found?):
                results[i] = found.value.withUnsafeBytes { value in
                    give(CacheEntryView(value: value, storedAtMs: found.storedAtMs, expiresAtMs: found.expiresAtMs,
                                        isStale: found.isStale), out + i)
                }
            case .failure(let error): results[i] = code(error)
            }
            if results[i] == 1 { hits += 1 }
        }
        return hits
    }
}

@_cdecl("lds_cache_read")
public func ldsCacheRead(_ rt: OpaquePointer?, _ id: UInt64, _ key: UnsafeRawPointer?, _ keyLength: Int,
                         _ buffer: UnsafeMutableRawPointer?, _ capacity: Int,
                         _ length: UnsafeMutablePointer<Int>?) -> Int32 {
    guard let length, capacity >= 0, buffer != nil || capacity == 0 else { return LDS_EINVAL }
    length.pointee = 0
    let rc = checkBuffer(key, keyLength)
    guard rc == .ok else { return rc.rawValue }
    let k = UnsafeRawBufferPointer(start: keyLength == 0 ? nil : key, count: keyLength)
    let room = UnsafeMutableRawBufferPointer(start: capacity == 0 ? nil : buffer, count: capacity)
    return withRuntime(rt) { runtime in
        if let rc = runtime.memoryCaches.find(id, { cache in cache.read(k) { copy($0.value, room, length) } ?? 0 }) {
            return rc
        }
        guard let handle = runtime.table.lookup(id, as: Handle.self) else { return LDS_ENOENT }
        if let cache = handle as? MemoryCache {
            return cache.read(k) { copy($0.value, room, length) } ?? 0
        }
        if let cache = handle as? PersistentCache {
            do throws(CacheError) {
                return try cache.read(k) { copy($0.value, room, length) } ?? 0
            } catch {
                return code(error)
            }
        }
        let cache: any CacheStore
        switch slowStore(runtime, handle) {
        case .success(let store): cache = store
        case .failure(let rc): return rc.rawValue
        }
        do throws(CacheError) {
            guard let entry = try cache.get(Bytes(k)) else { return 0 }
            return entry.value.withUnsafeBytes { copy($0, room, length) }
        } catch {
            return code(error)
        }
    }
}

/// Copies a found value into the caller's room when it fits, and gives its
/// length either way: 1.
private func copy(_ value: UnsafeRawBufferPointer, _ room: UnsafeMutableRawBufferPointer,
                  _ length: UnsafeMutablePointer<Int>) -> Int32 {
    length.pointee = value.count
    if value.count <= room.count, let source = value.baseAddress, let target = room.baseAddress {
        memcpy(target, source, value.count)
    }
    return 1
}

/// Hands a copy of an entry to the caller: 1, or LDS_ENOMEM.
private func give(_ entry: CacheEntryView, _ out: UnsafeMutablePointer<lds_cache_value>) -> Int32 {
    guard let memory = malloc(max(entry.value.count, 1)) else { return LDS_ENOMEM }
    if let base = entry.value.baseAddress { memcpy(memory, base, entry.value.count) }
    out.pointee = lds_cache_value(value: memory, value_len: entry.value.count, stored_at_ms: entry.storedAtMs,
                                  expires_at_ms: entry.expiresAtMs, stale: entry.isStale ? 1 : 0)
    return 1
}

@_cdecl("lds_cache_value_clear")
public func ldsCacheValueClear(_ value: UnsafeMutablePointer<lds_cache_value>?) {
    guard let value else { return }
    free(value.pointee.value)
    value.pointee = lds_cache_value()
}

@_cdecl("lds_cache_remove")
public func ldsCacheRemove(_ rt: OpaquePointer?, _ id: UInt64, _ key: UnsafeRawPointer?, _ keyLength: Int) -> Int32 {
    withCache(rt, id) { cache in
        let k: Bytes
        switch copyBytes(key, keyLength) {
        case .success(let b): k = b
        case .failure(let rc): return rc.rawValue
        }
        do throws(CacheError) {
            return try cache.remove(k) ? 1 : 0
        } catch {
            return code(error)
        }
    }
}

@_cdecl("lds_cache_clear")
public func ldsCacheClear(_ rt: OpaquePointer?, _ id: UInt64) -> Int32 {
    withCache(rt, id) { cache in
        do throws(CacheError) {
            try cache.clear()
            return LDS_OK
        } catch {
            return code(error)
        }
    }
}

@_cdecl("lds_cache_stats")
public func ldsCacheStats(_ rt: OpaquePointer?, _ id: UInt64, _ out: UnsafeMutablePointer<lds_cache_statistics>?) -> Int32 {
    guard let out else { return LDS_EINVAL }
    out.pointee = lds_cache_statistics()
    return withCache(rt, id, waits: false) { cache in
        do throws(CacheError) {
            let s = try cache.stats()
            out.pointee = lds_cache_statistics(hits: s.hits, misses: s.misses, evictions: s.evictions,
                                               expirations: s.expirations, entries: s.entries, bytes: s.bytes)
            return LDS_OK
        } catch {
            return code(error)
        }
    }
}

@_cdecl("lds_cache_keys")
public func ldsCacheKeys(_ rt: OpaquePointer?, _ id: UInt64, _ prefix: UnsafeRawPointer?, _ prefixLength: Int,
                         _ out: UnsafeMutablePointer<lds_cache_key_list>?) -> Int32 {
    guard let out else { return LDS_EINVAL }
    out.pointee = lds_cache_key_list()
    return withPrefix(rt, id, prefix, prefixLength) { cache, p throws(CacheError) in
        if let memory = cache as? MemoryCache { return giveKeys(memory.flatKeys(prefix: p), out) }
        return giveKeys(FlatKeys(try cache.keys(prefix: p)), out)
    }
}

@_cdecl("lds_cache_count")
public func ldsCacheCount(_ rt: OpaquePointer?, _ id: UInt64, _ prefix: UnsafeRawPointer?, _ prefixLength: Int,
                          _ limit: UInt64, _ out: UnsafeMutablePointer<UInt64>?) -> Int32 {
    guard let out else { return LDS_EINVAL }
    out.pointee = 0
    return withPrefix(rt, id, prefix, prefixLength) { cache, p throws(CacheError) in
        out.pointee = try cache.count(prefix: p, limit: limit)
        return LDS_OK
    }
}

/// Runs `body` with a live cache and a copy of the caller's key prefix; a
/// cache error becomes its return code.
private func withPrefix(_ rt: OpaquePointer?, _ id: UInt64, _ prefix: UnsafeRawPointer?, _ prefixLength: Int,
                        _ body: (any CacheStore, Bytes) throws(CacheError) -> Int32) -> Int32 {
    withCache(rt, id) { cache in
        switch copyBytes(prefix, prefixLength) {
        case .success(let p):
            do throws(CacheError) {
                return try body(cache, p)
            } catch {
                return code(error)
            }
        case .failure(let rc): return rc.rawValue
        }
    }
}

/// Lays the keys out in one block, pointers first, then lengths, then the
/// bytes, and hands it to the caller: LDS_OK, or LDS_ENOMEM.
private func giveKeys(_ keys: FlatKeys, _ out: UnsafeMutablePointer<lds_cache_key_list>) -> Int32 {
    let count = keys.lengths.count
    guard count > 0 else { return LDS_OK }
    let tableBytes = count * (MemoryLayout<UnsafeRawPointer?>.stride + MemoryLayout<Int>.stride)
    let (total, overflow) = tableBytes.addingReportingOverflow(keys.bytes.count)
    guard !overflow, let block = malloc(max(total, 1)) else { return LDS_ENOMEM }
    let pointers = block.bindMemory(to: UnsafeRawPointer?.self, capacity: count)
    let lengthsStart = block + count * MemoryLayout<UnsafeRawPointer?>.stride
    let lengths = lengthsStart.bindMemory(to: Int.self, capacity: count)
    let bytes = block + tableBytes
    keys.bytes.withUnsafeBytes { source in
        if let base = source.baseAddress { memcpy(bytes, base, source.count) }
    }
    var cursor = bytes
    for (i, length) in keys.lengths.enumerated() {
        pointers[i] = UnsafeRawPointer(cursor)
        lengths[i] = length
        cursor += length
    }
    out.pointee = lds_cache_key_list(count: count, keys: UnsafePointer(pointers), lengths: UnsafePointer(lengths),
                                     block: block)
    return LDS_OK
}

@_cdecl("lds_cache_key_list_clear")
public func ldsCacheKeyListClear(_ list: UnsafeMutablePointer<lds_cache_key_list>?) {
    guard let list else { return }
    free(list.pointee.block)
    list.pointee = lds_cache_key_list()
}
