#if canImport(Glibc)
import Glibc
#endif

/// A key and its hash, computed once over the bytes as one run.
struct CacheKey: Sendable {
    let bytes: [UInt8]
    let digest: Int

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
        digest = bytes.withUnsafeBytes { Self.digest(of: $0) }
    }

    /// The hash of a key given as raw bytes (same seed as every other key
    /// of the process), fed to the hasher eight bytes at a time.
    static func digest(of bytes: UnsafeRawBufferPointer) -> Int {
        var hasher = Hasher()
        hasher.combine(bytes.count)
        var offset = 0
        while offset + 8 <= bytes.count {
            hasher.combine(bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
            offset += 8
        }
        if offset < bytes.count {
            var tail: UInt64 = 0
            for i in offset..<bytes.count { tail |= UInt64(bytes[i]) << (8 * UInt64(i - offset)) }
            hasher.combine(tail)
        }
        return hasher.finalize()
    }

    /// Whether the key's bytes equal `other`.
    func matches(_ other: UnsafeRawBufferPointer) -> Bool {
        guard bytes.count == other.count else { return false }
        guard let base = other.baseAddress, !bytes.isEmpty else { return true }
        return bytes.withUnsafeBytes { memcmp($0.baseAddress!, base, bytes.count) == 0 }
    }

    func hasPrefix(_ prefix: [UInt8]) -> Bool {
        bytes.count >= prefix.count && bytes[..<prefix.count].elementsEqual(prefix)
    }
}
