import CLoadstateABI
import Loadstate

private let messages: [Int32: StaticString] = [
    0: "success",
    -1: "invalid argument",
    -2: "no object of that kind has this id",
    -3: "not allowed in the current state",
    -4: "the job no longer runs (cancelled, superseded or completed)",
    -5: "timed out",
    -6: "out of memory",
    -7: "the runtime is closed",
    -8: "value too large",
    -9: "input/output error",
]

@_cdecl("lds_strerror")
public func ldsStrerror(_ code: Int32) -> UnsafePointer<CChar> {
    let message: StaticString = messages[code] ?? "unknown error"
    return UnsafeRawPointer(message.utf8Start).assumingMemoryBound(to: CChar.self)
}

@_cdecl("lds_version")
public func ldsVersion() -> UInt32 {
    UInt32(LDS_VERSION_MAJOR << 16 | LDS_VERSION_MINOR << 8 | LDS_VERSION_PATCH)
}
