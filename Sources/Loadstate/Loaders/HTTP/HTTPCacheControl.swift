/// The `Cache-Control` directives (RFC 9111 section 5.2) the http loader
/// acts on, read from every `Cache-Control` line of a message.
///
/// Parsing is forgiving and bounded: directives are split at commas
/// outside quoted strings; names compare without regard to case; a
/// delta-seconds argument is a run of ASCII digits, saturated at 2^31
/// seconds as RFC 9111 section 1.2.2 asks, and a directive whose argument
/// is anything else (a sign, a fraction, garbage) is ignored. When a
/// directive comes twice, the smaller number counts (the more cautious).
struct HTTPCacheControl: Equatable {
    /// `s-maxage` and `proxy-revalidate` are for shared caches: a private
    /// cache such as this one ignores them (RFC 9111 sections 5.2.2.8, 5.2.2.10).
    var maxAgeSeconds: UInt64?
    var staleWhileRevalidateSeconds: UInt64?
    var staleIfErrorSeconds: UInt64?
    var noStore = false
    var noCache = false
    var mustRevalidate = false

    /// RFC 9111 section 1.2.2: delta-seconds past 2^31 count as 2^31.
    static let deltaSecondsMax: UInt64 = 1 << 31

    init() {}

    init(_ values: [ArraySlice<UInt8>]) {
        for value in values {
            Self.directives(value) { name, argument in apply(name, argument) }
        }
    }

    private mutating func apply(_ name: ArraySlice<UInt8>, _ argument: ArraySlice<UInt8>?) {
        func seconds() -> UInt64? {
            guard let argument, let n = RetryAfter.digits(argument) else { return nil }
            return min(n, Self.deltaSecondsMax)
        }
        func smaller(_ old: UInt64?, _ new: UInt64?) -> UInt64? {
            guard let new else { return old }
            return min(old ?? new, new)
        }
        let lower = Array(name.map(HTTPHeaderLines.lower))
        switch String(decoding: lower, as: UTF8.self) {
        case "max-age": maxAgeSeconds = smaller(maxAgeSeconds, seconds())
        case "stale-while-revalidate":
            staleWhileRevalidateSeconds = smaller(staleWhileRevalidateSeconds, seconds())
        case "stale-if-error": staleIfErrorSeconds = smaller(staleIfErrorSeconds, seconds())
        case "no-store": noStore = true
        // A no-cache with field names (`no-cache="Set-Cookie"`) is taken
        // as the plain one, as RFC 9111 section 5.2.2.4 allows.
        case "no-cache": noCache = true
        case "must-revalidate": mustRevalidate = true
        default: break
        }
    }

    /// Calls `body` with the name and argument (quotes removed) of each
    /// directive of one header value.
    static func directives(_ value: ArraySlice<UInt8>,
                           _ body: (_ name: ArraySlice<UInt8>, _ argument: ArraySlice<UInt8>?) -> Void) {
        var start = value.startIndex
        while start < value.endIndex {
            // The end of this directive: the next comma outside quotes.
            var end = start
            var quoted = false
            while end < value.endIndex {
                let c = value[end]
                if c == UInt8(ascii: "\"") { quoted.toggle() }
                if c == UInt8(ascii: "\\") && quoted && end + 1 < value.endIndex { end += 1 }
                if c == UInt8(ascii: ",") && !quoted { break }
                end += 1
            }
            let item = HTTPHeaderLines.trimmed(value[start..<end])
            if !item.isEmpty {
                if let equals = item.firstIndex(of: UInt8(ascii: "=")) {
                    var argument = HTTPHeaderLines.trimmed(item[(equals + 1)...])
                    if argument.count >= 2, argument.first == UInt8(ascii: "\""), argument.last == UInt8(ascii: "\"") {
                        argument = argument.dropFirst().dropLast()
                    }
                    body(HTTPHeaderLines.trimmed(item[..<equals]), argument)
                } else {
                    body(item, nil)
                }
            }
            start = end < value.endIndex ? end + 1 : end
        }
    }
}
