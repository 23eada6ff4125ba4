/// The error a failed load carries: a domain, a code in that domain and an
/// optional message. Errors thrown by Swift loaders keep the thrown value
/// in `underlying`.
public struct LoadError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Where the error comes from.
    public var domain: ErrorDomain
    /// The code in that domain: a `ResultCode`, an errno value, an HTTP
    /// status, an exit status, or the host's own code.
    public var code: Int32
    /// A message for people, when there is one.
    public var message: String?
    /// The Swift error this one stands for, when a Swift loader threw it.
    public var underlying: (any Error)?

    /// An error in `domain` with `code`.
    public init(domain: ErrorDomain, code: Int32, message: String? = nil, underlying: (any Error)? = nil) {
        self.domain = domain
        self.code = code
        self.message = message
        self.underlying = underlying
    }

    /// An error in the loadstate domain for one of the library's codes.
    public init(_ code: ResultCode, message: String? = nil, underlying: (any Error)? = nil) {
        self.init(domain: .loadstate, code: code.rawValue, message: message ?? code.message, underlying: underlying)
    }

    /// Domain, code and message are compared; `underlying` is not.
    public static func == (a: LoadError, b: LoadError) -> Bool {
        a.domain == b.domain && a.code == b.code && a.message == b.message
    }

    public var description: String {
        "\(domain) error \(code)" + (message.map { ": \($0)" } ?? "")
    }
}
