/// Where a Redis cache keeps what it stores, under its key prefix `P`:
///
///     P{ttt}v:KEY     the entry of KEY (a string, see `RedisEntry`)
///     P{ttt}l:KEY     the lease of KEY while one process loads it
///     P{ttt}f         the fencing counter of the keys of tag ttt
///     P{i}keys        every stored KEY (a sorted set, score 0): the
///                     lexicographic index that invalidation reads
///     P{i}expiry      every stored KEY scored by when its entry expires
///                     (ms, the server's clock): what keeps the index in
///                     step with expiry
///     Pevents         the channel of the cache's messages
///
/// `ttt` is three hex digits of a hash of KEY: the entry, the lease and the
/// fencing counter of a key share one hash tag, so a Redis Cluster keeps
/// them in one slot (the scripts that read them together need that), and
/// the keys spread over 4,096 tags, so over the cluster's masters.
struct RedisKeys {
    let prefix: [UInt8]

    /// The number of `key`'s hash tag, 0 to 4,095: FNV-1a of its bytes,
    /// folded to 12 bits.
    static func tagNumber(_ key: UnsafeRawBufferPointer) -> Int {
        var h: UInt32 = 2_166_136_261
        for b in key { h = (h ^ UInt32(b)) &* 16_777_619 }
        return Int((h ^ (h >> 12) ^ (h >> 24)) & 0xfff)
    }

    /// The hash tag of `key`, braces included: "{ttt}".
    static func tag(_ key: UnsafeRawBufferPointer) -> (UInt8, UInt8, UInt8, UInt8, UInt8) {
        tag(number: tagNumber(key))
    }

    /// The hash tag of number `t`, braces included.
    static func tag(number t: Int) -> (UInt8, UInt8, UInt8, UInt8, UInt8) {
        let t = UInt32(truncatingIfNeeded: t)
        return (UInt8(ascii: "{"), hex(t >> 8), hex(t >> 4), hex(t), UInt8(ascii: "}"))
    }

    /// The cluster slot of the entries of each of the 4,096 tags under this
    /// prefix (Redis Cluster's rule on the whole name, so a prefix with a
    /// hash tag of its own is honoured).
    func slotsOfTags() -> [UInt16] {
        (0..<4096).map { t in
            let tag = RedisKeys.tag(number: t)
            return UInt16(truncatingIfNeeded: RedisCluster.slot(
                of: prefix + [tag.0, tag.1, tag.2, tag.3, tag.4, RedisKeys.entryMark.0, RedisKeys.entryMark.1]))
        }
    }

    private static func hex(_ n: UInt32) -> UInt8 {
        let d = UInt8(truncatingIfNeeded: n & 0xf)
        return d < 10 ? UInt8(ascii: "0") &+ d : UInt8(ascii: "a") &+ (d &- 10)
    }

    /// "{ttt}" followed by `mark` (two bytes: "v:", "l:").
    static func tagged(_ key: UnsafeRawBufferPointer, _ mark: (UInt8, UInt8)) -> [UInt8] {
        let t = tag(key)
        return [t.0, t.1, t.2, t.3, t.4, mark.0, mark.1]
    }

    static let entryMark = (UInt8(ascii: "v"), UInt8(ascii: ":"))
    static let leaseMark = (UInt8(ascii: "l"), UInt8(ascii: ":"))
    /// The bytes between the prefix and the key in an entry's name.
    static let entryInfix = 7

    func entry(_ key: [UInt8]) -> [UInt8] {
        key.withUnsafeBytes { prefix + RedisKeys.tagged($0, RedisKeys.entryMark) + key }
    }

    func lease(_ key: [UInt8]) -> [UInt8] {
        key.withUnsafeBytes { prefix + RedisKeys.tagged($0, RedisKeys.leaseMark) + key }
    }

    func fence(_ key: [UInt8]) -> [UInt8] {
        let t = key.withUnsafeBytes { RedisKeys.tag($0) }
        return prefix + [t.0, t.1, t.2, t.3, t.4, UInt8(ascii: "f")]
    }

    var keysIndex: [UInt8] { prefix + Array("{i}keys".utf8) }
    var expiryIndex: [UInt8] { prefix + Array("{i}expiry".utf8) }
    var channel: [UInt8] { prefix + Array("events".utf8) }

    /// The `ZRANGEBYLEX` bounds of the keys that begin with `prefix`.
    static func lexRange(_ prefix: [UInt8]) -> (min: [UInt8], max: [UInt8]) {
        guard !prefix.isEmpty else { return ([UInt8(ascii: "-")], [UInt8(ascii: "+")]) }
        // The first byte string after every one that begins with `prefix`.
        var end = prefix
        while let last = end.last, last == 0xff { end.removeLast() }
        guard let last = end.last else { return ([UInt8(ascii: "[")] + prefix, [UInt8(ascii: "+")]) }
        end[end.count - 1] = last &+ 1
        return ([UInt8(ascii: "[")] + prefix, [UInt8(ascii: "(")] + end)
    }
}
