/// What the http loader fetches. Encoded as a byte-string request:
///
///     "LDH1"  field method  field url  list headers  field body
///             u32 timeout_ms  u64 max_body  u32 max_redirects  u32 flags
///
/// Flags: the C API's `LDS_HTTP_*` bits but LDS_HTTP_NO_REDIRECTS (which is
/// `max_redirects` 0): bit 0 skips TLS verification, bit 2 asks for no
/// compressed response, bit 3 for HTTP/2, bit 4 for HTTP/1.1 only, bit 5
/// turns heuristic freshness off, bit 6 serving stale on a disconnect;
/// other bits are ignored. Then, optionally (since 0.4), `field ca_file`: present
/// only when the request names a CA file.
/// (fields and lists as in `ExecRequest`; integers little-endian).
public struct HTTPRequest: Sendable, Equatable {
    /// The method, an HTTP token (`GET`, `POST`, ...).
    public var method: String
    /// An http or https URL.
    public var url: String
    /// "Name: value" lines.
    public var headers: [String]
    /// The request body (empty: none).
    public var body: [UInt8]
    /// 0: no limit of the request's own (the load's timeout still applies).
    public var timeoutMs: UInt32
    /// The largest body accepted; 0 means the library's maximum value size.
    public var maxBody: UInt64
    /// Redirects followed (between http and https only).
    public var maxRedirects: UInt32
    /// Skip TLS certificate and host verification.
    public var insecure: Bool
    /// Ask for a compressed response (every encoding libcurl decodes) and
    /// decode it; `maxBody` bounds the decoded body.
    public var compressed: Bool
    /// Which HTTP version to speak.
    public var version: Version
    /// A file of CA certificates (PEM) to verify the server with, in place
    /// of the system's; nil for the system's.
    public var caFile: String?
    /// Whether a cache may give this request's responses a lifetime of its
    /// own guess when they have none (RFC 9111 section 4.2.2: a tenth of
    /// the time since their `Last-Modified`, at most a day). Flag bit 5
    /// (`LDS_HTTP_NO_HEURISTIC_FRESHNESS`) turns it off.
    public var heuristicFreshness: Bool = true
    /// Whether a stale stored response stands in for this request when the
    /// server cannot be reached or closes the connection without an
    /// answer (RFC 9111 section 4.2.4), unless the response forbids it.
    /// Flag bit 6 (`LDS_HTTP_NO_STALE_ON_DISCONNECT`) turns it off.
    public var staleOnDisconnect: Bool = true

    /// The HTTP versions a request may ask for.
    public enum Version: Sendable, Equatable {
        /// libcurl's choice: HTTP/2 over TLS when the server offers it
        /// (ALPN), HTTP/1.1 otherwise.
        case automatic
        /// HTTP/1.1 only.
        case http1
        /// HTTP/2, multiplexed: by ALPN over TLS (HTTP/1.1 when the server
        /// does not offer HTTP/2), with prior knowledge in cleartext (the
        /// server must speak it).
        case http2
    }

    /// A request; only `url` is needed for a GET.
    public init(method: String = "GET", url: String, headers: [String] = [], body: [UInt8] = [],
                timeoutMs: UInt32 = 0, maxBody: UInt64 = 0, maxRedirects: UInt32 = 5, insecure: Bool = false,
                compressed: Bool = true, version: Version = .automatic, caFile: String? = nil,
                heuristicFreshness: Bool = true) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeoutMs = timeoutMs
        self.maxBody = maxBody
        self.maxRedirects = maxRedirects
        self.insecure = insecure
        self.compressed = compressed
        self.version = version
        self.caFile = caFile
        self.heuristicFreshness = heuristicFreshness
    }

    static let magic = "LDH1"
    /// Flag bit: skip TLS verification.
    @usableFromInline package static let insecureFlag: UInt32 = 1
    /// Flag bit: ask for no compressed response.
    @usableFromInline package static let identityFlag: UInt32 = 4
    /// Flag bits: HTTP/2, and HTTP/1.1 only.
    @usableFromInline package static let http2Flag: UInt32 = 8
    @usableFromInline package static let http1Flag: UInt32 = 16
    /// Flag bits: no heuristic freshness, no stale response on a disconnect.
    @usableFromInline package static let noHeuristicFlag: UInt32 = 32
    @usableFromInline package static let noStaleOnDisconnectFlag: UInt32 = 64

    @usableFromInline package func encoded() -> [UInt8] {
        var w = WireWriter(magic: Self.magic)
        w.field(Array(method.utf8))
        w.field(Array(url.utf8))
        w.list(headers.map { Array($0.utf8) })
        w.field(body)
        w.u32(timeoutMs)
        w.u64(maxBody)
        w.u32(maxRedirects)
        let versionFlag = version == .http2 ? Self.http2Flag : version == .http1 ? Self.http1Flag : 0
        w.u32((insecure ? Self.insecureFlag : 0) | (compressed ? 0 : Self.identityFlag) | versionFlag
              | (heuristicFreshness ? 0 : Self.noHeuristicFlag) | (staleOnDisconnect ? 0 : Self.noStaleOnDisconnectFlag))
        if let caFile { w.field(Array(caFile.utf8)) }
        return w.bytes
    }

    /// Nil when the bytes are not a well-formed request.
    @usableFromInline package init?(decoding bytes: [UInt8]) {
        guard var r = WireReader(bytes, magic: Self.magic),
              let method = r.text(), let url = r.text() ?? nil,
              let headers = r.list(), let body = r.field(),
              let timeout = r.u32(), let maxBody = r.u64(), let redirects = r.u32(), let flags = r.u32()
        else { return nil }
        let text = { (b: [UInt8]) -> String? in b.contains(0) ? nil : String(validating: b, as: UTF8.self) }
        self.url = url
        self.method = method ?? "GET"
        var lines: [String] = []
        for h in headers ?? [] {
            guard let line = text(h), !h.contains(10), !h.contains(13) else { return nil }
            lines.append(line)
        }
        self.headers = lines
        self.body = body ?? []
        timeoutMs = timeout
        self.maxBody = maxBody
        maxRedirects = redirects
        insecure = flags & Self.insecureFlag != 0
        compressed = flags & Self.identityFlag == 0
        version = flags & Self.http2Flag != 0 ? .http2 : flags & Self.http1Flag != 0 ? .http1 : .automatic
        heuristicFreshness = flags & Self.noHeuristicFlag == 0
        staleOnDisconnect = flags & Self.noStaleOnDisconnectFlag == 0
        if r.rest.isEmpty {
            caFile = nil
        } else {
            guard let file = r.text(), let present = file, r.rest.isEmpty else { return nil }
            caFile = present
        }
    }
}

