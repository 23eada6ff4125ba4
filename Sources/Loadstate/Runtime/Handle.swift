/// The kinds of object a runtime names with ids. The kind is stored in the
/// low four bits of every id, so an id given for the wrong kind is caught.
@usableFromInline package enum HandleKind: UInt64, Sendable {
    case loadable = 1
    case process = 2
    case loader = 3
    case job = 4
    case cache = 5
}

/// The order in which a closing runtime shuts its objects down.
enum ShutdownStage: CaseIterable {
    /// Cells (their jobs end), fetches, memory and persistent caches.
    case first
    /// Loaders, once the jobs of the cells have ended.
    case loaders
    /// Redis caches, so that the leases those jobs give back are sent
    /// before their connections close.
    case last
}

/// An object of a runtime that hosts name by id.
open class Handle: @unchecked Sendable {
    /// Never 0, never reused within a runtime.
    @usableFromInline package let id: UInt64

    @usableFromInline package init(id: UInt64) {
        self.id = id
    }

    /// Loop thread, when the runtime shuts down (see `shutdownStage`):
    /// releases what the object holds. A cell ends its load, a loader is
    /// released, a cache closes. Nothing by default (jobs).
    ///
    /// A method of the class, not of a protocol, so that the runtime finds
    /// it without a dynamic cast: casting a generic cell to a protocol
    /// took about 2,000 instructions, twice per cell.
    func shutdown(runtime: Runtime) {}

    /// When `shutdown` runs among the runtime's objects.
    var shutdownStage: ShutdownStage { .first }

    /// The kind encoded in an id, if any.
    @usableFromInline package static func kind(of id: UInt64) -> HandleKind? {
        HandleKind(rawValue: id & 0xF)
    }
}
