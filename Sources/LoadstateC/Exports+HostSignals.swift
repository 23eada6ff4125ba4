import CLoadstateABI
@_spi(LoadstateC) import Loadstate

@_cdecl("lds_runtime_set_online")
public func ldsRuntimeSetOnline(_ rt: OpaquePointer?, _ online: Int32) -> Int32 {
    withRuntime(rt) { runtime in
        runtime.setOnline(online != 0)
        return LDS_OK
    }
}

@_cdecl("lds_runtime_set_foreground")
public func ldsRuntimeSetForeground(_ rt: OpaquePointer?, _ foreground: Int32) -> Int32 {
    withRuntime(rt) { runtime in
        runtime.setForeground(foreground != 0)
        return LDS_OK
    }
}
