import CLoadstateABI
import Loadstate

/// A loader whose jobs are started by a host's `lds_loader_fn`.
final class HostLoader: ByteLoader, @unchecked Sendable {
    private let runtimePointer: OpaquePointer
    private let startFunction: lds_loader_fn
    private let data: UnsafeMutableRawPointer?
    private let freeData: (@convention(c) (UnsafeMutableRawPointer?) -> Void)?

    init(id: UInt64, runtime: OpaquePointer, start: lds_loader_fn, data: UnsafeMutableRawPointer?,
         freeData: (@convention(c) (UnsafeMutableRawPointer?) -> Void)?) {
        runtimePointer = runtime
        startFunction = start
        self.data = data
        self.freeData = freeData
        super.init(id: id)
    }

    override func start(_ job: ByteJob, runtime: Runtime) {
        if runtime.delivery.mode == .loop {
            call(job)
        } else {
            // A job cancelled before its start was dispatched never starts.
            runtime.delivery.post(.notification, record: { [data] room in
                guard runtime.isRunning(job) else { return .skipped }
                return writeStartRecord(job: job.id, request: job.request, loaderData: data, into: room)
            }) { [self] in
                if runtime.isRunning(job) { call(job) }
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
