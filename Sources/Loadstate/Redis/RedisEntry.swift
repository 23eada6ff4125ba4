/// How a cache entry is kept in Redis: one string, a fixed header then
/// the loader's metadata and the value.
///
///     offset  size  field
///     0       1     format (1)
///     1       1     stale (0 or 1): set in place by invalidation (SETRANGE)
///     2       8     stored at, wall-clock ms, big-endian
///     10      8     expires at, wall-clock ms (0: never), big-endian
///     18      8     fencing token of the lease it was stored under (0: none)
///     26      4     metadata length, big-endian
///     30      ...   metadata, then the value
///
/// The scripts in `RedisScripts` read the stale byte, the stored time and
/// the token at these offsets.
enum RedisEntry {
    static let format: UInt8 = 1
    static let headerSize = 30

    static func encode(_ value: [UInt8], meta: [UInt8], storedAtMs: UInt64, expiresAtMs: UInt64,
                       token: UInt64) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(headerSize + meta.count + value.count)
        out.append(format)
        out.append(0)
        append(storedAtMs, to: &out)
        append(expiresAtMs, to: &out)
        append(token, to: &out)
        let metaCount = UInt32(clamping: meta.count)
        for shift in stride(from: 24, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: metaCount >> UInt32(shift))) }
        out.append(contentsOf: meta.prefix(Int(metaCount)))
        out.append(contentsOf: value)
        return out
    }

    /// The entry in `bytes`; nil when they are not an entry of this format.
    static func decode(_ bytes: [UInt8]) -> CacheEntry? {
        bytes.withUnsafeBytes { decode($0) }
    }

    /// The entry in `bytes` (a reply in hiredis's memory), its value and
    /// metadata copied out; nil when they are not an entry of this format.
    static func decode(_ bytes: UnsafeRawBufferPointer) -> CacheEntry? {
        guard bytes.count >= headerSize, bytes[0] == format, bytes[1] <= 1 else { return nil }
        let metaCount = bytes[26...29].reduce(0) { $0 << 8 | Int($1) }
        guard metaCount <= bytes.count - headerSize else { return nil }
        let metaEnd = headerSize + metaCount
        return CacheEntry(value: Array(UnsafeRawBufferPointer(rebasing: bytes[metaEnd...])),
                          storedAtMs: read(bytes, at: 2), expiresAtMs: read(bytes, at: 10), isStale: bytes[1] == 1,
                          meta: metaCount == 0 ? [] : Array(UnsafeRawBufferPointer(rebasing: bytes[headerSize..<metaEnd])))
    }

    private static func append(_ n: UInt64, to out: inout [UInt8]) {
        for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: n >> UInt64(shift))) }
    }

    private static func read(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> UInt64 {
        bytes[offset..<offset + 8].reduce(0) { $0 << 8 | UInt64($1) }
    }
}

/// The Lua scripts of a Redis cache. Each runs atomically in Redis.
enum RedisScripts {
    /// KEYS: entry, lease, fence counter. ARGV: not-before (ms), lease ms.
    /// A live, not stale entry stored at or after not-before: {1, entry}.
    /// Otherwise a free lease is taken: {2, token, entry or ""}. Otherwise
    /// {3, the lease's remaining ms}.
    static let acquire = """
        local v = redis.call('GET', KEYS[1])
        if v and #v >= 30 and string.byte(v, 2) == 0 then
          local t = 0
          for i = 3, 10 do t = t * 256 + string.byte(v, i) end
          if t >= tonumber(ARGV[1]) then return {1, v} end
        end
        if redis.call('EXISTS', KEYS[2]) == 0 then
          local token = redis.call('INCR', KEYS[3])
          redis.call('SET', KEYS[2], token, 'PX', ARGV[2])
          return {2, token, v or ''}
        end
        return {3, redis.call('PTTL', KEYS[2])}
        """

    /// KEYS: entry, lease. ARGV: token, entry, ttl ms, channel, message.
    /// Stores and publishes unless a newer lease holder owns the key: 1
    /// stored, 0 fenced.
    static let publish = """
        local holder = redis.call('GET', KEYS[2])
        if holder == ARGV[1] then
          redis.call('DEL', KEYS[2])
        elseif holder then
          return 0
        else
          local v = redis.call('GET', KEYS[1])
          if v and #v >= 30 then
            local f = 0
            for i = 19, 26 do f = f * 256 + string.byte(v, i) end
            if f > tonumber(ARGV[1]) then return 0 end
          end
        end
        redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
        redis.call('PUBLISH', ARGV[4], ARGV[5])
        return 1
        """

    /// KEYS: lease. ARGV: token, channel, message. Releases the lease if
    /// it is still this token's, and tells the waiters.
    static let release = """
        if redis.call('GET', KEYS[1]) == ARGV[1] then
          redis.call('DEL', KEYS[1])
        end
        redis.call('PUBLISH', ARGV[2], ARGV[3])
        return 1
        """

    /// ARGV: match pattern, mode ("stale" or "delete"), channel, message.
    /// Marks stale (or deletes) every matching key; publishes the message;
    /// returns how many keys it changed.
    static let sweep = """
        local cursor = '0'
        local n = 0
        repeat
          local r = redis.call('SCAN', cursor, 'MATCH', ARGV[1], 'COUNT', 1000)
          cursor = r[1]
          for _, k in ipairs(r[2]) do
            if ARGV[2] == 'delete' then
              n = n + redis.call('DEL', k)
            elseif redis.call('GETRANGE', k, 0, 0) == '\\1' then
              redis.call('SETRANGE', k, 1, '\\1')
              n = n + 1
            end
          end
        until cursor == '0'
        if ARGV[3] ~= '' then redis.call('PUBLISH', ARGV[3], ARGV[4]) end
        return n
        """

    /// ARGV: match pattern, most keys. The matching keys, or an error past the limit.
    static let keys = """
        local cursor = '0'
        local out = {}
        local limit = tonumber(ARGV[2])
        repeat
          local r = redis.call('SCAN', cursor, 'MATCH', ARGV[1], 'COUNT', 1000)
          cursor = r[1]
          for _, k in ipairs(r[2]) do
            out[#out + 1] = k
            if #out > limit then return redis.error_reply('too many keys') end
          end
        until cursor == '0'
        return out
        """

    /// A glob pattern matching the keys that begin with `prefix`.
    static func pattern(prefix: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        for b in prefix {
            if b == UInt8(ascii: "*") || b == UInt8(ascii: "?") || b == UInt8(ascii: "[")
                || b == UInt8(ascii: "]") || b == UInt8(ascii: "\\") {
                out.append(UInt8(ascii: "\\"))
            }
            out.append(b)
        }
        out.append(UInt8(ascii: "*"))
        return out
    }
}
