import CLoadstateABI
@_spi(LoadstateC) import Loadstate
#if canImport(Glibc)
import Glibc
#endif

// Decoders of the built-in loaders' requests: the counterparts of
// lds_exec_request_encode and lds_http_request_encode. They parse with the
// loaders' own decoders (ExecRequest, HTTPRequest) and hand the caller one
// malloc'd block holding the pointer arrays first, then every string
// NUL-terminated, then the body; the block's start is the request's first
// array (argv, headers), which the clear functions free.

/// Lays strings (and one trailing byte run) out after `slots` pointers in
/// one block; nil when malloc fails.
private struct Block {
    let memory: UnsafeMutableRawPointer
    private var cursor: Int

    /// Room for `slots` pointers and `bytes` bytes of strings and body.
    init?(slots: Int, bytes: Int) {
        let start = slots * MemoryLayout<UnsafePointer<CChar>?>.stride
        guard let memory = malloc(max(start + bytes, 1)) else { return nil }
        self.memory = memory
        cursor = start
    }

    /// Pointer slot `index` of the arrays at the block's start.
    func setSlot(_ index: Int, _ value: UnsafePointer<CChar>?) {
        memory.storeBytes(of: value, toByteOffset: index * MemoryLayout<UnsafePointer<CChar>?>.stride,
                          as: UnsafePointer<CChar>?.self)
    }

    /// The address of slot `index`, as an array that starts there.
    func array(at index: Int) -> UnsafePointer<UnsafePointer<CChar>?> {
        UnsafePointer(memory.advanced(by: index * MemoryLayout<UnsafePointer<CChar>?>.stride)
            .assumingMemoryBound(to: UnsafePointer<CChar>?.self))
    }

    /// Copies `text` with a NUL after it.
    mutating func string(_ text: String) -> UnsafePointer<CChar> {
        let start = memory.advanced(by: cursor)
        var utf8 = Array(text.utf8)
        utf8.append(0)
        _ = bytes(utf8)
        return UnsafePointer(start.assumingMemoryBound(to: CChar.self))
    }

    /// Copies `bytes` as they are.
    mutating func bytes(_ bytes: [UInt8]) -> UnsafeRawPointer {
        let start = memory.advanced(by: cursor)
        bytes.withUnsafeBytes { source in
            if let base = source.baseAddress { _ = memcpy(start, base, source.count) }
        }
        cursor += bytes.count
        return UnsafeRawPointer(start)
    }
}

/// Zeroes a request struct, padding included, so that a failed decode
/// leaves no byte of what was there.
private func zero<T>(_ pointer: UnsafeMutablePointer<T>) {
    _ = memset(pointer, 0, MemoryLayout<T>.size)
}

/// Bytes a string takes in a block, NUL included.
private func room(_ text: String?) -> Int { text.map { $0.utf8.count + 1 } ?? 0 }


/// The most header lines an encoded http request may hold, as
/// lds_http_request_encode allows.
private let headerLinesMax = 65536

@_cdecl("lds_exec_request_decode")
public func ldsExecRequestDecode(_ request: UnsafeRawPointer?, _ length: Int,
                                 _ out: UnsafeMutablePointer<lds_exec_request>?) -> Int32 {
    guard let out else { return LDS_EINVAL }
    zero(out)
    let bytes: Bytes
    // LDS_EINVAL for NULL with a length, LDS_ETOOBIG past LDS_VALUE_MAX.
    switch copyBytes(request, length) {
    case .failure(let code): return code.rawValue
    case .success(let b): bytes = b
    }
    guard let decoded = ExecRequest(decoding: bytes) else { return LDS_EINVAL }
    let argc = decoded.argv.count
    let envc = decoded.environment.map { $0.count + 1 } ?? 0
    let stringBytes = decoded.argv.reduce(0) { $0 + room($1) }
        + (decoded.environment ?? []).reduce(0) { $0 + room($1) } + room(decoded.directory)
    guard var block = Block(slots: argc + 1 + envc, bytes: stringBytes) else { return LDS_ENOMEM }
    for (i, arg) in decoded.argv.enumerated() { block.setSlot(i, block.string(arg)) }
    block.setSlot(argc, nil)
    var r = lds_exec_request()
    r.size = UInt32(MemoryLayout<lds_exec_request>.size)
    r.argv = block.array(at: 0)
    if let environment = decoded.environment {
        let first = argc + 1
        for (i, entry) in environment.enumerated() { block.setSlot(first + i, block.string(entry)) }
        block.setSlot(first + environment.count, nil)
        r.env = block.array(at: first)
    }
    if let directory = decoded.directory { r.cwd = block.string(directory) }
    out.pointee = r
    return LDS_OK
}

