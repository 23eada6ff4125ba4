/// A key as a dictionary key: hashed as one run of bytes rather than
/// element by element.
struct CacheKey: Hashable, Sendable {
    let bytes: [UInt8]

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    func hash(into hasher: inout Hasher) {
        bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
    }

    static func == (a: CacheKey, b: CacheKey) -> Bool {
        a.bytes == b.bytes
    }

    func hasPrefix(_ prefix: [UInt8]) -> Bool {
        bytes.count >= prefix.count && bytes[..<prefix.count].elementsEqual(prefix)
    }
}
