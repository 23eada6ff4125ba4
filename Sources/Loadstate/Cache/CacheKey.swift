/// A key as a dictionary key. Its hash is computed once, over the bytes as
/// one run, and compared before the bytes: probing a large table then
/// rarely touches the bytes of keys that do not match.
struct CacheKey: Hashable, Sendable {
    let bytes: [UInt8]
    private let digest: Int

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
        var hasher = Hasher()
        bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
        digest = hasher.finalize()
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(digest)
    }

    static func == (a: CacheKey, b: CacheKey) -> Bool {
        a.digest == b.digest && a.bytes == b.bytes
    }

    func hasPrefix(_ prefix: [UInt8]) -> Bool {
        bytes.count >= prefix.count && bytes[..<prefix.count].elementsEqual(prefix)
    }
}
