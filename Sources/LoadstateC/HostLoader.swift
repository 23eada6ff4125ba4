import CLoadstateABI
@_spi(LoadstateC) import Loadstate

/// A host's cancel function (`lds_loader_options.cancel`).
typealias HostCancelFunction = @convention(c) (OpaquePointer?, UInt64, UnsafeMutableRawPointer?) -> Void

/// Whether the host received a job's start (POLL mode): its cancel is
/// reported only then. Written and read on the delivery side only.
private final class StartDelivered: @unchecked Sendable {
    var value = false
}

/// A loader whose jobs are started by a host's `lds_loader_fn`.
final class HostLoader: ByteLoader, @unchecked Sendable {
    private let runtimePointer: OpaquePointer
    private let startFunction: lds_loader_fn
    private let cancelFunction: HostCancelFunction?
    private let data: UnsafeMutableRawPointer?
    private let freeData: (@convention(c) (UnsafeMutableRawPointer?) -> Void)?

    init(id: UInt64, runtime: OpaquePointer, start: lds_loader_fn, cancel: HostCancelFunction? = nil,
         data: UnsafeMutableRawPointer?, freeData: (@convention(c) (UnsafeMutableRawPointer?) -> Void)?) {
        runtimePointer = runtime
        startFunction = start
        cancelFunction = cancel
        self.data = data
        self.freeData = freeData
        super.init(id: id)
    }

    override func start(_ job: ByteJob, runtime: Runtime) {
        if runtime.delivery.mode == .loop {
            if let cancelFunction { reportCancel(of: job, to: cancelFunction, runtime: runtime, delivered: nil) }
            call(job)
        } else {
            let delivered = cancelFunction == nil ? nil : StartDelivered()
            if let cancelFunction { reportCancel(of: job, to: cancelFunction, runtime: runtime, delivered: delivered) }
            // A job cancelled before its start was dispatched never starts.
            runtime.delivery.post(.notification, record: { [data] room in
                guard runtime.isRunning(job) else { return .skipped }
                let outcome = writeStartRecord(job: job.id, request: job.request, loaderData: data, into: room)
                if case .written = outcome { delivered?.value = true }
                return outcome
            }) { [self] in
                guard runtime.isRunning(job) else { return }
                delivered?.value = true
                call(job)
            }
        }
    }

    /// Has the job report its cancellation (the job's loop-side cancel hook,
    /// which runs before the host's own hooks are delivered): at once in LOOP
    /// mode, else queued as a cleanup, as the host's hooks are, and only if
    /// the host received the job's start.
    private func reportCancel(of job: ByteJob, to cancel: @escaping HostCancelFunction, runtime: Runtime,
                              delivered: StartDelivered?) {
        let rt = runtimePointer, data = self.data, id = job.id
        guard let delivered else {
            job.onLoopCancel = { cancel(rt, id, data) }
            return
        }
        let delivery = runtime.delivery
        job.onLoopCancel = {
            delivery.post(.cleanup, record: { room in
                guard delivered.value else { return .skipped }
                return writeCancelRecord(job: id, loaderData: data, into: room)
            }) {
                if delivered.value { cancel(rt, id, data) }
            }
        }
    }

    private func call(_ job: ByteJob) {
        let request = job.request
        if request.isEmpty {
            startFunction(runtimePointer, job.id, UnsafeRawPointer(emptyByte), 0, data)
        } else {
            request.withUnsafeBytes { startFunction(runtimePointer, job.id, $0.baseAddress, $0.count, data) }
        }
    }

    override func released(runtime: Runtime) {
        guard let freeData else { return }
        let data = self.data
        runtime.deliver(.cleanup) { freeData(data) }
    }
}
