/// The head of an HTTP/1.x request as the inspector accepts it: a request
/// line and headers, within fixed bounds. Anything else is refused with a
/// status code; nothing here traps on input.
struct HTTPRequestHead {
    /// The most bytes of a head, up to and including its blank line.
    static let maxBytes = 8192
    /// The most header lines.
    static let maxHeaders = 64

    var method: String
    var path: String
    var query: [String: String]
    var host: String?
    var version: String

    /// Where the head ends (the index after "\r\n\r\n"), if `bytes` holds it all.
    static func end(in bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        var i = 3
        while i < bytes.count {
            if bytes[i] == 10 && bytes[i - 1] == 13 && bytes[i - 2] == 10 && bytes[i - 3] == 13 { return i + 1 }
            i += 1
        }
        return nil
    }

    /// Why an incomplete head can never become one this server accepts
    /// (checked as it arrives, so that it is answered at once): a byte that
    /// is not printable ASCII, tab, CR or LF; a line feed without its
    /// carriage return; a request line that is not `METHOD /target
    /// HTTP/1.x` (an HTTP/0.9 request). Nil while it may still be valid.
    static func refusalSoFar(_ head: [UInt8]) -> InspectorRefusal? {
        for (i, byte) in head.enumerated() {
            if !(byte >= 0x20 && byte < 0x7f) && byte != 9 && byte != 13 && byte != 10 { return InspectorRefusal(400) }
            if byte == 10 && (i == 0 || head[i - 1] != 13) { return InspectorRefusal(400) }
        }
        guard let lineEnd = head.firstIndex(of: 13), lineEnd + 1 < head.count else { return nil }
        let parts = head[..<lineEnd].split(separator: 0x20, omittingEmptySubsequences: false)
        guard parts.count == 3, parts[1].first == UInt8(ascii: "/") else { return InspectorRefusal(400) }
        let version = String(decoding: parts[2], as: UTF8.self)
        return version == "HTTP/1.1" || version == "HTTP/1.0" ? nil : InspectorRefusal(505)
    }

    /// Parses a complete head (ending with "\r\n\r\n"); on failure, the
    /// status code to answer.
    static func parse(_ head: ArraySlice<UInt8>) -> Result<HTTPRequestHead, InspectorRefusal> {
        guard head.count <= maxBytes else { return .failure(InspectorRefusal(431)) }
        // Header bytes: printable ASCII, tab, CR and LF only.
        for byte in head where !(byte >= 0x20 && byte < 0x7f) && byte != 9 && byte != 13 && byte != 10 {
            return .failure(InspectorRefusal(400))
        }
        let text = String(decoding: head, as: UTF8.self)
        var lines = text.split(separator: "\r\n", omittingEmptySubsequences: false)
        // The blank line and what follows it (nothing).
        while let last = lines.last, last.isEmpty { lines.removeLast() }
        guard let requestLine = lines.first else { return .failure(InspectorRefusal(400)) }
        let parts = requestLine.split(separator: " ", omittingEmptySubsequences: false)
        guard parts.count == 3 else { return .failure(InspectorRefusal(400)) }
        let method = String(parts[0]), target = String(parts[1]), version = String(parts[2])
        guard version == "HTTP/1.1" || version == "HTTP/1.0" else { return .failure(InspectorRefusal(505)) }
        guard target.first == "/", target.utf8.count <= 2048 else { return .failure(InspectorRefusal(400)) }
        guard lines.count - 1 <= maxHeaders else { return .failure(InspectorRefusal(431)) }
        var host: String?
        for line in lines.dropFirst() {
            // No folded lines, a name and a colon.
            guard let colon = line.firstIndex(of: ":"), line.first != " ", line.first != "\t" else {
                return .failure(InspectorRefusal(400))
            }
            let name = line[line.startIndex..<colon].lowercased()
            guard !name.isEmpty, !name.contains(" "), !name.contains("\t") else { return .failure(InspectorRefusal(400)) }
            let value = String(line[line.index(after: colon)...].drop(while: { $0 == " " || $0 == "\t" }))
                .trimmingTrailingBlanks()
            switch name {
            case "host":
                guard host == nil else { return .failure(InspectorRefusal(400)) }
                host = value
            case "content-length":
                // The inspector takes no request bodies.
                guard value == "0" else { return .failure(InspectorRefusal(413)) }
            case "transfer-encoding":
                return .failure(InspectorRefusal(501))
            default:
                break
            }
        }
        let (path, query) = splitTarget(target)
        guard let query else { return .failure(InspectorRefusal(400)) }
        return .success(HTTPRequestHead(method: method, path: path, query: query, host: host, version: version))
    }

    /// The path and the query's parameters (percent-decoded; nil when malformed).
    private static func splitTarget(_ target: String) -> (String, [String: String]?) {
        guard let mark = target.firstIndex(of: "?") else { return (target, [:]) }
        let path = String(target[target.startIndex..<mark])
        var query: [String: String] = [:]
        for pair in target[target.index(after: mark)...].split(separator: "&") {
            let kv = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = percentDecoded(kv[0]), let value = percentDecoded(kv.count > 1 ? kv[1] : "") else {
                return (path, nil)
            }
            // A repeated parameter is refused: which one counts would be ambiguous.
            guard query[name] == nil else { return (path, nil) }
            query[name] = value
        }
        return (path, query)
    }

    /// `text` with %XX decoded and "+" as a space; nil when malformed or not UTF-8.
    static func percentDecoded(_ text: Substring) -> String? {
        var bytes: [UInt8] = []
        var utf8 = text.utf8.makeIterator()
        while let byte = utf8.next() {
            switch byte {
            case UInt8(ascii: "%"):
                guard let high = utf8.next().flatMap(hexValue), let low = utf8.next().flatMap(hexValue) else { return nil }
                bytes.append(high << 4 | low)
            case UInt8(ascii: "+"):
                bytes.append(UInt8(ascii: " "))
            default:
                bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}

/// A request the inspector refuses, with the status it answers.
struct InspectorRefusal: Error {
    let status: Int
    init(_ status: Int) { self.status = status }
}

extension String {
    func trimmingTrailingBlanks() -> String {
        var s = self
        while let last = s.last, last == " " || last == "\t" { s.removeLast() }
        return s
    }
}
