/// How cache keys are hashed: a multiply-and-fold hash over eight bytes at
/// a time, keyed with a seed drawn once per process from the standard
/// library's random hashing seed, so that which keys collide cannot be
/// chosen from outside the process. Short keys (URLs, paths) hash in a few
/// nanoseconds, where SipHash takes several times longer.
enum CacheKey {
    private static let seed: UInt64 = {
        var hasher = Hasher()
        hasher.combine(0x6c64_735f_6b65_7973 as UInt64)
        let a = UInt64(bitPattern: Int64(hasher.finalize()))
        return a | 1
    }()

    @inline(__always)
    private static func fold(_ a: UInt64, _ b: UInt64) -> UInt64 {
        let product = a.multipliedFullWidth(by: b)
        return product.high ^ product.low
    }

    /// The hash of a key given as raw bytes.
    static func digest(of bytes: UnsafeRawBufferPointer) -> Int {
        let seed = Self.seed
        var h = fold(seed ^ 0xa076_1d64_78bd_642f, UInt64(bytes.count) ^ 0xe703_7ed1_a0b4_28db)
        var offset = 0
        let count = bytes.count
        while offset + 8 <= count {
            let word = bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
            h = fold(h ^ word, seed ^ 0x8ebc_6af0_9c88_c6e3)
            offset += 8
        }
        if offset < count {
            var tail: UInt64 = 0
            for i in offset..<count { tail |= UInt64(bytes[i]) << (8 * UInt64(i - offset)) }
            h = fold(h ^ tail, seed ^ 0x5899_65cc_7537_4cc3)
        }
        return Int(bitPattern: UInt(fold(h, 0x1d8e_4e27_c47d_124f)))
    }
}
