import CLoadstateABI
@_spi(LoadstateC) import Loadstate

extension LoadOptions {
    /// A copy of a caller's placeholder (`lds_load_options.placeholder`):
    /// nil when the pointer is NULL with length 0 or the caller's `size`
    /// ends before the field; an empty value for a non-NULL pointer with
    /// length 0. A NULL pointer with a length is `.invalidArgument`, more
    /// than LDS_VALUE_MAX bytes `.tooBig`.
    static func placeholder(_ pointer: UnsafePointer<lds_load_options>?) -> Result<Bytes?, ResultCode> {
        guard let pointer else { return .success(nil) }
        let (c, _) = readSized(pointer)
        guard let start = c.placeholder else {
            return c.placeholder_len == 0 ? .success(nil) : .failure(.invalidArgument)
        }
        guard c.placeholder_len <= valueMax else { return .failure(.tooBig) }
        return copyBytes(start, c.placeholder_len).map { Optional($0) }
    }

    /// Checks a caller's placeholder as `placeholder` does, without copying
    /// it: for the calls that show none (pages, prefetches).
    static func checkPlaceholder(_ pointer: UnsafePointer<lds_load_options>?) -> Result<Void, ResultCode> {
        guard let pointer else { return .success(()) }
        let (c, _) = readSized(pointer)
        if c.placeholder == nil && c.placeholder_len != 0 { return .failure(.invalidArgument) }
        return c.placeholder_len <= valueMax ? .success(()) : .failure(.tooBig)
    }
}
