/// Little-endian, length-prefixed fields: how structured requests and
/// responses travel as byte strings. A field is a u32 length then the
/// bytes; `absent` (0xFFFFFFFF) marks a field left out.
struct WireWriter {
    private(set) var bytes: [UInt8] = []

    /// `capacity`: the bytes expected in all, to allocate once.
    init(magic: String, capacity: Int = 0) {
        bytes.reserveCapacity(magic.utf8.count + capacity)
        bytes.append(contentsOf: magic.utf8)
    }

    mutating func u32(_ v: UInt32) {
        withUnsafeBytes(of: v.littleEndian) { bytes.append(contentsOf: $0) }
    }

    mutating func i32(_ v: Int32) { u32(UInt32(bitPattern: v)) }

    mutating func u64(_ v: UInt64) {
        withUnsafeBytes(of: v.littleEndian) { bytes.append(contentsOf: $0) }
    }

    mutating func field<C: Collection<UInt8>>(_ data: C?) {
        guard let data else { return u32(WireReader.absent) }
        u32(UInt32(data.count))
        bytes.append(contentsOf: data)
    }

    mutating func list(_ items: [[UInt8]]?) {
        guard let items else { return u32(WireReader.absent) }
        u32(UInt32(items.count))
        for item in items { field(item) }
    }

    mutating func rest<C: Collection<UInt8>>(_ data: C) {
        bytes.append(contentsOf: data)
    }
}

/// Reads what a `WireWriter` wrote; every read fails cleanly on short input.
struct WireReader {
    static let absent: UInt32 = 0xFFFF_FFFF
    private let bytes: [UInt8]
    private(set) var offset = 0

    /// Nil when the bytes do not start with `magic`.
    init?(_ bytes: [UInt8], magic: String) {
        let n = magic.utf8.count
        guard bytes.count >= n, bytes[0..<n].elementsEqual(magic.utf8) else { return nil }
        self.bytes = bytes
        offset = n
    }

    mutating func u32() -> UInt32? {
        guard bytes.count - offset >= 4 else { return nil }
        var v: UInt32 = 0
        for i in 0..<4 { v |= UInt32(bytes[offset + i]) << (8 * UInt32(i)) }
        offset += 4
        return v
    }

    mutating func i32() -> Int32? { u32().map { Int32(bitPattern: $0) } }

    mutating func u64() -> UInt64? {
        guard let lo = u32(), let hi = u32() else { return nil }
        return UInt64(hi) << 32 | UInt64(lo)
    }

    /// A field: `.some(nil)` when marked absent, nil when malformed.
    mutating func field() -> [UInt8]?? {
        guard let n = u32() else { return nil }
        if n == Self.absent { return .some(nil) }
        guard bytes.count - offset >= Int(n) else { return nil }
        defer { offset += Int(n) }
        return .some(Array(bytes[offset..<(offset + Int(n))]))
    }

    /// A field as UTF-8 text, without an intermediate array: `.some(nil)`
    /// when marked absent; nil when malformed or when it holds a NUL.
    mutating func text() -> String?? {
        guard let n = u32() else { return nil }
        if n == Self.absent { return .some(nil) }
        guard bytes.count - offset >= Int(n) else { return nil }
        let slice = bytes[offset..<(offset + Int(n))]
        offset += Int(n)
        // Text that is not UTF-8 makes the request malformed: it is never
        // repaired into other text (a URL or method that was not asked for).
        guard !slice.contains(0), let text = String(validating: slice, as: UTF8.self) else { return nil }
        return .some(text)
    }

    mutating func list() -> [[UInt8]]?? {
        guard let n = u32() else { return nil }
        if n == Self.absent { return .some(nil) }
        var items: [[UInt8]] = []
        for _ in 0..<n {
            guard let item = field(), let present = item else { return nil }
            items.append(present)
        }
        return .some(items)
    }

    /// Everything after the fields read so far.
    var rest: ArraySlice<UInt8> { bytes[offset...] }
}
