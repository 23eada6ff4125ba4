import CLoadstateABI
@_spi(LoadstateC) import Loadstate

extension LoadOptions {
    /// What is wrong with a caller's placeholder fields, if anything: a NULL
    /// pointer with a length is `.invalidArgument`, more than LDS_VALUE_MAX
    /// bytes `.tooBig`. (Fields past the caller's `size` read as 0: none.)
    static func placeholderProblem(_ c: lds_load_options) -> ResultCode? {
        guard c.placeholder != nil else { return c.placeholder_len == 0 ? nil : .invalidArgument }
        return c.placeholder_len <= valueMax ? nil : .tooBig
    }

    /// A copy of a caller's placeholder (`lds_load_options.placeholder`):
    /// nil when the pointer is NULL with length 0 or the caller's `size`
    /// ends before the field; an empty value for a non-NULL pointer with
    /// length 0. A bad one fails as `placeholderProblem` says.
    static func placeholder(_ pointer: UnsafePointer<lds_load_options>?) -> Result<Bytes?, ResultCode> {
        guard let pointer else { return .success(nil) }
        let (c, _) = readSized(pointer)
        if let problem = placeholderProblem(c) { return .failure(problem) }
        guard let start = c.placeholder else { return .success(nil) }
        return copyBytes(start, c.placeholder_len).map { Optional($0) }
    }
}
