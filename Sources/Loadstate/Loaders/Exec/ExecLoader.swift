import CLibUV
#if canImport(Glibc)
import Glibc
#endif

/// Runs commands with `uv_spawn`. The request is an encoded `ExecRequest`;
/// the value is what the command wrote to stdout.
///
/// A non-zero exit fails in the exit domain with the status as code (128 +
/// the signal for a command killed by one) and the end of stderr as
/// message; a program that cannot be started fails in the os domain.
/// Cancelling sends SIGTERM to the command's process group, then SIGKILL to
/// the group after `killGraceMs`, even when the command itself has exited.
/// When the runtime closes, running commands' groups get SIGKILL at once
/// and the close waits for them to exit (see `EventLoop.stopDeadlineMs`).
/// Every child is reaped.
@_spi(LoadstateC) public final class ExecLoader: Loader<[UInt8], [UInt8]>, @unchecked Sendable {
    @usableFromInline package struct Options: Sendable {
        /// Yield the output so far at each newline, as a partial value.
        @usableFromInline package var streamLines: Bool
        /// Milliseconds between SIGTERM and SIGKILL on cancel.
        @usableFromInline package var killGraceMs: UInt64
        /// The most stdout accepted; more kills the command and fails the job.
        @usableFromInline package var maxOutput: Int

        @usableFromInline package init(streamLines: Bool = false, killGraceMs: UInt64 = 2000, maxOutput: Int = 256 << 20) {
            self.streamLines = streamLines
            self.killGraceMs = killGraceMs
            self.maxOutput = maxOutput
        }
    }

    @usableFromInline package let options: Options

    @usableFromInline package init(id: UInt64, options: Options = Options()) {
        self.options = options
        super.init(id: id)
    }

    @_spi(LoadstateC) public override func start(_ job: Job<[UInt8], [UInt8]>, runtime: Runtime) {
        guard let request = ExecRequest(decoding: job.request) else {
            runtime.submit(.fail(LoadError(.invalidArgument, message: "not an encoded exec request"), retry: .never),
                           job: job.id, of: Job<[UInt8], [UInt8]>.self)
            return
        }
        let run = ExecRun(job: job, runtime: runtime, options: options)
        job.onLoopCancel = { run.cancel() }
        run.spawn(request)
    }
}

/// One command, on the loop thread: the process, its two output pipes and
/// a kill timer. It keeps itself alive until every handle is closed and
/// the kill sequence of a cancel is over.
///
/// Kill sequence: a cancel sends SIGTERM to the command's process group
/// and arms the kill timer; when the grace period ends, SIGKILL goes to the
/// group, even when the command itself has exited: other members of its
/// group may have stayed. When the runtime closes (`loopStopping`), the
/// group gets SIGKILL at once and the loop waits for the command's exit
/// (its reaping) before it closes; the pipes are closed without waiting
/// for their end.
///
/// The group id is the command's pid, and signals go to it after the
/// command was reaped too. That is safe while any member of the group
/// lives: a pid is not reused while a process group with that id exists.
/// Once the last member is gone, `kill` fails with ESRCH and does nothing
/// (sending SIGKILL at once is the same as probing with signal 0 first,
/// without the gap between the two calls). The one case left is a group
/// that ended and whose id the kernel gave to a new process that made
/// itself a group leader, all between the end of the group and the
/// signal; Linux hands out pids in increasing order and wraps around only
/// after the whole pid range, so that needs `pid_max` processes to be
/// created within the grace period.
final class ExecRun: Lingering {
    private let job: Job<[UInt8], [UInt8]>
    private let runtime: Runtime
    private let options: ExecLoader.Options
    private let process = UnsafeMutablePointer<uv_process_t>.allocate(capacity: 1)
    private let stdoutPipe = UnsafeMutablePointer<uv_pipe_t>.allocate(capacity: 1)
    private let stderrPipe = UnsafeMutablePointer<uv_pipe_t>.allocate(capacity: 1)
    private var killTimer: LoopTimer?
    private var keepAlive: Unmanaged<ExecRun>?
    private var openHandles = 0
    private var output: [UInt8] = []
    private var yieldedUpTo = 0
    private var errorTail: [UInt8] = []
    private var pid: Int32 = 0
    private var exitStatus: Int64 = 0
    private var termSignal: Int32 = 0
    /// The command exited and was reaped (or never started).
    private var exited = false
    private var streamsOpen = 2
    private var cancelled = false
    /// The runtime is closing: no grace period, no waiting for the pipes.
    private var stopping = false
    /// Every handle is closed: the pid may belong to someone else now.
    private var closed = false
    private var failure: LoadError?
    private static let errorTailLimit = 4096

