/// The error a failed load carries: a domain, a code in that domain and an
/// optional message.
public struct LoadError: Error, Sendable, Equatable {
    public var domain: ErrorDomain
    public var code: Int32
    public var message: String?

    public init(domain: ErrorDomain, code: Int32, message: String? = nil) {
        self.domain = domain
        self.code = code
        self.message = message
    }

    /// An error in the loadstate domain for one of the library's codes.
    public init(_ code: ResultCode, message: String? = nil) {
        self.init(domain: .loadstate, code: code.rawValue, message: message ?? code.message)
    }
}
