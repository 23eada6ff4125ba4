import CLoadstateABI
@_spi(LoadstateC) import Loadstate
#if canImport(Glibc)
import Glibc
#endif

@_cdecl("lds_redis_cache_new")
public func ldsRedisCacheNew(_ rt: OpaquePointer?, _ url: UnsafePointer<CChar>?,
                             _ opts: UnsafePointer<lds_redis_cache_options>?,
                             _ out: UnsafeMutablePointer<UInt64>?) -> Int32 {
    guard let url, let out, strnlen(url, 4097) <= 4096 else { return LDS_EINVAL }
    if RedisURL.isTLS(String(cString: url)) { return LDS_ENOTSUP }
    guard let parsed = RedisURL(String(cString: url)) else { return LDS_EINVAL }
    var options = RedisCache.Options()
    if let opts {
        let (c, size) = readSized(opts)
        guard size >= MemoryLayout<lds_redis_cache_options>.size, c.flags == 0 else { return LDS_EINVAL }
        if let prefix = c.key_prefix {
            let length = strnlen(prefix, 4097)
            guard length <= 4096 else { return LDS_EINVAL }
            options.keyPrefix = Array(UnsafeRawBufferPointer(start: prefix, count: length))
        }
        options.ttlMs = c.ttl_ms
        if c.max_ttl_ms > 0 { options.maxTtlMs = c.max_ttl_ms }
        if c.max_value_bytes > 0 {
            guard c.max_value_bytes <= 256 << 20 else { return LDS_EINVAL }
            options.maxValueBytes = Int(c.max_value_bytes)
        }
        if c.command_timeout_ms > 0 { options.commandTimeoutMs = UInt64(c.command_timeout_ms) }
        if c.connect_timeout_ms > 0 { options.connectTimeoutMs = UInt64(c.connect_timeout_ms) }
        if c.lease_ms > 0 { options.leaseMs = UInt64(c.lease_ms) }
        if c.reconnect_max_ms > 0 { options.reconnectMaxMs = UInt64(c.reconnect_max_ms) }
        options.memoryMaxEntries = Int(clamping: c.memory_max_entries)
        if c.memory_max_bytes > 0 { options.memoryMaxBytes = Int(clamping: c.memory_max_bytes) }
        if c.memory_ttl_ms > 0 { options.memoryTtlMs = c.memory_ttl_ms }
    }
    return withRuntime(rt) { runtime in
        let cache = RedisCache(id: runtime.table.makeID(.cache), runtime: runtime, url: parsed, options: options)
        runtime.table.insert(cache)
        out.pointee = cache.id
        return LDS_OK
    }
}

@_cdecl("lds_redis_cache_status")
public func ldsRedisCacheStatus(_ rt: OpaquePointer?, _ id: UInt64,
                                _ out: UnsafeMutablePointer<lds_redis_status>?) -> Int32 {
    guard let out else { return LDS_EINVAL }
    let size = Int(UnsafeRawPointer(out).loadUnaligned(as: UInt32.self))
    guard size >= MemoryLayout<lds_redis_status>.size else { return LDS_EINVAL }
    return withRuntime(rt) { runtime in
        guard let cache = runtime.table.lookup(id, as: Handle.self) as? RedisCache else { return LDS_ENOENT }
        let s = cache.status()
        var c = lds_redis_status()
        c.size = UInt32(MemoryLayout<lds_redis_status>.size)
        c.connected = s.connected ? 1 : 0
        c.subscribed = s.subscribed ? 1 : 0
        c.last_error_code = s.lastErrorCode?.rawValue ?? 0
        c.connects = s.connects
        c.errors = s.errors
        c.leases_taken = s.leasesTaken
        c.leases_waited = s.leasesWaited
        c.results_received = s.resultsReceived
        c.takeovers = s.takeovers
        c.published = s.published
        c.fenced = s.fenced
        c.invalidations = s.invalidations
        withUnsafeMutableBytes(of: &c.last_error) { room in
            // Cut at a character's start, so that the copy stays valid UTF-8.
            var message = Array(s.lastError.utf8.prefix(room.count))
            if message.count == room.count {
                message.removeLast()
                while let last = message.last, last & 0xC0 == 0x80 { message.removeLast() }
                if let last = message.last, last >= 0xC0 { message.removeLast() }
            }
            room.copyBytes(from: message)
            room[message.count] = 0
        }
        out.pointee = c
        return LDS_OK
    }
}
