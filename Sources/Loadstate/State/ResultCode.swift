/// The library's result codes. The raw values are the C header's `LDS_E*`.
public enum ResultCode: Int32, Sendable, Error {
    /// Success.
    case ok = 0
    /// An argument is invalid (`LDS_EINVAL`).
    case invalidArgument = -1
    /// No object of that kind has this id, or a cache has no such entry (`LDS_ENOENT`).
    case notFound = -2
    /// Not allowed in the current state (`LDS_ESTATE`).
    case wrongState = -3
    /// The job no longer runs (`LDS_ECANCELED`).
    case cancelled = -4
    /// Timed out (`LDS_ETIMEDOUT`).
    case timedOut = -5
    /// Out of memory (`LDS_ENOMEM`).
    case outOfMemory = -6
    /// The runtime or cache is closed (`LDS_ECLOSED`).
    case closed = -7
    /// A value, request or response is over its limit (`LDS_ETOOBIG`).
    case tooBig = -8
    /// An input/output error (`LDS_EIO`).
    case io = -9
    /// Too many operations queued; try again later (`LDS_EAGAIN`).
    case again = -10
    /// A Redis cache failed or cannot reach its server (`LDS_EREDIS`).
    case redis = -11
    /// A feature this build of the library lacks (`LDS_ENOTSUP`), such as
    /// TLS to Redis.
    case notSupported = -12
    /// The runtime is offline and the load asked to fail then
    /// (`LDS_EOFFLINE`, since 0.5; see `Runtime.setOnline`).
    case offline = -13

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
        case .redis: return "Redis failed or is unreachable"
        case .notSupported: return "not supported by this build"
        case .offline: return "the runtime is offline"
        }
    }
}
