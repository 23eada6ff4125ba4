/// A failure of a cache operation: a result code and what went wrong.
public struct CacheError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong, as one of the library's codes.
    public var code: ResultCode
    /// A message naming the cache and the failure.
    public var message: String

    /// An error with a code and a message.
    public init(_ code: ResultCode, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
