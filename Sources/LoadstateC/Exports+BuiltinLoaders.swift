import CLoadstateABI
@_spi(LoadstateC) import Loadstate
#if canImport(Glibc)
import Glibc
#endif

/// Reads an options struct whose first field is its size, as far as that
/// size says (see `readSized`): nil pointer gives nil, a size smaller than
/// `minimum` is invalid.
private func options<T>(_ pointer: UnsafePointer<T>?, minimum: Int) -> Result<T?, ResultCode> {
    guard let pointer else { return .success(nil) }
    let (value, size) = readSized(pointer)
    guard size >= minimum else { return .failure(.invalidArgument) }
    return .success(value)
}

/// Registers a built-in loader made by `make`, held to `limits`, named
/// `name` (a C string, validated here).
private func newLoader(_ rt: OpaquePointer?, _ out: UnsafeMutablePointer<UInt64>?, limits: LoaderLimits,
                       name: UnsafePointer<CChar>?, _ make: (UInt64) -> ByteLoader) -> Int32 {
    guard let out else { return LDS_EINVAL }
    let loaderName: String?
    switch copyName(name) {
    case .failure(let code): return code.rawValue
    case .success(let value): loaderName = value
    }
    return withRuntime(rt) { runtime in
        let loader = make(runtime.table.makeID(.loader))
        loader.name = loaderName
        loader.limit(limits, loop: runtime.loop)
        runtime.table.insert(loader)
        out.pointee = loader.id
        return LDS_OK
    }
}

/// Hands an encoded buffer to the caller, malloc'd.
private func giveBuffer(_ bytes: [UInt8], _ out: UnsafeMutablePointer<UnsafeMutableRawPointer?>,
                        _ outLength: UnsafeMutablePointer<Int>) -> Int32 {
    guard let memory = malloc(max(bytes.count, 1)) else { return LDS_ENOMEM }
    bytes.withUnsafeBytes { source in
        if let base = source.baseAddress { _ = memcpy(memory, base, source.count) }
    }
    out.pointee = memory
    outLength.pointee = bytes.count
    return LDS_OK
}

/// A NULL-terminated C string array as Swift strings: nil for NULL,
/// `.failure` when a string is not UTF-8 (it is refused, never repaired).
private func strings(_ list: UnsafePointer<UnsafePointer<CChar>?>?) -> Result<[String]?, ResultCode> {
    guard let list else { return .success(nil) }
    var result: [String] = []
    var i = 0
    while let item = list[i] {
        guard let text = String(validatingCString: item) else { return .failure(.invalidArgument) }
        result.append(text)
        i += 1
    }
    return .success(result)
}

/// A C string as a Swift string; nil when it is not UTF-8.
private func text(_ string: UnsafePointer<CChar>) -> String? {
    String(validatingCString: string)
}

@_cdecl("lds_free")
public func ldsFree(_ pointer: UnsafeMutableRawPointer?) {
    free(pointer)
}

@_cdecl("lds_file_loader_new")
public func ldsFileLoaderNew(_ rt: OpaquePointer?, _ opts: UnsafePointer<lds_file_options>?,
                             _ out: UnsafeMutablePointer<UInt64>?) -> Int32 {
    var o = FileLoader.Options()
    var limits = LoaderLimits()
    var name: UnsafePointer<CChar>?
    // The first version of the struct ended before the limits.
    let firstVersionSize = MemoryLayout<lds_file_options>.offset(of: \lds_file_options.max_concurrent)
        ?? MemoryLayout<lds_file_options>.size
    switch options(opts, minimum: firstVersionSize) {
    case .failure(let code): return code.rawValue
    case .success(let c):
        if let c {
            if c.chunk_size > 0 { o.chunkSize = Int(c.chunk_size) }
            if c.max_size > 0 { o.maxSize = c.max_size }
            limits = LoaderLimits(maxConcurrent: c.max_concurrent, ratePerSecond: c.rate_per_s, burst: c.burst)
            // Past a caller's size (before 0.5): NULL, no name.
            name = c.name
        }
    }
    return newLoader(rt, out, limits: limits, name: name) { FileLoader(id: $0, options: o) }
}

