extension HTTPResponse {
    /// Whether the status is 2xx.
    public var isSuccess: Bool { (200..<300).contains(status) }

    /// The body as UTF-8 text (invalid sequences replaced).
    public var text: String { String(decoding: body, as: UTF8.self) }

    /// The header fields of the final response, in order: each line's name
    /// and its value without surrounding whitespace. Lines without a colon
    /// (the status line) are left out.
    public var headerFields: [(name: String, value: String)] {
        let text = String(decoding: headers, as: UTF8.self)
        var fields: [(name: String, value: String)] = []
        for line in text.split(separator: "\r\n", omittingEmptySubsequences: true) {
            guard let colon = line.firstIndex(of: ":") else { continue }
            fields.append((String(line[..<colon]), line[line.index(after: colon)...].trimmingWhitespace()))
        }
        return fields
    }

    /// The values of every header with this name (case-insensitive), in order.
    public func headers(named name: String) -> [String] {
        let wanted = name.lowercased()
        return headerFields.filter { $0.name.lowercased() == wanted }.map(\.value)
    }

    /// The response itself when its status is 2xx; otherwise throws
    /// `HTTPStatusError` carrying it.
    public func checked() throws(HTTPStatusError) -> HTTPResponse {
        guard isSuccess else { throw HTTPStatusError(response: self) }
        return self
    }

    /// The body decoded by `decode` (a JSON decoder, a parser of your own).
    public func decode<T>(_ decode: ([UInt8]) throws -> T) rethrows -> T {
        try decode(body)
    }

    /// The body decoded with a codec; throws `LoadError` (`ResultCode.io`)
    /// when it does not decode.
    public func decode<T>(using codec: ValueCodec<T>) throws(LoadError) -> T {
        guard let value = codec.decode(body) else {
            throw LoadError(.io, message: "the response body does not decode")
        }
        return value
    }
}
