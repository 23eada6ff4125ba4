/// The library's result codes. The raw values are the C header's `LDS_E*`.
public enum ResultCode: Int32, Sendable, Error {
    case ok = 0
    case invalidArgument = -1
    case notFound = -2
    case wrongState = -3
    case cancelled = -4
    case timedOut = -5
    case outOfMemory = -6
    case closed = -7
    case tooBig = -8
    case io = -9
    case again = -10

    /// A short description of the code.
    public var message: String { staticMessage.description }

    /// The description as a NUL-terminated static string (what `lds_strerror` returns).
    public var staticMessage: StaticString {
        switch self {
        case .ok: return "success"
        case .invalidArgument: return "invalid argument"
        case .notFound: return "no object of that kind has this id"
        case .wrongState: return "not allowed in the current state"
        case .cancelled: return "the job no longer runs (cancelled, superseded or completed)"
        case .timedOut: return "timed out"
        case .outOfMemory: return "out of memory"
        case .closed: return "the runtime is closed"
        case .tooBig: return "value too large"
        case .io: return "input/output error"
        case .again: return "too many operations queued; try again later"
        }
    }
}