@_cdecl("lds_exec_loader_new")
public func ldsExecLoaderNew(_ rt: OpaquePointer?, _ opts: UnsafePointer<lds_exec_options>?,
                             _ out: UnsafeMutablePointer<UInt64>?) -> Int32 {
    var o = ExecLoader.Options()
    var limits = LoaderLimits()
    var name: UnsafePointer<CChar>?
    // The first version of the struct ended before the limits.
    let firstVersionSize = MemoryLayout<lds_exec_options>.offset(of: \lds_exec_options.max_concurrent)
        ?? MemoryLayout<lds_exec_options>.size
    switch options(opts, minimum: firstVersionSize) {
    case .failure(let code): return code.rawValue
    case .success(let c):
        if let c {
            guard c.flags & ~UInt32(LDS_EXEC_STREAM_LINES) == 0 else { return LDS_EINVAL }
            o.streamLines = c.flags & UInt32(LDS_EXEC_STREAM_LINES) != 0
            if c.kill_grace_ms > 0 { o.killGraceMs = UInt64(c.kill_grace_ms) }
            if c.max_output > 0 { o.maxOutput = Int(clamping: c.max_output) }
            limits = LoaderLimits(maxConcurrent: c.max_concurrent, ratePerSecond: c.rate_per_s, burst: c.burst)
            // Past a caller's size (before 0.5): NULL, no name.
            name = c.name
        }
    }
    return newLoader(rt, out, limits: limits, name: name) { ExecLoader(id: $0, options: o) }
}

@_cdecl("lds_exec_request_encode")
public func ldsExecRequestEncode(_ req: UnsafePointer<lds_exec_request>?,
                                 _ out: UnsafeMutablePointer<UnsafeMutableRawPointer?>?,
                                 _ outLength: UnsafeMutablePointer<Int>?) -> Int32 {
    guard let req, let out, let outLength else { return LDS_EINVAL }
    let c = req.pointee
    guard Int(c.size) >= MemoryLayout<lds_exec_request>.size,
          case .success(let list) = strings(c.argv), let argv = list, !argv.isEmpty,
          case .success(let environment) = strings(c.env) else { return LDS_EINVAL }
    var directory: String?
    if let cwd = c.cwd {
        guard let dir = text(cwd) else { return LDS_EINVAL }
        directory = dir
    }
    let request = ExecRequest(argv: argv, environment: environment, directory: directory)
    return giveBuffer(request.encoded(), out, outLength)
}

@_cdecl("lds_http_loader_new")
public func ldsHttpLoaderNew(_ rt: OpaquePointer?, _ opts: UnsafePointer<lds_http_options>?,
                             _ out: UnsafeMutablePointer<UInt64>?) -> Int32 {
    var o = HTTPLoader.Options()
    o.userAgent = "loadstate/\(LDS_VERSION_MAJOR).\(LDS_VERSION_MINOR).\(LDS_VERSION_PATCH)"
    // The first version of the struct ended before `proxy`.
    let proxyOffset = MemoryLayout<lds_http_options>.offset(of: \lds_http_options.proxy)!
    var limits = LoaderLimits()
    var name: UnsafePointer<CChar>?
    switch options(opts, minimum: proxyOffset) {
    case .failure(let code): return code.rawValue
    case .success(let c):
        if let c {
            // Fields past the caller's size read as 0 (readSized): no proxy
            // set, no limits.
            o.maxConnections = Int(c.max_connections)
            if let agent = c.user_agent {
                guard let value = text(agent) else { return LDS_EINVAL }
                o.userAgent = value
            }
            if let proxy = c.proxy {
                guard let value = text(proxy) else { return LDS_EINVAL }
                o.proxy = value
            }
            o.maxPerHost = Int(c.max_per_host)
            limits = LoaderLimits(maxConcurrent: c.max_concurrent, ratePerSecond: c.rate_per_s, burst: c.burst)
            // Past a caller's size (before 0.5): NULL, no name.
            name = c.name
        }
    }
    return newLoader(rt, out, limits: limits, name: name) { HTTPLoader(id: $0, options: o) }
}

