import CLibUV

/// Where a Redis cache connects: a TCP host and port or a unix socket, an
/// optional user and password, and a database number.
///
/// Parsed from `redis://[[user]:password@]host[:port][/db]` or
/// `unix://[[user]:password@]/path[?db=N]`. `rediss://` (TLS) is refused
/// (see `isTLS`): the hiredis this library is built with has no TLS.
public struct RedisURL: Sendable, Equatable {
    /// Whether `url` asks for TLS (`rediss://`, in any case), which this
    /// build cannot give: Debian 12's hiredis 0.14 has no TLS. A TLS-only
    /// Redis is reached through a local tunnel that speaks TLS to it
    /// (stunnel, or `socat TCP-LISTEN:...,bind=127.0.0.1 OPENSSL:host:port`).
    public static func isTLS(_ url: String) -> Bool {
        url.utf8.prefix(9).map { $0 | 0x20 }.elementsEqual("rediss://".utf8.map { $0 | 0x20 })
    }

    /// Where the server listens.
    public enum Address: Sendable, Equatable {
        /// A host name or an IP address, and a port.
        case tcp(host: String, port: UInt16)
        /// A unix socket's path.
        case unix(path: String)
    }

    /// Where the server listens.
    public var address: Address
    /// The user of `AUTH user password` (Redis 6 ACLs); nil for `AUTH password`.
    public var user: String?
    /// The password; nil: no `AUTH`.
    public var password: String?
    /// The database `SELECT`ed after connecting.
    public var database: UInt32
    /// The seed nodes of a Redis Cluster (`redis+cluster://`), `address`
    /// being the first; empty for one server.
    public var cluster: [Address] = []

    /// The most seed nodes a `redis+cluster://` URL names.
    public static let maxSeeds = 64

    /// Parses `text`; nil when it is not a URL of a form above, or
    /// `redis+cluster://[[user]:password@]host[:port][,host[:port]...][/0]`:
    /// the seed nodes of a Redis Cluster (database 0 only, as a cluster has
    /// no other).
    public init?(_ text: String) {
        let bytes = Array(text.utf8)
        guard bytes.count <= 4096, !bytes.contains(0) else { return nil }
        if text.hasPrefix("redis+cluster://") {
            let rest = text.dropFirst("redis+cluster://".count)
            let authorityEnd = rest.firstIndex(where: { $0 == "/" || $0 == "?" }) ?? rest.endIndex
            let path = rest[authorityEnd...]
            guard path.isEmpty || path == "/" || path == "/0" else { return nil }
            var hosts = rest[..<authorityEnd]
            var credentials = Substring("")
            if let at = hosts.lastIndex(of: "@") {
                credentials = hosts[...at]
                hosts = hosts[hosts.index(after: at)...]
            }
            let parts = hosts.split(separator: ",", omittingEmptySubsequences: false)
            guard (1...RedisURL.maxSeeds).contains(parts.count) else { return nil }
            var seeds: [Address] = []
            var first: RedisURL?
            for part in parts {
                guard let one = RedisURL("redis://" + credentials + part) else { return nil }
                if first == nil { first = one }
                seeds.append(one.address)
            }
            guard var url = first else { return nil }
            url.cluster = seeds
            self = url
            return
        }
        let isUnix: Bool
        var rest: Substring
        if text.hasPrefix("redis://") {
            isUnix = false
            rest = text.dropFirst("redis://".count)
        } else if text.hasPrefix("unix://") {
            isUnix = true
            rest = text.dropFirst("unix://".count)
        } else {
            return nil
        }
        // Credentials: everything before the last '@' of the authority.
        var user: String?
        var password: String?
        let authorityEnd = isUnix ? (rest.firstIndex(of: "/") ?? rest.endIndex)
                                  : (rest.firstIndex(where: { $0 == "/" || $0 == "?" }) ?? rest.endIndex)
        if let at = rest[..<authorityEnd].lastIndex(of: "@") {
            let credentials = rest[..<at]
            if let colon = credentials.firstIndex(of: ":") {
                let u = credentials[..<colon]
                user = u.isEmpty ? nil : RedisURL.decode(u)
                guard let p = RedisURL.decode(credentials[credentials.index(after: colon)...]) else { return nil }
                password = p
            } else {
                // `redis://secret@host`: a password alone, as redis-cli reads it.
                guard let p = RedisURL.decode(credentials) else { return nil }
                password = p
            }
            rest = rest[rest.index(after: at)...]
        }
        var database: UInt32 = 0
        if isUnix {
            var path = rest
            if let q = rest.firstIndex(of: "?") {
                path = rest[..<q]
                let query = rest[rest.index(after: q)...]
                for pair in query.split(separator: "&") {
                    guard pair.hasPrefix("db="), let n = UInt32(pair.dropFirst(3)) else { return nil }
                    database = n
                }
            }
            guard path.first == "/", let decoded = RedisURL.decode(path), decoded.utf8.count < 108 else { return nil }
            address = .unix(path: decoded)
        } else {
            let slash = rest.firstIndex(of: "/") ?? rest.endIndex
            var hostPort = rest[..<slash]
            if slash < rest.endIndex {
                let db = rest[rest.index(after: slash)...]
                if !db.isEmpty {
                    guard let n = UInt32(db) else { return nil }
                    database = n
                }
            }
            var port: UInt16 = 6379
            var host: Substring
            if hostPort.first == "[" {
                // An IPv6 literal: [::1]:6379. Nothing else between brackets:
                // "[127.0.0.1:1]" would otherwise be a host name to resolve.
                guard let close = hostPort.firstIndex(of: "]") else { return nil }
                host = hostPort[hostPort.index(after: hostPort.startIndex)..<close]
                guard RedisURL.isIPv6(host) else { return nil }
                hostPort = hostPort[hostPort.index(after: close)...]
                if !hostPort.isEmpty {
                    guard hostPort.first == ":", let p = UInt16(hostPort.dropFirst()), p > 0 else { return nil }
                    port = p
                }
            } else if let colon = hostPort.lastIndex(of: ":") {
                host = hostPort[..<colon]
                guard let p = UInt16(hostPort[hostPort.index(after: colon)...]), p > 0 else { return nil }
                port = p
            } else {
                host = hostPort
            }
            guard !host.isEmpty, host.utf8.count <= 253,
                  host.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "." || $0 == "-" || $0 == ":" || $0 == "_" })
            else { return nil }
            address = .tcp(host: String(host), port: port)
        }
        self.user = user
        self.password = password
        self.database = database
    }

    /// Whether `text` is an IPv6 address as inet_pton reads one (no zone).
    private static func isIPv6(_ text: Substring) -> Bool {
        guard !text.isEmpty, text.utf8.count < 64 else { return false }
        var address = in6_addr()
        return String(text).withCString { uv_inet_pton(AF_INET6, $0, &address) } == 0
    }

    /// Decodes percent-escapes; nil for a malformed one or text that is not UTF-8.
    private static func decode(_ text: Substring) -> String? {
        var out: [UInt8] = []
        var bytes = Array(text.utf8)[...]
        while let b = bytes.popFirst() {
            guard b == UInt8(ascii: "%") else {
                out.append(b)
                continue
            }
            guard bytes.count >= 2, let hi = hexValue(bytes.removeFirst()), let lo = hexValue(bytes.removeFirst())
            else { return nil }
            out.append(hi << 4 | lo)
        }
        guard !out.contains(0) else { return nil }
        return String(validating: out, as: UTF8.self)
    }

    private static func hexValue(_ b: UInt8) -> UInt8? {
        switch b {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return b - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return b - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return b - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
