/// A failure of a cache operation: a result code and what went wrong.
public struct CacheError: Error, Sendable, Equatable, CustomStringConvertible {
    public var code: ResultCode
    public var message: String

    public init(_ code: ResultCode, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