@_cdecl("lds_http_request_encode")
public func ldsHttpRequestEncode(_ req: UnsafePointer<lds_http_request>?,
                                 _ out: UnsafeMutablePointer<UnsafeMutableRawPointer?>?,
                                 _ outLength: UnsafeMutablePointer<Int>?) -> Int32 {
    guard let req, let out, let outLength else { return LDS_EINVAL }
    // Read as far as its size says: the first version ended before ca_file.
    let (c, size) = readSized(req)
    let firstVersionSize = MemoryLayout<lds_http_request>.offset(of: \lds_http_request.ca_file)
        ?? MemoryLayout<lds_http_request>.size
    guard size >= firstVersionSize, let url = c.url else { return LDS_EINVAL }
    var caFile: String?
    if let file = c.ca_file {
        guard let path = text(file) else { return LDS_EINVAL }
        caFile = path
    }
    let known = UInt32(LDS_HTTP_INSECURE) | UInt32(LDS_HTTP_NO_REDIRECTS) | UInt32(LDS_HTTP_NO_COMPRESSION)
        | UInt32(LDS_HTTP_HTTP2) | UInt32(LDS_HTTP_HTTP1) | UInt32(LDS_HTTP_NO_HEURISTIC_FRESHNESS)
        | UInt32(LDS_HTTP_NO_STALE_ON_DISCONNECT)
    guard c.flags & ~known == 0 else { return LDS_EINVAL }
    let http2 = c.flags & UInt32(LDS_HTTP_HTTP2) != 0
    let http1 = c.flags & UInt32(LDS_HTTP_HTTP1) != 0
    guard !(http2 && http1) else { return LDS_EINVAL }
    var headers: [String] = []
    if c.header_count != 0 {
        guard let list = c.headers, c.header_count > 0, c.header_count <= 65536 else { return LDS_EINVAL }
        for i in 0..<c.header_count {
            guard let line = list[i], let header = text(line) else { return LDS_EINVAL }
            headers.append(header)
        }
    }
    let body: Bytes
    switch copyBytes(c.body, c.body_len) {
    case .success(let b): body = b
    case .failure(let code): return code.rawValue
    }
    let noRedirects = c.flags & UInt32(LDS_HTTP_NO_REDIRECTS) != 0
    var method = "GET"
    if let m = c.method {
        guard let name = text(m) else { return LDS_EINVAL }
        method = name
    }
    guard let urlText = text(url) else { return LDS_EINVAL }
    var request = HTTPRequest(method: method, url: urlText,
                              headers: headers, body: body, timeoutMs: c.timeout_ms, maxBody: c.max_body,
                              maxRedirects: noRedirects ? 0 : (c.max_redirects == 0 ? 5 : c.max_redirects),
                              insecure: c.flags & UInt32(LDS_HTTP_INSECURE) != 0,
                              compressed: c.flags & UInt32(LDS_HTTP_NO_COMPRESSION) == 0,
                              version: http2 ? .http2 : http1 ? .http1 : .automatic, caFile: caFile)
    request.heuristicFreshness = c.flags & UInt32(LDS_HTTP_NO_HEURISTIC_FRESHNESS) == 0
    request.staleOnDisconnect = c.flags & UInt32(LDS_HTTP_NO_STALE_ON_DISCONNECT) == 0
    guard request.problem == nil else { return LDS_EINVAL }
    return giveBuffer(request.encoded(), out, outLength)
}

@_cdecl("lds_http_response_decode")
public func ldsHttpResponseDecode(_ value: UnsafeRawPointer?, _ length: Int,
                                  _ out: UnsafeMutablePointer<lds_http_response>?) -> Int32 {
    guard let value, let out, length >= 12 else { return LDS_EINVAL }
    let bytes = UnsafeRawBufferPointer(start: value, count: length)
    guard let response = HTTPResponse(decoding: Array(bytes)) else { return LDS_EINVAL }
    // Point into the caller's buffer: the header field starts after magic,
    // status and its length; the body takes the rest.
    let headersStart = 12
    var r = lds_http_response()
    r.status = response.status
    r.headers = value.advanced(by: headersStart).assumingMemoryBound(to: CChar.self)
    r.headers_len = response.headers.count
    r.body = value.advanced(by: headersStart + response.headers.count)
    r.body_len = response.body.count
    out.pointee = r
    return LDS_OK
}
