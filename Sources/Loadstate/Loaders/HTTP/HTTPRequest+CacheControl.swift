/// A request's own cache directives (RFC 9111 5.2.1), sent as its
/// `Cache-Control` header and honoured by the http loader's cache.
extension HTTPRequest {
    /// The directives a request may send: `max-age`, `max-stale`,
    /// `min-fresh`, `no-cache`, `no-store`, `only-if-cached`. `description`
    /// is the header's value, in the properties' order (`"max-age=60,
    /// no-cache"`); no directive gives `""`.
    public struct CacheControl: Sendable, Equatable, Hashable, CustomStringConvertible {
        /// How stale a stored response the request accepts.
        public enum MaxStale: Sendable, Equatable, Hashable {
            /// However stale (`max-stale` without a value).
            case any
            /// Up to this many seconds past its lifetime (`max-stale=N`).
            case seconds(UInt32)
        }

        /// `max-age=N`: take a stored response only while its age is at most N seconds.
        public var maxAge: UInt32?
        /// `max-stale`: take a stale stored response too.
        public var maxStale: MaxStale?
        /// `min-fresh=N`: take a stored response only if it stays fresh N seconds more.
        public var minFresh: UInt32?
        /// `no-cache`: take no stored response without revalidating it with the server.
        public var noCache: Bool
        /// `no-store`: store neither the request nor its response.
        public var noStore: Bool
        /// `only-if-cached`: never reach the network; with no usable stored
        /// response the load fails with an HTTP 504.
        public var onlyIfCached: Bool

        /// Directives; none by default.
        public init(maxAge: UInt32? = nil, maxStale: MaxStale? = nil, minFresh: UInt32? = nil,
                    noCache: Bool = false, noStore: Bool = false, onlyIfCached: Bool = false) {
            self.maxAge = maxAge
            self.maxStale = maxStale
            self.minFresh = minFresh
            self.noCache = noCache
            self.noStore = noStore
            self.onlyIfCached = onlyIfCached
        }

        /// Whether no directive is set.
        public var isEmpty: Bool { self == CacheControl() }

        /// The `Cache-Control` value.
        public var description: String {
            var parts: [String] = []
            if let maxAge { parts.append("max-age=\(maxAge)") }
            switch maxStale {
            case .any?: parts.append("max-stale")
            case .seconds(let n)?: parts.append("max-stale=\(n)")
            case nil: break
            }
            if let minFresh { parts.append("min-fresh=\(minFresh)") }
            if noCache { parts.append("no-cache") }
            if noStore { parts.append("no-store") }
            if onlyIfCached { parts.append("only-if-cached") }
            return parts.joined(separator: ", ")
        }

        /// The directives of a `Cache-Control` request value, or nil when it
        /// holds anything else (an unknown directive, a bad or repeated
        /// number, a quoted value). Names in any case; numbers above 2^31
        /// read as 2^31 (RFC 9111 1.2.2).
        public init?(parsing value: String) {
            self.init()
            var seen: Set<String> = []
            for raw in value.split(separator: ",") {
                let part = Substring(raw).trimmingWhitespace()
                if part.isEmpty { continue }
                let pieces = part.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                let name = pieces.first.map { $0.lowercased() } ?? ""
                guard !seen.contains(name), name.trimmingWhitespaceCharacters() == name else { return nil }
                seen.insert(name)
                let seconds: UInt32?? = pieces.count == 2 ? .some(HTTPDeltaSeconds.parse(pieces[1])) : .none
                switch (name, seconds) {
                case ("max-age", .some(.some(let n))): maxAge = n
                case ("min-fresh", .some(.some(let n))): minFresh = n
                case ("max-stale", .some(.some(let n))): maxStale = .seconds(n)
                case ("max-stale", .none): maxStale = .any
                case ("no-cache", .none): noCache = true
                case ("no-store", .none): noStore = true
                case ("only-if-cached", .none): onlyIfCached = true
                default: return nil
                }
            }
        }
    }

    /// The request's cache directives, read from and written to its
    /// `Cache-Control` header line: nil when it has none, or more than one,
    /// or one that `CacheControl(parsing:)` does not read (that line is
    /// kept as it is in `headers`). Setting removes every `Cache-Control`
    /// line and appends `Cache-Control: <directives>`, unless the
    /// directives are nil or empty.
    public var cacheControl: CacheControl? {
        get {
            let lines = headers.filter(Self.isCacheControlLine)
            guard lines.count == 1, let line = lines.first, let colon = line.firstIndex(of: ":") else { return nil }
            return CacheControl(parsing: String(line[line.index(after: colon)...]))
        }
        set {
            headers.removeAll(where: Self.isCacheControlLine)
            if let newValue, !newValue.isEmpty { headers.append("Cache-Control: \(newValue)") }
        }
    }

    private static func isCacheControlLine(_ line: String) -> Bool {
        guard let colon = line.firstIndex(of: ":") else { return false }
        return line[..<colon].trimmingWhitespace().lowercased() == "cache-control"
    }
}

/// RFC 9111 delta-seconds: digits only, saturated at 2^31.
enum HTTPDeltaSeconds {
    static let max: UInt32 = 1 << 31

    static func parse(_ text: Substring) -> UInt32? {
        guard !text.isEmpty else { return nil }
        var value: UInt32 = 0
        for byte in text.utf8 {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            let (times, o1) = value.multipliedReportingOverflow(by: 10)
            let (sum, o2) = times.addingReportingOverflow(UInt32(byte - UInt8(ascii: "0")))
            value = o1 || o2 || sum > max ? max : sum
        }
        return value
    }
}

extension String {
    fileprivate func trimmingWhitespaceCharacters() -> String {
        Substring(self).trimmingWhitespace()
    }
}
