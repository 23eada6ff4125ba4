#if canImport(Glibc)
import Glibc
#endif

/// Debian's nginx, started once for the HTTP/2 tests by
/// `Tests/support/nginx_server.py` on 127.0.0.1 with a self-signed
/// certificate of its own; it stops when the test process exits (its
/// stdin closes). Every answer names its connection (X-Connection) and
/// protocol (X-Protocol).
final class TestNginx: @unchecked Sendable {
    static let shared = TestNginx()

    /// HTTPS with HTTP/2 by ALPN, cleartext HTTP/2 only, cleartext HTTP/1.1.
    let tlsPort: Int
    let h2cPort: Int
    let plainPort: Int
    /// The certificate to trust (`HTTPRequest.caFile`).
    let caFile: String
    private let stdinWrite: Int32

    private init() {
        let (stdin, text) = startSupportScript("nginx_server.py", what: "nginx")
        stdinWrite = stdin
        func value(_ name: String) -> String {
            guard let start = text.range(of: "\"\(name)\": ")?.upperBound else { return "" }
            let rest = text[start...]
            let end = rest.firstIndex(where: { $0 == "," || $0 == "}" }) ?? rest.endIndex
            return String(rest[..<end]).trimmingCharacters(in: "\" ")
        }
        tlsPort = Int(value("tls")) ?? 0
        h2cPort = Int(value("h2c")) ?? 0
        plainPort = Int(value("plain")) ?? 0
        caFile = value("ca")
        precondition(tlsPort > 0 && h2cPort > 0 && plainPort > 0, "nginx gave no ports: \(text)")
    }

    func https(_ path: String) -> String { "https://127.0.0.1:\(tlsPort)\(path)" }
    func h2c(_ path: String) -> String { "http://127.0.0.1:\(h2cPort)\(path)" }
}

private extension String {
    func trimmingCharacters(in set: String) -> String {
        var s = self[...]
        while let f = s.first, set.contains(f) { s = s.dropFirst() }
        while let l = s.last, set.contains(l) { s = s.dropLast() }
        return String(s)
    }

    func range(of needle: String) -> Range<String.Index>? {
        var start = startIndex
        while start < endIndex {
            if self[start...].hasPrefix(needle) { return start..<index(start, offsetBy: needle.count) }
            start = index(after: start)
        }
        return nil
    }
}
