import CLoadstateABI
@_spi(LoadstateC) import Loadstate
#if canImport(Glibc)
import Glibc
#endif

@_cdecl("lds_runtime_observe")
public func ldsRuntimeObserve(_ rt: OpaquePointer?, _ fn: lds_observe_fn?, _ userData: UnsafeMutableRawPointer?,
                              _ freeData: (@convention(c) (UnsafeMutableRawPointer?) -> Void)?) -> Int32 {
    guard fn != nil || (userData == nil && freeData == nil) else { return LDS_EINVAL }
    return withRuntime(rt) { runtime in
        if !runtime.loop.isLoopThread && !runtime.acceptsQueuedWork { return LDS_EAGAIN }
        runtime.setObserver(fn.map { CRuntimeObserver(runtime: runtime, fn: $0, userData: userData, freeData: freeData) })
        return LDS_OK
    }
}

/// A host's runtime observer: calls its function on the delivery thread
/// (at once in LOOP mode, queued in POLL mode), with an `lds_observation`.
private final class CRuntimeObserver: RuntimeObserver, @unchecked Sendable {
    unowned(unsafe) let runtime: Runtime
    let fn: lds_observe_fn
    let userData: UnsafeMutableRawPointer?
    let freeData: (@convention(c) (UnsafeMutableRawPointer?) -> Void)?

    init(runtime: Runtime, fn: lds_observe_fn, userData: UnsafeMutableRawPointer?,
         freeData: (@convention(c) (UnsafeMutableRawPointer?) -> Void)?) {
        self.runtime = runtime
        self.fn = fn
        self.userData = userData
        self.freeData = freeData
        super.init()
    }

    /// Runs `body` on the delivery thread: now in LOOP mode, queued in POLL mode.
    private func deliver(_ body: @escaping () -> Void) {
        runtime.deliver(.notification, body)
    }

    override func cellEvent<Value, Request>(_ cell: Cell<Value, Request>, _ event: CellEvent<Value, Request>) {
        let now = monotonicNs()
        let flavor = cell.flavor
        let fn = fn, userData = userData
        // Cells of the C API hold bytes; others (none on a C runtime) are
        // reported without their value and request.
        let bytes = event as? CellEvent<Bytes, Bytes>
        let fields = bytes == nil ? cEventFields(event, flavor: flavor) : nil
        deliver {
            var o = lds_observation()
            o.size = UInt32(MemoryLayout<lds_observation>.size)
            o.what = UInt32(LDS_OBSERVE_EVENT)
            o.time_ns = now
            if let bytes {
                withCEvent(bytes, flavor: flavor) { e in
                    o.event = e
                    withUnsafePointer(to: &o) { fn($0, userData) }
                }
            } else if var fields {
                withUnsafePointer(to: &fields) { e in
                    o.event = e
                    withUnsafePointer(to: &o) { fn($0, userData) }
                }
            }
        }
    }

    override func jobStarted<Value, Request>(_ job: Job<Value, Request>, cell: Cell<Value, Request>?, atNs: UInt64) {
        var o = jobObservation(job, what: LDS_OBSERVE_JOB_START, atNs: atNs)
        o.cell = cell.map { $0.observedAs ?? $0.id } ?? 0
        report(o, request: job.request as? Bytes)
    }

    override func jobEnded<Value, Request>(_ job: Job<Value, Request>, _ end: JobEnd, durationNs: UInt64,
                                           atNs: UInt64) {
        var o = jobObservation(job, what: LDS_OBSERVE_JOB_END, atNs: atNs)
        o.duration_ns = durationNs
        switch end {
        case .succeeded:
            o.outcome = UInt32(LDS_JOB_SUCCEEDED)
        case .failed(let error):
            o.outcome = UInt32(LDS_JOB_FAILED)
            o.error_domain = error.domain.rawValue
            o.error_code = error.code
        case .cancelled:
            o.outcome = UInt32(LDS_JOB_CANCELLED)
        }
        report(o, request: job.request as? Bytes)
    }

    override func detached() {
        guard let freeData else { return }
        let userData = userData
        runtime.deliver(.cleanup) { freeData(userData) }
    }

    private func jobObservation<Value, Request>(_ job: Job<Value, Request>, what: Int32, atNs: UInt64) -> lds_observation {
        var o = lds_observation()
        o.size = UInt32(MemoryLayout<lds_observation>.size)
        o.what = UInt32(what)
        o.job = job.id
        o.loader = job.loader.id
        o.attempt = job.attempt
        o.time_ns = atNs
        return o
    }

    private func report(_ observation: lds_observation, request: Bytes?) {
        let fn = fn, userData = userData
        deliver {
            var o = observation
            guard let request else { return withUnsafePointer(to: &o) { fn($0, userData) } }
            request.withUnsafeBytes { raw in
                o.request = raw.baseAddress.map { UnsafeRawPointer($0) } ?? UnsafeRawPointer(emptyByte)
                o.request_len = raw.count
                withUnsafePointer(to: &o) { fn($0, userData) }
            }
        }
    }
}

/// CLOCK_MONOTONIC in nanoseconds (what `uv_hrtime` reads).
private func monotonicNs() -> UInt64 {
    var t = timespec()
    clock_gettime(CLOCK_MONOTONIC, &t)
    return UInt64(t.tv_sec) &* 1_000_000_000 &+ UInt64(t.tv_nsec)
}
