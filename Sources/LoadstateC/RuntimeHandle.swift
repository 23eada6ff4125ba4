import CLoadstateABI
@_spi(LoadstateC) import Loadstate
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// What an `lds_runtime *` points to.
///
/// Every exported call enters the handle's gate and leaves it on return;
/// `lds_runtime_free` closes the gate, waits for the calls inside to
/// return, then closes the runtime. Handles are never deallocated (they
/// are small), so a late call from a host thread that has not stopped yet
/// gets `LDS_ECLOSED` instead of touching freed memory. A closed handle
/// waits in a quarantine of the last `quarantine` closed ones, then serves
/// a new runtime: a program that creates runtimes in a loop holds at most
/// that many handles beyond its live runtimes.
final class RuntimeHandle: @unchecked Sendable {
    /// How many closed handles are kept before the oldest is reused.
    static let quarantine = 1024

    /// Closed handles, oldest first (a ring: `head` is the oldest).
    private struct Closed {
        var handles: [RuntimeHandle] = []
        var head = 0

        var count: Int { handles.count - head }

        mutating func append(_ handle: RuntimeHandle) {
            // Room for the most entries the ring holds (the kept ones and
            // the spent ones not yet dropped), so that it never grows later.
            if handles.capacity == 0 { handles.reserveCapacity(2 * RuntimeHandle.quarantine + 1) }
            handles.append(handle)
        }

        mutating func takeOldest() -> RuntimeHandle {
            let oldest = handles[head]
            head += 1
            // Drops the spent entries once there are as many as are kept.
            if head >= RuntimeHandle.quarantine {
                handles.removeFirst(head)
                head = 0
            }
            return oldest
        }
    }

    private static let closedHandles = Locked(Closed())

    private let calls = Atomic<Int>(0)
    private let closing = Atomic<Bool>(false)
    /// Set until the runtime is closed; read only inside the gate.
    private var core: Runtime?

    private init(_ runtime: Runtime) {
        core = runtime
    }

    static func make(_ runtime: Runtime) -> OpaquePointer {
        let reused = closedHandles.withLock { closed -> RuntimeHandle? in
            closed.count > quarantine ? closed.takeOldest() : nil
        }
        let handle: RuntimeHandle
        if let reused {
            reused.core = runtime
            reused.closing.store(false, ordering: .releasing)
            handle = reused
        } else {
            // Never released: a handle lives as long as the process.
            handle = Unmanaged.passRetained(RuntimeHandle(runtime)).takeUnretainedValue()
        }
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
        // A dispatch under way stops after its batch; other calls are short.
        runtime.delivery.stopDispatching()
        while calls.load(ordering: .acquiring) != 0 { sched_yield() }
        // No call is in flight: nothing waits for the work still queued.
        let rc = runtime.close(droppingQueuedWork: true)
        core = nil
        RuntimeHandle.closedHandles.withLock { $0.append(self) }
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
