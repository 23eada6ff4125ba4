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

    /// Lua, with KEYS[a] the key index, KEYS[b] the expiry index and `m`
    /// a key, `ttl` its entry's time to live (ms): indexes `m` and drops
    /// at most 8 keys whose entries expired over a minute ago (a key
    /// rewritten since has its expiry raised), by the server's clock. So
    /// the index holds the stored keys, and those that expired within the
    /// last minute or were written by a write that a lease fenced off.
    private static func indexing(_ a: Int, _ b: Int, _ m: String, _ ttl: String) -> String {
        """
        redis.call('ZADD', KEYS[\(a)], 0, \(m))
        local now = redis.call('TIME')
        local nowMs = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
        local expires = nowMs + tonumber(\(ttl))
        local was = redis.call('ZSCORE', KEYS[\(b)], \(m))
        if not was or tonumber(was) < expires then redis.call('ZADD', KEYS[\(b)], expires, \(m)) end
        local gone = redis.call('ZRANGEBYSCORE', KEYS[\(b)], '-inf', '(' .. (nowMs - 60000), 'LIMIT', 0, 8)
        for _, k in ipairs(gone) do
          redis.call('ZREM', KEYS[\(a)], k)
          redis.call('ZREM', KEYS[\(b)], k)
        end
        """
    }

    /// Redis 5 and 6 replicate a script that reads the clock and then
    /// writes only when told to replicate its effects (Redis 7 always does).
    private static let effects = "if redis.replicate_commands then redis.replicate_commands() end\n"

    /// KEYS: entry, key index, expiry index. ARGV: entry, ttl ms, key,
    /// channel, message. Stores, indexes and publishes.
    static let store = effects + """
        redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])

        """ + indexing(2, 3, "ARGV[3]", "ARGV[2]") + """


        redis.call('PUBLISH', ARGV[4], ARGV[5])
        return 1
        """

    /// KEYS: entry, key index, expiry index. ARGV: key, channel, message.
    /// Deletes and unindexes; publishes; the number of entries deleted.
    static let remove = """
        local n = redis.call('DEL', KEYS[1])
        redis.call('ZREM', KEYS[2], ARGV[1])
        redis.call('ZREM', KEYS[3], ARGV[1])
        redis.call('PUBLISH', ARGV[2], ARGV[3])
        return n
        """

    /// KEYS: entry, lease, key index, expiry index. ARGV: token, entry,
    /// ttl ms, channel, message, key. Stores, indexes and publishes unless
    /// a newer lease holder owns the key: 1 stored, 0 fenced.
    static let publish = effects + fencedWrite + indexing(3, 4, "ARGV[6]", "ARGV[3]") + """

        redis.call('PUBLISH', ARGV[4], ARGV[5])
        return 1
        """

    /// KEYS: entry, lease. ARGV: token, entry, ttl ms. The start of
    /// `publish` and `publishEntry`: returns 0 unless the lease is this
    /// token's or free and the stored entry is not a newer holder's, then
    /// releases the lease and stores the entry.
    private static let fencedWrite = """
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

        """

    // On a Redis Cluster, a script may only touch keys of one slot: the
    // entry (with its lease) and the index are written by separate
    // scripts, the index first, so that it always names every stored key.
    // The index is not shrunk by removals there (a removal racing with a
    // write of the same key could drop a stored key from it): removed keys
    // leave it when their entries would have expired.

    /// Cluster. KEYS: key index, expiry index. ARGV: key, ttl ms.
    static let index = effects + indexing(1, 2, "ARGV[1]", "ARGV[2]") + "\nreturn 1"

    /// Cluster. KEYS: entry. ARGV: entry, ttl ms, channel, message.
    static let storeEntry = """
        redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
        redis.call('PUBLISH', ARGV[3], ARGV[4])
        return 1
        """

    /// Cluster. KEYS: entry, lease. ARGV: token, entry, ttl ms, channel,
    /// message. As `publish`, without the index.
    static let publishEntry = fencedWrite + """

        redis.call('PUBLISH', ARGV[4], ARGV[5])
        return 1
        """

    /// Cluster. KEYS: entry. ARGV: channel, message. Deletes, publishes;
    /// the number of entries deleted.
    static let removeEntry = """
        local n = redis.call('DEL', KEYS[1])
        redis.call('PUBLISH', ARGV[1], ARGV[2])
        return n
        """

    /// Cluster. KEYS: entry. ARGV: mode ("stale" or "delete"). 1 when it
    /// changed the entry.
    static let sweepEntry = """
        if ARGV[1] == 'delete' then return redis.call('DEL', KEYS[1]) end
        if redis.call('GETRANGE', KEYS[1], 0, 0) == '\\1' then
          redis.call('SETRANGE', KEYS[1], 1, '\\1')
          return 1
        end
        return 0
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

    /// KEYS: key index, expiry index, then the entries of a batch of keys.
    /// ARGV: mode ("stale" or "delete"), then the keys. Marks stale (or
    /// deletes) each entry; a key whose entry is gone leaves the indexes.
    /// How many entries it changed.
    static let sweep = """
        local n = 0
        for i = 3, #KEYS do
          local k = ARGV[i - 1]
          if ARGV[1] == 'delete' then
            n = n + redis.call('DEL', KEYS[i])
            redis.call('ZREM', KEYS[1], k)
            redis.call('ZREM', KEYS[2], k)
          else
            local b = redis.call('GETRANGE', KEYS[i], 0, 0)
            if b == '\\1' then
              redis.call('SETRANGE', KEYS[i], 1, '\\1')
              n = n + 1
            elseif b == '' then
              redis.call('ZREM', KEYS[1], k)
              redis.call('ZREM', KEYS[2], k)
            end
          end
        end
        return n
        """

    /// KEYS: the entries of a batch of keys. For each, 1 when it exists.
    static let exist = """
        local out = {}
        for i = 1, #KEYS do out[i] = redis.call('EXISTS', KEYS[i]) end
        return out
        """
}
