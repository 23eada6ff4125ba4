import CLoadstateABI
@_spi(LoadstateC) import Loadstate

@_cdecl("lds_strerror")
public func ldsStrerror(_ code: Int32) -> UnsafePointer<CChar> {
    let message: StaticString = ResultCode(rawValue: code)?.staticMessage ?? "unknown error"
    return UnsafeRawPointer(message.utf8Start).assumingMemoryBound(to: CChar.self)
}

@_cdecl("lds_version")
public func ldsVersion() -> UInt32 {
    UInt32(LDS_VERSION_MAJOR << 16 | LDS_VERSION_MINOR << 8 | LDS_VERSION_PATCH)
}
