/// What the http loader's cache says on a response it serves: `Age`
/// (RFC 9111 5.1) and the `loadstate` member of `Cache-Status` (RFC 9211).
extension HTTPResponse {
    /// Why the http loader's cache served a response: the `detail`
    /// parameter of the `loadstate` member of its `Cache-Status` field.
    public enum CacheVerdict: String, Sendable, Equatable, Hashable, CaseIterable {
        /// Within its explicit lifetime (the response's `max-age` or `Expires`).
        case fresh
        /// Fresh by the heuristic lifetime guessed from `Last-Modified`
        /// (RFC 9111 4.2.2).
        case heuristic
        /// Served stale: allowed by the request's `max-stale`, or the
        /// response's `stale-while-revalidate` or `stale-if-error`.
        case stale
        /// Stored, and confirmed by the server with a 304.
        case revalidated
    }

    /// The `Age` header in seconds: the response's current age when the
    /// cache served it (the cache writes it then), or what an upstream cache
    /// sent. The first header's first member is read (`"7200, 0"` is 7200);
    /// not digits, or no header: nil; values above 2^31 read as 2^31
    /// (RFC 9111 1.2.2).
    public var age: UInt32? {
        guard let value = header("Age") else { return nil }
        let first = value.split(separator: ",", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        return HTTPDeltaSeconds.parse(Substring(first.trimmingWhitespace()))
    }

    /// Why the http loader's cache served this response, or nil for a
    /// response loaded from the network and not from the cache. Read from
    /// the `detail` of the `loadstate` member of `Cache-Status`, which the
    /// cache adds (`Cache-Status: loadstate; hit; ttl=118; detail=fresh`),
    /// with a tolerant structured-field parse: members of other caches, on
    /// any `Cache-Status` line, are skipped; a member or `detail` that does
    /// not parse, or an unknown verdict, gives nil.
    public var cacheVerdict: CacheVerdict? {
        for value in headers(named: "Cache-Status") {
            if let found = CacheStatusReader.loadstateDetail(value) {
                return found.flatMap(CacheVerdict.init(rawValue:))
            }
        }
        return nil
    }
}

/// A tolerant reader of a structured-field list (RFC 8941): bare items
/// (tokens, integers, quoted strings) with `;key=value` parameters.
private struct CacheStatusReader {
    enum Item: Equatable {
        case token(String)
        case quoted(String)
        case integer
        case bad
    }

    let bytes: [UInt8]
    var at = 0

    /// `.some(detail)` for the first member that is the token `loadstate`
    /// (its `detail` as text, nil when absent or not a token or string);
    /// nil when the value has no such member.
    static func loadstateDetail(_ value: String) -> String?? {
        var r = CacheStatusReader(bytes: Array(value.utf8))
        while r.at < r.bytes.count {
            r.skip()
            let member = r.item()
            var good = member != .bad
            var detail: Item?
            r.skip()
            while r.peek == UInt8(ascii: ";") {
                r.at += 1
                r.skip()
                let key = r.item()
                r.skip()
                var param = Item.token("")
                if r.peek == UInt8(ascii: "=") {
                    r.at += 1
                    r.skip()
                    param = r.item()
                    r.skip()
                }
                if key == .token("detail"), detail == nil { detail = param }
            }
            if let b = r.peek, b != UInt8(ascii: ",") {
                good = false
                while let b = r.peek, b != UInt8(ascii: ",") {
                    if b == UInt8(ascii: "\"") { _ = r.item() } else { r.at += 1 }
                }
            }
            r.at += 1
            if good, member == .token("loadstate") {
                switch detail {
                case .token(let name)?, .quoted(let name)?: return .some(name)
                default: return .some(nil)
                }
            }
        }
        return nil
    }

    var peek: UInt8? { at < bytes.count ? bytes[at] : nil }

    mutating func skip() {
        while let b = peek, b == UInt8(ascii: " ") || b == UInt8(ascii: "\t") { at += 1 }
    }

    mutating func item() -> Item {
        if peek == UInt8(ascii: "\"") {
            at += 1
            var text: [UInt8] = []
            while let b = peek {
                at += 1
                if b == UInt8(ascii: "\"") { return .quoted(String(decoding: text, as: UTF8.self)) }
                if b == UInt8(ascii: "\\"), let next = peek {
                    text.append(next)
                    at += 1
                } else if b != UInt8(ascii: "\\") {
                    text.append(b)
                }
            }
            return .bad
        }
        let start = at
        while let b = peek, !";,= \t\"".utf8.contains(b) { at += 1 }
        let raw = bytes[start..<at]
        if raw.isEmpty { return .bad }
        let digits = raw.first == UInt8(ascii: "-") ? raw.dropFirst() : raw
        if !digits.isEmpty, digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) {
            return .integer
        }
        return .token(String(decoding: raw, as: UTF8.self))
    }
}
