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

extension HTTPResponse: CustomStringConvertible {
    /// The status, the first header lines and a preview of the body, in a
    /// line or a few: `HTTP 404, 3 headers (content-type: text/html, ...),
    /// 1,234 bytes: "<html>…"`. Header values and the body preview are cut
    /// (80 characters each); a body that is not text shows as its size.
    public var description: String {
        let fields = headerFields
        var out = "HTTP \(status)"
        if !fields.isEmpty {
            let shown = fields.prefix(3).map { "\($0.name.lowercased()): \(Self.preview($0.value, 40))" }
            out += ", \(fields.count) header\(fields.count == 1 ? "" : "s") (" + shown.joined(separator: ", ")
                + (fields.count > 3 ? ", ..." : "") + ")"
        }
        out += ", \(body.count) byte\(body.count == 1 ? "" : "s")"
        if !body.isEmpty {
            let text = String(decoding: body.prefix(256), as: UTF8.self)
            let printable = !text.contains("\u{FFFD}") && !text.unicodeScalars.contains {
                $0.value < 0x20 && $0 != "\n" && $0 != "\r" && $0 != "\t"
            }
            if printable { out += ": \"\(Self.preview(text, 80))\"" }
        }
        return out
    }

    /// `text` on one line, cut to `limit` characters with an ellipsis.
    static func preview(_ text: String, _ limit: Int) -> String {
        let line = String(text.map { $0 == "\r\n" || $0 == "\n" || $0 == "\r" ? " " : $0 })
        return line.count > limit ? String(line.prefix(limit)) + "…" : line
    }
}

extension HTTPStatusError: CustomStringConvertible {
    /// "HTTP status error: " and the response's description.
    public var description: String { "HTTP status error: \(response)" }
}
