import CLoadstateABI
import Loadstate
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// What an `lds_runtime *` points to.
///
/// Every exported call enters the handle's gate and leaves it on return;
/// `lds_runtime_free` closes the gate, waits for the calls inside to
/// return, then closes the runtime. The handle itself is never
/// deallocated (it is small), so a late call from a host thread that has
/// not stopped yet gets `LDS_ECLOSED` instead of touching freed memory.
final class RuntimeHandle: @unchecked Sendable {
    /// Keeps every handle reachable for the life of the process.
    private static let everyHandle = Locked<[RuntimeHandle]>([])

    private let calls = Atomic<Int>(0)
    private let closing = Atomic<Bool>(false)
    /// Set until the runtime is closed; read only inside the gate.
    private var core: Runtime?

    private init(_ runtime: Runtime) {
        core = runtime
    }

    static func make(_ runtime: Runtime) -> OpaquePointer {
        let handle = RuntimeHandle(runtime)
        everyHandle.withLock { $0.append(handle) }
        return OpaquePointer(Unmanaged.passUnretained(handle).toOpaque())
    }

    static func from(_ pointer: OpaquePointer) -> RuntimeHandle {
        Unmanaged<RuntimeHandle>.fromOpaque(UnsafeRawPointer(pointer)).takeUnretainedValue()
    }

    /// Runs `body` inside the gate, or returns `LDS_ECLOSED`.
    @inline(__always)
    func enter(_ body: (Runtime) -> Int32) -> Int32 {
        calls.add(1, ordering: .acquiring)
        defer { calls.subtract(1, ordering: .releasing) }
        guard !closing.load(ordering: .acquiring), let runtime = core else { return LDS_ECLOSED }
        return body(runtime)
    }

    /// Closes the runtime: refuses new calls, waits for the ones inside,
    /// then cancels all work and joins the loop thread.
    func close() -> Int32 {
        guard let runtime = enterForClose() else { return LDS_ECLOSED }
        if runtime.loop.isLoopThread || runtime.delivery.isDispatchThread { return LDS_ESTATE }
        guard closing.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else {
            return LDS_ECLOSED
        }
        while calls.load(ordering: .acquiring) != 0 { sched_yield() }
        let rc = runtime.close()
        core = nil
        return rc.rawValue
    }

    private func enterForClose() -> Runtime? {
        calls.add(1, ordering: .acquiring)
        defer { calls.subtract(1, ordering: .releasing) }
        return closing.load(ordering: .acquiring) ? nil : core
    }
}

/// Enters the runtime behind `rt`, or returns `LDS_EINVAL` / `LDS_ECLOSED`.
@inline(__always)
func withRuntime(_ rt: OpaquePointer?, _ body: (Runtime) -> Int32) -> Int32 {
    guard let rt else { return LDS_EINVAL }
    return RuntimeHandle.from(rt).enter(body)
}