extension HTTPRequest {
    /// Why the request cannot be sent as it is, or nil when it can: the
    /// method must be an HTTP token (RFC 9110 `tchar`s), the URL must hold
    /// no control character or space, and every header line must be
    /// `Name: value` with a token name and a value holding no control
    /// character but tab. A request with CR or LF in any of them would
    /// write lines of its own into the request.
    package var problem: String? {
        if !Self.isToken(method.utf8[...]) {
            return "the method is not an HTTP token: \(method.debugDescription)"
        }
        if url.utf8.contains(where: { $0 <= 0x20 || $0 == 0x7F }) {
            return "the URL holds a control character or space: \(url.debugDescription)"
        }
        for line in headers {
            let bytes = line.utf8
            guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")), Self.isToken(bytes[..<colon]),
                  !bytes[bytes.index(after: colon)...].contains(where: { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F })
            else { return "not a header line (Name: value): \(line.debugDescription)" }
        }
        return nil
    }

    /// Whether the bytes are a token: one or more `tchar`s.
    static func isToken(_ bytes: Substring.UTF8View) -> Bool {
        !bytes.isEmpty && bytes.allSatisfy { isTokenByte[Int($0)] }
    }

    private static let isTokenByte: [Bool] = (0..<256).map { b in
        switch UInt8(b) {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "z"),
             UInt8(ascii: "A")...UInt8(ascii: "Z"):
            return true
        default:
            return "!#$%&'*+-.^_`|~".utf8.contains(UInt8(b))
        }
    }
}

/// What the http loader produces: the final response's status, its header
/// lines and its body. Encoded as the loaded value:
///
///     "LDR1"  i32 status  field headers  then the body to the end
public struct HTTPResponse: Sendable, Equatable {
    /// The final response's status code.
    public var status: Int32
    /// The raw header lines of the final response, CRLF-separated.
    public var headers: [UInt8]
    /// The body of the final response.
    public var body: [UInt8]

    /// A response with these parts.
    public init(status: Int32, headers: [UInt8], body: [UInt8]) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    static let magic = "LDR1"

    @usableFromInline package func encoded() -> [UInt8] {
        var w = WireWriter(magic: Self.magic, capacity: 8 + headers.count + body.count)
        w.i32(status)
        w.field(headers)
        w.rest(body)
        return w.bytes
    }

    /// The start of an encoding built in place (by the HTTP loader, as the
    /// response arrives): the magic, then room for the status and the
    /// headers' length; the header lines and the body follow.
    static func encodingStart(capacity: Int = 512) -> [UInt8] {
        var bytes = WireWriter(magic: magic, capacity: max(capacity, encodedHeadersStart)).bytes
        bytes.append(contentsOf: repeatElement(0, count: 8))
        return bytes
    }

    /// Where the header lines begin in an encoding: after the magic, the
    /// status and the headers' length.
    static let encodedHeadersStart = magic.utf8.count + 8

    /// Fills in the status and the headers' length (they end at
    /// `headersEnd`) of an encoding begun with `encodingStart`: the result
    /// equals `encoded()` of the same response.
    static func finishEncoding(_ bytes: inout [UInt8], status: Int32, headersEnd: Int) {
        let start = magic.utf8.count
        let length = UInt32(headersEnd - encodedHeadersStart)
        withUnsafeBytes(of: UInt32(bitPattern: status).littleEndian) { bytes.replaceSubrange(start..<start + 4, with: $0) }
        withUnsafeBytes(of: length.littleEndian) { bytes.replaceSubrange(start + 4..<start + 8, with: $0) }
    }

    @usableFromInline package init?(decoding bytes: [UInt8]) {
        guard var r = WireReader(bytes, magic: Self.magic), let status = r.i32(), let headers = r.field() ?? nil
        else { return nil }
        self.status = status
        self.headers = headers
        body = Array(r.rest)
    }

    /// The value of the first header with this name (case-insensitive).
    public func header(_ name: String) -> String? {
        let text = String(decoding: headers, as: UTF8.self)
        for line in text.split(separator: "\r\n", omittingEmptySubsequences: true) {
            guard let colon = line.firstIndex(of: ":") else { continue }
            if line[..<colon].lowercased() == name.lowercased() {
                return line[line.index(after: colon)...].trimmingWhitespace()
            }
        }
        return nil
    }
}

extension Substring {
    func trimmingWhitespace() -> String {
        var s = self[...]
        while let f = s.first, f == " " || f == "\t" { s = s.dropFirst() }
        while let l = s.last, l == " " || l == "\t" || l == "\r" || l == "\n" { s = s.dropLast() }
        return String(s)
    }
}