@_cdecl("lds_exec_request_clear")
public func ldsExecRequestClear(_ req: UnsafeMutablePointer<lds_exec_request>?) {
    guard let req else { return }
    free(UnsafeMutableRawPointer(mutating: req.pointee.argv))
    zero(req)
}

@_cdecl("lds_http_request_decode")
public func ldsHttpRequestDecode(_ request: UnsafeRawPointer?, _ length: Int,
                                 _ out: UnsafeMutablePointer<lds_http_request>?) -> Int32 {
    guard let out else { return LDS_EINVAL }
    zero(out)
    let bytes: Bytes
    // LDS_EINVAL for NULL with a length, LDS_ETOOBIG past LDS_VALUE_MAX.
    switch copyBytes(request, length) {
    case .failure(let code): return code.rawValue
    case .success(let b): bytes = b
    }
    // The loader's decoder, then the checks the loader and the encoder
    // make: what decodes here is what the loader would send.
    guard let decoded = HTTPRequest(decoding: bytes) else { return LDS_EINVAL }
    guard decoded.headers.count <= headerLinesMax else { return LDS_ETOOBIG }
    guard decoded.problem == nil else { return LDS_EINVAL }
    let count = decoded.headers.count
    let stringBytes = room(decoded.method) + room(decoded.url) + decoded.headers.reduce(0) { $0 + room($1) }
        + room(decoded.caFile) + decoded.body.count
    guard var block = Block(slots: count + 1, bytes: stringBytes) else { return LDS_ENOMEM }
    var r = lds_http_request()
    r.size = UInt32(MemoryLayout<lds_http_request>.size)
    for (i, line) in decoded.headers.enumerated() { block.setSlot(i, block.string(line)) }
    block.setSlot(count, nil)
    r.headers = block.array(at: 0)
    r.header_count = count
    r.method = block.string(decoded.method)
    r.url = block.string(decoded.url)
    if let caFile = decoded.caFile { r.ca_file = block.string(caFile) }
    r.body = block.bytes(decoded.body)
    r.body_len = decoded.body.count
    r.timeout_ms = decoded.timeoutMs
    r.max_body = decoded.maxBody
    r.max_redirects = decoded.maxRedirects
    var flags: UInt32 = 0
    if decoded.maxRedirects == 0 { flags |= UInt32(LDS_HTTP_NO_REDIRECTS) }
    if decoded.insecure { flags |= UInt32(LDS_HTTP_INSECURE) }
    if !decoded.compressed { flags |= UInt32(LDS_HTTP_NO_COMPRESSION) }
    switch decoded.version {
    case .http2: flags |= UInt32(LDS_HTTP_HTTP2)
    case .http1: flags |= UInt32(LDS_HTTP_HTTP1)
    case .automatic: break
    }
    if !decoded.heuristicFreshness { flags |= UInt32(LDS_HTTP_NO_HEURISTIC_FRESHNESS) }
    if !decoded.staleOnDisconnect { flags |= UInt32(LDS_HTTP_NO_STALE_ON_DISCONNECT) }
    r.flags = flags
    out.pointee = r
    return LDS_OK
}

@_cdecl("lds_http_request_clear")
public func ldsHttpRequestClear(_ req: UnsafeMutablePointer<lds_http_request>?) {
    guard let req else { return }
    free(UnsafeMutableRawPointer(mutating: req.pointee.headers))
    zero(req)
}