    init(job: Job<[UInt8], [UInt8]>, runtime: Runtime, options: ExecLoader.Options) {
        self.job = job
        self.runtime = runtime
        self.options = options
    }

    deinit {
        process.deallocate()
        stdoutPipe.deallocate()
        stderrPipe.deallocate()
    }

    func spawn(_ request: ExecRequest) {
        let loop = runtime.loop.loop
        let retained = Unmanaged.passRetained(self)
        keepAlive = retained
        runtime.loop.addLingering(self, keeping: UnsafeMutableRawPointer(process))
        let me = retained.toOpaque()
        for pipe in [stdoutPipe, stderrPipe] {
            uv_pipe_init(loop, pipe, 0)
            pipe.pointee.data = me
            openHandles += 1
        }
        process.pointee.data = me

        let argv = CStringArray(request.argv)
        let env = request.environment.map(CStringArray.init)
        var stdio = [uv_stdio_container_t](repeating: uv_stdio_container_t(), count: 3)
        stdio[0].flags = UV_IGNORE
        stdio[1].flags = uv_stdio_flags(UV_CREATE_PIPE.rawValue | UV_WRITABLE_PIPE.rawValue)
        stdio[1].data.stream = UnsafeMutableRawPointer(stdoutPipe).assumingMemoryBound(to: uv_stream_t.self)
        stdio[2].flags = uv_stdio_flags(UV_CREATE_PIPE.rawValue | UV_WRITABLE_PIPE.rawValue)
        stdio[2].data.stream = UnsafeMutableRawPointer(stderrPipe).assumingMemoryBound(to: uv_stream_t.self)

        let rc: Int32 = stdio.withUnsafeMutableBufferPointer { containers in
            var options = uv_process_options_t()
            options.file = UnsafePointer(argv.pointers[0])
            options.args = argv.base
            options.env = env?.base
            options.flags = UInt32(UV_PROCESS_DETACHED.rawValue)
            options.stdio_count = 3
            options.stdio = containers.baseAddress
            options.exit_cb = { handle, status, signal in
                ExecRun.from(handle!.pointee.data).exited(status: status, signal: signal)
            }
            if let dir = request.directory {
                return dir.withCString { cwd in
                    options.cwd = cwd
                    return uv_spawn(loop, process, &options)
                }
            }
            return uv_spawn(loop, process, &options)
        }
        guard rc == 0 else {
            // libuv initialised the process handle; it must be closed too.
            openHandles += 1
            failure = LoadError(domain: .os, code: -rc,
                                message: "spawn \(request.argv[0]): " + String(cString: uv_strerror(rc)))
            exited = true
            streamsOpen = 0
            closeAll()
            return
        }
        openHandles += 1
        pid = process.pointee.pid
        for pipe in [stdoutPipe, stderrPipe] {
            uv_read_start(stream(pipe), { _, suggested, buf in
                buf!.pointee = uv_buf_init(UnsafeMutablePointer<CChar>.allocate(capacity: suggested),
                                           UInt32(clamping: suggested))
            }, { stream, nread, buf in
                ExecRun.from(stream!.pointee.data).read(from: stream!, nread, buf!)
            })
        }
    }

    /// The job was cancelled: SIGTERM to the group, SIGKILL after the grace
    /// period (at once when the runtime is closing).
    func cancel() {
        guard !cancelled else { return }
        cancelled = true
        guard pid > 0, !closed else { return }
        if runtime.isClosed { return loopStopping() }
        kill(-pid, SIGTERM)
        let timer = LoopTimer(loop: runtime.loop.loop)
        killTimer = timer
        timer.start(after: options.killGraceMs) { [self] in
            kill(-pid, SIGKILL)
            endKillTimer()
        }
    }

    func loopStopping() {
        guard !stopping else { return }
        stopping = true
        cancelled = true
        // Alive here means running, or closed with the kill still due.
        if pid > 0 { kill(-pid, SIGKILL) }
        endKillTimer()
        // Only the exit matters now: a process outside the group may hold
        // the pipes open.
        streamsOpen = 0
        for pipe in [stdoutPipe, stderrPipe] { close(UnsafeMutableRawPointer(pipe)) }
        finishIfDone()
    }

    func loopDeadline() {
        // SIGKILL did not end the command in time: it waits in the kernel.
        // A thread reaps it when it ends; the handles close now.
        if pid > 0 && !exited { ExecRun.reapLater(pid) }
        exited = true
        closeAll()
    }

