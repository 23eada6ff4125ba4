/// An error that comes with a value worth showing next to it, such as the
/// response of an HTTP status outside 2xx. When a load fails with a
/// `LoadError` whose `underlying` error is one, and the value is of the
/// cell's value type, the cell's error state keeps that value.
public protocol ErrorWithValue: Error {
    /// The value the failed load produced.
    var failureValue: any Sendable { get }
}

/// The failure of an HTTP load whose final status is outside 2xx: the
/// `underlying` error of the load's `LoadError` (domain `.http`, the status
/// as code), carrying the whole response.
public struct HTTPStatusError: ErrorWithValue, Sendable {
    /// The response whose status was outside 2xx.
    public var response: HTTPResponse

    /// The error of this response.
    public init(response: HTTPResponse) {
        self.response = response
    }

    /// The response in the http loader's value encoding.
    public var failureValue: any Sendable { response.encoded() }
}
