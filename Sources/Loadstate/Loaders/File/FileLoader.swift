import CLibUV
#if canImport(Glibc)
import Glibc
#endif

/// Reads files with libuv's fs calls (run on libuv's thread pool, reported
/// on the loop). The request is the path; the value is the file's bytes.
///
/// Progress is reported in bytes. A missing or unreadable file fails in
/// the os domain with the errno and the path in the message; a file over
/// `maxSize` fails with `ResultCode.tooBig`. Cancelling stops between two
/// reads and closes the file.
///
/// Only regular files are read. The open is non-blocking (opening a FIFO
/// with no writer, or a device, must not hold a thread-pool worker, and
/// with it the runtime's close), then fstat tells the type: a directory
/// fails in the os domain with EISDIR, any other file that is not regular
/// (FIFO, socket, device) fails with `ResultCode.invalidArgument`.
@_spi(LoadstateC) public final class FileLoader: Loader<[UInt8], [UInt8]>, @unchecked Sendable {
    @usableFromInline package struct Options: Sendable {
        /// The largest file accepted, in bytes.
        @usableFromInline package var maxSize: UInt64
        /// Bytes per read (4 KiB to 64 MiB; outside values are brought within).
        @usableFromInline package var chunkSize: Int

        @usableFromInline package init(maxSize: UInt64 = 256 << 20, chunkSize: Int = 256 << 10) {
            self.maxSize = maxSize
            self.chunkSize = chunkSize
        }
    }

    @usableFromInline package let options: Options

    @usableFromInline package init(id: UInt64, options: Options = Options()) {
        self.options = options
        super.init(id: id)
    }

    @_spi(LoadstateC) public override func start(_ job: Job<[UInt8], [UInt8]>, runtime: Runtime) {
        let read = FileRead(job: job, runtime: runtime, options: options)
        job.onLoopCancel = { read.cancel() }
        read.open()
    }
}

/// One file read, step by step on the loop thread: open, fstat, read
/// until end of file, close. It keeps itself alive while a request is out.
final class FileRead {
    private let job: Job<[UInt8], [UInt8]>
    private let runtime: Runtime
    private let options: FileLoader.Options
    private let path: String
    private let request: UnsafeMutablePointer<uv_fs_t>
    private var file: Int32 = -1
    private var total: UInt64 = 0
    private var contents: [UInt8] = []
    private var chunk: UnsafeMutableRawBufferPointer
    private var cancelled = false
    private var outcome: JobOperation<[UInt8]>?
    /// The most memory reserved ahead from the size fstat gives.
    private static let reserveLimit: UInt64 = 64 << 20
    /// The largest read buffer, whatever `chunkSize` asks.
    private static let chunkLimit = 64 << 20

    init(job: Job<[UInt8], [UInt8]>, runtime: Runtime, options: FileLoader.Options) {
        self.job = job
        self.runtime = runtime
        self.options = options
        // For messages; the file is opened by the request's bytes.
        path = String(decoding: job.request, as: UTF8.self)
        request = .allocate(capacity: 1)
        chunk = .allocate(byteCount: min(max(options.chunkSize, 4096), FileRead.chunkLimit), alignment: 16)
    }

    deinit {
        request.deallocate()
        chunk.deallocate()
    }

    func cancel() {
        cancelled = true
    }

    func open() {
        guard !job.request.isEmpty, !job.request.contains(0) else {
            return finish(.fail(LoadError(.invalidArgument, message: "invalid path"), retry: .never))
        }
        let flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK
        // The request's own bytes, not its text: a path need not be UTF-8
        // (libuv copies it).
        let path = job.request + [0]
        submitRequest { loop, req, cb in
            path.withUnsafeBufferPointer { bytes in
                bytes.withMemoryRebound(to: CChar.self) { uv_fs_open(loop, req, $0.baseAddress, flags, 0, cb) }
            }
        } then: { me, result in
            guard result >= 0 else { return me.finish(me.osFailure(result, "open")) }
            me.file = Int32(truncatingIfNeeded: result)
            guard !me.cancelled else { return me.close() }
            me.stat()
        }
    }

