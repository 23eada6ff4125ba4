/// What the http loader keeps beside a response it stores in a cache
/// (`CacheEntry.meta`): the validators it revalidates the entry with.
///
/// Encoded as "LHC1", then items: a tag byte, a u32 length (little-endian)
/// and that many bytes. Readers skip items whose tag they do not know, so
/// later versions may add items; a record that does not parse counts as
/// none (the stored headers are read instead).
struct HTTPCacheRecord: Equatable {
    /// The response's `ETag`, sent back as `If-None-Match`.
    var etag: [UInt8]?
    /// The response's `Last-Modified`, sent back as `If-Modified-Since`.
    var lastModified: [UInt8]?

    private enum Tag: UInt8 {
        case etag = 1
        case lastModified = 2
    }

    private static let magic = Array("LHC1".utf8)
    /// Validators longer than this are not kept (a header line is at most
    /// `HTTPLoader.headersMax` anyway).
    static let validatorMax = 8 << 10

    init(etag: [UInt8]? = nil, lastModified: [UInt8]? = nil) {
        self.etag = etag
        self.lastModified = lastModified
    }

    /// The validators of a response's header lines: each kept only when it
    /// can be sent back as it is (no control character, at most
    /// `validatorMax` bytes).
    init(headers: HTTPHeaderLines) {
        etag = headers.first("etag").flatMap(Self.validator)
        lastModified = headers.first("last-modified").flatMap(Self.validator)
    }

    private static func validator(_ value: ArraySlice<UInt8>) -> [UInt8]? {
        value.count <= validatorMax && HTTPHeaderLines.isSendable(value) ? Array(value) : nil
    }

    /// Whether there is something to revalidate with.
    var hasValidators: Bool { etag != nil || lastModified != nil }

    /// The request header lines that ask the server to answer 304 when
    /// the stored response is still current.
    var conditionalHeaders: [String] {
        var lines: [String] = []
        if let etag { lines.append("If-None-Match: " + String(decoding: etag, as: UTF8.self)) }
        if let lastModified { lines.append("If-Modified-Since: " + String(decoding: lastModified, as: UTF8.self)) }
        return lines
    }

    func encoded() -> [UInt8] {
        var bytes = Self.magic
        func item(_ tag: Tag, _ value: [UInt8]?) {
            guard let value else { return }
            bytes.append(tag.rawValue)
            withUnsafeBytes(of: UInt32(truncatingIfNeeded: value.count).littleEndian) { bytes.append(contentsOf: $0) }
            bytes.append(contentsOf: value)
        }
        item(.etag, etag)
        item(.lastModified, lastModified)
        return bytes
    }

    /// Nil when `bytes` is not a record (empty metadata, another format, cut short).
    init?<C: Collection<UInt8>>(decoding bytes: C) where C.Index == Int {
        let b = ArraySlice(bytes)
        guard b.starts(with: Self.magic) else { return nil }
        var at = b.startIndex + Self.magic.count
        while at < b.endIndex {
            guard b.endIndex - at >= 5 else { return nil }
            let tag = b[at]
            var length = 0
            for i in 0..<4 { length |= Int(b[at + 1 + i]) << (8 * i) }
            at += 5
            guard b.endIndex - at >= length else { return nil }
            let value = Array(b[at..<(at + length)])
            at += length
            switch Tag(rawValue: tag) {
            case .etag?: etag = Self.validator(value[...])
            case .lastModified?: lastModified = Self.validator(value[...])
            case nil: continue
            }
        }
    }
}