    private static func reapLater(_ pid: Int32) {
        var thread = pthread_t()
        let started = pthread_create(&thread, nil, { arg in
            var status: Int32 = 0
            waitpid(Int32(truncatingIfNeeded: Int(bitPattern: arg)), &status, 0)
            return nil
        }, UnsafeMutableRawPointer(bitPattern: Int(pid)))
        if started == 0 { pthread_detach(thread) }
    }

    private static func from(_ data: UnsafeMutableRawPointer?) -> ExecRun {
        Unmanaged<ExecRun>.fromOpaque(data!).takeUnretainedValue()
    }

    private func stream(_ pipe: UnsafeMutablePointer<uv_pipe_t>) -> UnsafeMutablePointer<uv_stream_t> {
        UnsafeMutableRawPointer(pipe).assumingMemoryBound(to: uv_stream_t.self)
    }

    private func read(from source: UnsafeMutablePointer<uv_stream_t>, _ nread: Int, _ buf: UnsafePointer<uv_buf_t>) {
        defer { buf.pointee.base?.deallocate() }
        let isStdout = source == stream(stdoutPipe)
        if nread < 0 {
            uv_read_stop(source)
            streamsOpen = max(streamsOpen - 1, 0)
            finishIfDone()
            return
        }
        guard nread > 0, let base = buf.pointee.base else { return }
        let bytes = UnsafeRawBufferPointer(start: base, count: nread)
        if isStdout {
            output.append(contentsOf: bytes)
            if output.count > options.maxOutput {
                if failure == nil {
                    failure = LoadError(.tooBig, message: "output over \(options.maxOutput) bytes")
                    kill(-pid, SIGKILL)
                }
                output = []
                return
            }
            if options.streamLines, failure == nil, let newline = output.lastIndex(of: 10), newline + 1 > yieldedUpTo {
                yieldedUpTo = newline + 1
                submit(.yield(Array(output[0..<yieldedUpTo])))
            }
        } else {
            errorTail.append(contentsOf: bytes)
            if errorTail.count > Self.errorTailLimit {
                errorTail.removeFirst(errorTail.count - Self.errorTailLimit)
            }
        }
    }

    private func exited(status: Int64, signal: Int32) {
        exited = true
        exitStatus = status
        termSignal = signal
        finishIfDone()
    }

    private func finishIfDone() {
        guard exited, streamsOpen == 0 else { return }
        closeAll()
    }

    private func closeAll() {
        for handle in [UnsafeMutableRawPointer(process), UnsafeMutableRawPointer(stdoutPipe),
                       UnsafeMutableRawPointer(stderrPipe)] {
            close(handle)
        }
    }

    private func close(_ handle: UnsafeMutableRawPointer) {
        let h = handle.assumingMemoryBound(to: uv_handle_t.self)
        guard uv_is_closing(h) == 0 else { return }
        uv_close(h) { h in ExecRun.from(h!.pointee.data).handleClosed() }
    }

    private func handleClosed() {
        openHandles -= 1
        guard openHandles == 0 else { return }
        closed = true
        report()
        releaseIfDone()
    }

    private func endKillTimer() {
        killTimer?.close()
        killTimer = nil
        releaseIfDone()
    }

    /// Lets go of itself once every handle is closed and no kill is due.
    private func releaseIfDone() {
        guard closed, killTimer == nil, let keepAlive else { return }
        self.keepAlive = nil
        runtime.loop.removeLingering(self)
        keepAlive.release()
    }

    private func report() {
        guard !cancelled else { return }
        if let failure {
            return submit(.fail(failure, retry: .never))
        }
        if termSignal != 0 || exitStatus != 0 {
            let code = termSignal != 0 ? 128 + termSignal : Int32(truncatingIfNeeded: exitStatus)
            var message = String(decoding: errorTail, as: UTF8.self)
            if termSignal != 0 && message.isEmpty { message = "killed by signal \(termSignal)" }
            return submit(.fail(LoadError(domain: .exit, code: code, message: message), retry: .allowed))
        }
        submit(.succeed(output))
    }

    private func submit(_ op: JobOperation<[UInt8]>) {
        runtime.submit(op, job: job.id, of: Job<[UInt8], [UInt8]>.self)
    }
}

/// A NULL-terminated array of C strings, freed with the array.
final class CStringArray {
    let pointers: [UnsafeMutablePointer<CChar>?]
    let base: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>

    init(_ strings: [String]) {
        pointers = strings.map { strdup($0) } + [nil]
        base = .allocate(capacity: pointers.count)
        base.initialize(from: pointers, count: pointers.count)
    }

    deinit {
        for p in pointers { free(p) }
        base.deallocate()
    }
}
