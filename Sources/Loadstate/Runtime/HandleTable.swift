import Synchronization

/// The runtime's front desk: which ids are alive, shared by every thread.
///
/// Calls from host threads look their objects up here, under one mutex,
/// so that they can answer `notFound` or `cancelled` at once without
/// waiting for the loop. The mutex also guards the parts of cells and jobs
/// that host threads touch (a job's inbox, a cell's published state); it
/// is never held while a callback runs.
@usableFromInline package final class HandleTable: @unchecked Sendable {
    @usableFromInline package struct Storage {
        @usableFromInline package let handles = HandleMap()
    }

    private let storage = Locked(Storage())
    private let serial = Atomic<UInt64>(0)

    @usableFromInline package init() {}

    /// A new id of the given kind.
    @usableFromInline package func makeID(_ kind: HandleKind) -> UInt64 {
        let n = serial.add(1, ordering: .relaxed).newValue
        return n << 4 | kind.rawValue
    }

    /// Whether `id` was handed out as an id of `kind` (alive or not).
    @usableFromInline package func wasIssued(_ id: UInt64, as kind: HandleKind) -> Bool {
        Handle.kind(of: id) == kind && id >> 4 != 0 && id >> 4 <= serial.load(ordering: .relaxed)
    }

    /// Runs `body` with the table locked.
    @inline(__always)
    @usableFromInline package func withLock<R>(_ body: (inout Storage) throws -> R) rethrows -> R {
        try storage.withLock(body)
    }

    @usableFromInline package func insert(_ handle: Handle) {
        storage.withLock { $0.handles[handle.id] = handle }
    }

    /// Looks up a live object of type `T`.
    @_specialize(exported: true, where T == Cell<[UInt8], [UInt8]>)
    @_specialize(exported: true, where T == Loader<[UInt8], [UInt8]>)
    @_specialize(exported: true, where T == Handle)
    @usableFromInline package func lookup<T: Handle>(_ id: UInt64, as type: T.Type) -> T? {
        storage.withLock { $0.handles[id] as? T }
    }

    /// Every live object, for shutdown.
    @usableFromInline package func all() -> [Handle] {
        storage.withLock { Array($0.handles.values) }
    }
}
