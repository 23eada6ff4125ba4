/// The bytes a page of a pages cell travels as.
///
/// A page's request, as its loader receives it:
///
///     "\0LPQ"  direction (1 byte: 0 first, 1 next, 0xFF previous)
///     request  (u32 little-endian length, then that many bytes)
///     cursor   (u32 length, 0xFFFFFFFF for none, then the bytes)
///
/// A page's value, as a job completes it (what caches store and shared
/// jobs share, so that a cached page brings its cursors):
///
///     "\0LPV"  value (u32 length, bytes)
///     next     (u32 length, 0xFFFFFFFF for none, bytes)
///     previous (u32 length, 0xFFFFFFFF for none, bytes)
///
/// Both end exactly where their last field ends. A value that does not
/// begin with "\0LPV" is a page's own value with no cursor (the end of the
/// list both ways); one that begins so but does not decode is an error.
package enum PageWire {
    /// The most bytes of one cursor.
    package static let cursorMax = 4096
    /// The tag of an encoded page request.
    package static let requestTag: [UInt8] = [0, 0x4C, 0x50, 0x51]
    /// The tag of an encoded page value.
    package static let valueTag: [UInt8] = [0, 0x4C, 0x50, 0x56]
    private static let none: UInt32 = 0xFFFF_FFFF

    /// One page's request: the load's request, the cursor of the page
    /// asked for (nil for the first page) and the direction.
    package struct Request: Equatable, Sendable {
        package var request: [UInt8]
        package var cursor: [UInt8]?
        /// 0 first page, 1 next, -1 previous.
        package var direction: Int32

        package init(request: [UInt8], cursor: [UInt8]?, direction: Int32) {
            self.request = request
            self.cursor = cursor
            self.direction = direction
        }
    }

    /// One page's value with the cursors of its neighbours (nil: no page that way).
    package struct Value: Equatable, Sendable {
        package var value: [UInt8]
        package var next: [UInt8]?
        package var previous: [UInt8]?

        package init(value: [UInt8], next: [UInt8]?, previous: [UInt8]?) {
            self.value = value
            self.next = next
            self.previous = previous
        }
    }

    /// Why bytes did not decode.
    package enum Failure: Error, Equatable {
        /// Truncated, a bad tag or direction, or bytes after the end.
        case malformed
        /// A cursor longer than `cursorMax`.
        case cursorTooBig
    }

    package static func encode(_ r: Request) -> [UInt8] {
        var out = requestTag
        out.reserveCapacity(13 + r.request.count + (r.cursor?.count ?? 0))
        out.append(r.direction == 0 ? 0 : (r.direction > 0 ? 1 : 0xFF))
        put(r.request, into: &out)
        put(r.cursor, into: &out)
        return out
    }

    package static func encode(_ v: Value) -> [UInt8] {
        var out = valueTag
        out.reserveCapacity(16 + v.value.count + (v.next?.count ?? 0) + (v.previous?.count ?? 0))
        put(v.value, into: &out)
        put(v.next, into: &out)
        put(v.previous, into: &out)
        return out
    }

    /// Where the fields of an encoded page request lie in its bytes.
    package struct RequestLayout: Equatable, Sendable {
        package var request: Range<Int>
        package var cursor: Range<Int>?
        package var direction: Int32
    }

    /// Reads an encoded page request in place.
    package static func layoutRequest(_ bytes: UnsafeRawBufferPointer) -> Result<RequestLayout, Failure> {
        var reader = Reader(bytes: bytes)
        guard reader.tag(requestTag), let d = reader.byte(), d == 0 || d == 1 || d == 0xFF,
              case .some(.some(let request)) = reader.field(), let cursor = reader.field(), reader.atEnd
        else { return .failure(.malformed) }
        if let cursor, cursor.count > cursorMax { return .failure(.cursorTooBig) }
        return .success(RequestLayout(request: request, cursor: cursor, direction: d == 0 ? 0 : (d == 1 ? 1 : -1)))
    }

    /// Reads an encoded page request.
    package static func decodeRequest(_ bytes: [UInt8]) -> Result<Request, Failure> {
        bytes.withUnsafeBytes { buffer in
            layoutRequest(buffer).map { layout in
                Request(request: Array(buffer[layout.request]), cursor: layout.cursor.map { Array(buffer[$0]) },
                        direction: layout.direction)
            }
        }
    }

    /// Reads a page's value: an encoded one, or plain bytes (no cursors).
    package static func decodeValue(_ bytes: [UInt8]) -> Result<Value, Failure> {
        guard bytes.starts(with: valueTag) else { return .success(Value(value: bytes, next: nil, previous: nil)) }
        return bytes.withUnsafeBytes { buffer in
            var reader = Reader(bytes: buffer)
            guard reader.tag(valueTag), case .some(.some(let value)) = reader.field(), let next = reader.field(),
                  let previous = reader.field(), reader.atEnd
            else { return .failure(.malformed) }
            if (next?.count ?? 0) > cursorMax || (previous?.count ?? 0) > cursorMax { return .failure(.cursorTooBig) }
            return .success(Value(value: Array(buffer[value]), next: next.map { Array(buffer[$0]) },
                                  previous: previous.map { Array(buffer[$0]) }))
        }
    }

    /// The cache key of a page: the load's key, a 0 byte, then the cursor
    /// (nothing for the first page), so that a prefix of the load's key
    /// reaches every page.
    package static func cacheKey(_ base: [UInt8], cursor: [UInt8]?) -> [UInt8] {
        var key = base
        key.append(0)
        if let cursor { key.append(contentsOf: cursor) }
        return key
    }

    private static func put(_ field: [UInt8]?, into out: inout [UInt8]) {
        let length = field.map { UInt32(truncatingIfNeeded: $0.count) } ?? none
        withUnsafeBytes(of: length.littleEndian) { out.append(contentsOf: $0) }
        if let field { out.append(contentsOf: field) }
    }

    /// Reads fields front to back; every read checks the bytes left.
    private struct Reader {
        let bytes: UnsafeRawBufferPointer
        var at = 0

        var atEnd: Bool { at == bytes.count }

        mutating func tag(_ tag: [UInt8]) -> Bool {
            guard bytes.count - at >= tag.count, bytes[at..<at + tag.count].elementsEqual(tag) else { return false }
            at += tag.count
            return true
        }

        mutating func byte() -> UInt8? {
            guard at < bytes.count else { return nil }
            at += 1
            return bytes[at - 1]
        }

        /// nil: malformed; .some(nil): absent; .some(range): where the bytes are.
        mutating func field() -> Range<Int>?? {
            guard bytes.count - at >= 4 else { return nil }
            var length: UInt32 = 0
            for i in 0..<4 { length |= UInt32(bytes[at + i]) << UInt32(8 * i) }
            at += 4
            if length == PageWire.none { return .some(nil) }
            guard UInt64(length) <= UInt64(bytes.count - at) else { return nil }
            let range = at..<(at + Int(length))
            at = range.upperBound
            return .some(range)
        }
    }
}