    private func stat() {
        submitRequest { loop, req, cb in uv_fs_fstat(loop, req, self.file, cb) } then: { me, result in
            guard result >= 0 else { return me.finish(me.osFailure(result, "stat")) }
            let type = me.request.pointee.statbuf.st_mode & UInt64(Glibc.S_IFMT)
            if type == UInt64(Glibc.S_IFDIR) {
                return me.finish(me.osFailure(-Int(EISDIR), "read"))
            }
            guard type == UInt64(Glibc.S_IFREG) else {
                return me.finish(.fail(LoadError(.invalidArgument, message: "\(me.path): not a regular file"),
                                       retry: .never))
            }
            // O_NONBLOCK was for the open only.
            let status = fcntl(me.file, F_GETFL)
            if status >= 0 { _ = fcntl(me.file, F_SETFL, status & ~O_NONBLOCK) }
            me.total = me.request.pointee.statbuf.st_size
            guard me.total <= me.options.maxSize else { return me.finish(me.tooBig()) }
            // The size is a hint (the file may change): at most
            // `reserveLimit` bytes are reserved from it.
            me.contents.reserveCapacity(Int(clamping: min(me.total, FileRead.reserveLimit)))
            me.runtime.submit(.progress(done: 0, total: me.total), job: me.job.id, of: Job<[UInt8], [UInt8]>.self)
            me.readNext()
        }
    }

    private func readNext() {
        guard !cancelled else { return close() }
        let offset = Int64(contents.count)
        submitRequest { loop, req, cb in
            var buffer = uv_buf_init(self.chunk.baseAddress!.assumingMemoryBound(to: CChar.self),
                                     UInt32(clamping: self.chunk.count))
            return uv_fs_read(loop, req, self.file, &buffer, 1, offset, cb)
        } then: { me, result in
            guard result >= 0 else { return me.finish(me.osFailure(result, "read")) }
            if result == 0 {
                return me.finish(.succeed(me.contents))
            }
            me.contents.append(contentsOf: UnsafeRawBufferPointer(rebasing: me.chunk[0..<result]))
            guard UInt64(me.contents.count) <= me.options.maxSize else { return me.finish(me.tooBig()) }
            let done = UInt64(me.contents.count)
            me.runtime.submit(.progress(done: done, total: max(me.total, done)), job: me.job.id,
                              of: Job<[UInt8], [UInt8]>.self)
            me.readNext()
        }
    }

    /// Ends the read: closes the file, then reports the outcome.
    private func finish(_ op: JobOperation<[UInt8]>) {
        outcome = op
        close()
    }

    private func close() {
        guard file >= 0 else { return report() }
        let fd = file
        file = -1
        submitRequest { loop, req, cb in uv_fs_close(loop, req, fd, cb) } then: { me, _ in me.report() }
    }

    private func report() {
        if let outcome, !cancelled {
            runtime.submit(outcome, job: job.id, of: Job<[UInt8], [UInt8]>.self)
        }
        contents = []
    }

    private func osFailure(_ result: Int, _ step: String) -> JobOperation<[UInt8]> {
        let message = "\(step) \(path): " + String(cString: uv_strerror(Int32(result)))
        return .fail(LoadError(domain: .os, code: Int32(-result), message: message), retry: .never)
    }

    private func tooBig() -> JobOperation<[UInt8]> {
        .fail(LoadError(.tooBig, message: "\(path): larger than \(options.maxSize) bytes"), retry: .never)
    }

    // MARK: - libuv requests

    private var continuation: ((FileRead, Int) -> Void)?

    /// Starts one fs request; `then` runs on the loop with its result.
    private func submitRequest(
        _ issue: (UnsafeMutablePointer<uv_loop_t>, UnsafeMutablePointer<uv_fs_t>, uv_fs_cb) -> Int32,
        then: @escaping (FileRead, Int) -> Void
    ) {
        continuation = then
        request.pointee.data = Unmanaged.passRetained(self).toOpaque()
        let rc = issue(runtime.loop.loop, request) { req in
            let me = Unmanaged<FileRead>.fromOpaque(req!.pointee.data).takeRetainedValue()
            let result = req!.pointee.result
            uv_fs_req_cleanup(req)
            let next = me.continuation
            me.continuation = nil
            next?(me, result)
        }
        if rc < 0 {
            Unmanaged<FileRead>.fromOpaque(request.pointee.data).release()
            uv_fs_req_cleanup(request)
            continuation = nil
            then(self, Int(rc))
        }
    }
}
