/// Where an error comes from. The raw values are the C header's `LDS_DOMAIN_*`.
public enum ErrorDomain: Int32, Sendable {
    /// The library itself; the code is a `ResultCode`.
    case loadstate = 1
    /// Reported by the host (a failed job or `setError`).
    case host = 2
    /// An operating-system error; the code is an errno value.
    case os = 3
    /// An HTTP status outside 2xx.
    case http = 4
    /// A child process's non-zero exit status.
    case exit = 5
    /// A Redis cache's failure; the code is an `LDS_REDIS_E*` (`RedisFailure.Code`).
    case redis = 6
}
