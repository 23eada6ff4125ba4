import CLoadstateABI
@_spi(LoadstateC) import Loadstate

/// Values and requests of the C API are byte strings.
typealias Bytes = [UInt8]
typealias ByteCell = Cell<Bytes, Bytes>
typealias ByteJob = Job<Bytes, Bytes>
typealias ByteLoader = Loader<Bytes, Bytes>

/// LDS_VALUE_MAX: the largest value, request or message accepted.
let valueMax = 256 << 20

/// Checks a caller's buffer: NULL only with length 0, at most LDS_VALUE_MAX
/// bytes. A `size_t` of 2^63 or more arrives here negative: too big too.
func checkBuffer(_ pointer: UnsafeRawPointer?, _ length: Int) -> ResultCode {
    if length == 0 { return .ok }
    guard length > 0, length <= valueMax else { return .tooBig }
    return pointer == nil ? .invalidArgument : .ok
}

/// Copies a caller's buffer (see `checkBuffer`).
func copyBytes(_ pointer: UnsafeRawPointer?, _ length: Int) -> Result<Bytes, ResultCode> {
    if length == 0 { return .success([]) }
    let rc = checkBuffer(pointer, length)
    guard rc == .ok, let pointer else { return .failure(rc) }
    return .success(Bytes(UnsafeRawBufferPointer(start: pointer, count: length)))
}

/// A caller's options struct, whose first field is its `size` (a
/// `uint32_t`), read only as far as that size says: a caller built against
/// an older, shorter version of the struct is never read past its end,
/// and the fields it does not have are zero (their defaults).
func readSized<T>(_ pointer: UnsafePointer<T>) -> (value: T, size: Int) {
    let size = Int(UnsafeRawPointer(pointer).loadUnaligned(as: UInt32.self))
    let copy = UnsafeMutablePointer<T>.allocate(capacity: 1)
    defer { copy.deallocate() }
    let raw = UnsafeMutableRawPointer(copy)
    raw.initializeMemory(as: UInt8.self, repeating: 0, count: MemoryLayout<T>.size)
    raw.copyMemory(from: pointer, byteCount: min(size, MemoryLayout<T>.size))
    return (copy.move(), size)
}

/// Copies a loader's or cell's name (see `HandleName`): NULL or "" gives
/// nil; a name too long, not UTF-8 or with a control character is
/// `.invalidArgument`. No more than `LDS_NAME_MAX + 1` bytes are read.
func copyName(_ name: UnsafePointer<CChar>?) -> Result<String?, ResultCode> {
    guard let name else { return .success(nil) }
    let length = strnlen(name, HandleName.maxBytes + 1)
    return name.withMemoryRebound(to: UInt8.self, capacity: length) {
        HandleName.validated(bytes: UnsafeBufferPointer(start: $0, count: length))
    }
}

/// Copies a caller's message; NULL gives nil.
func copyMessage(_ message: UnsafePointer<CChar>?) -> Result<String?, ResultCode> {
    guard let message else { return .success(nil) }
    let length = strnlen(message, valueMax + 1)
    guard length <= valueMax else { return .failure(.tooBig) }
    return .success(String(cString: message))
}

/// One byte that an empty value's pointer can point to, so that a loaded
/// empty value is told apart from no value.
nonisolated(unsafe) let emptyByte = UnsafeMutableRawPointer.allocate(byteCount: 1, alignment: 1)

#if canImport(Glibc)
import Glibc
#endif
