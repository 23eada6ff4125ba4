/// The kinds of object a runtime names with ids. The kind is stored in the
/// low four bits of every id, so an id given for the wrong kind is caught.
@usableFromInline package enum HandleKind: UInt64, Sendable {
    case loadable = 1
    case process = 2
    case loader = 3
    case job = 4
    case cache = 5
}

/// An object of a runtime that hosts name by id.
open class Handle: @unchecked Sendable {
    /// Never 0, never reused within a runtime.
    @usableFromInline package let id: UInt64

    @usableFromInline package init(id: UInt64) {
        self.id = id
    }

    /// The kind encoded in an id, if any.
    @usableFromInline package static func kind(of id: UInt64) -> HandleKind? {
        HandleKind(rawValue: id & 0xF)
    }
}
