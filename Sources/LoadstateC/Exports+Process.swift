import CLoadstateABI
@_spi(LoadstateC) import Loadstate

@_cdecl("lds_process_new")
public func ldsProcessNew(_ rt: OpaquePointer?, _ onEvent: lds_event_fn?, _ userData: UnsafeMutableRawPointer?,
                          _ out: UnsafeMutablePointer<UInt64>?) -> Int32 {
    newCell(rt, .process, onEvent, userData, out)
}

@_cdecl("lds_process_new_ex")
public func ldsProcessNewEx(_ rt: OpaquePointer?, _ opts: UnsafePointer<lds_cell_options>?,
                            _ out: UnsafeMutablePointer<UInt64>?) -> Int32 {
    newCell(rt, .process, opts, out)
}

@_cdecl("lds_process_free")
public func ldsProcessFree(_ rt: OpaquePointer?, _ cell: UInt64) -> Int32 {
    freeCell(rt, cell, .process)
}

@_cdecl("lds_process_run")
public func ldsProcessRun(_ rt: OpaquePointer?, _ cell: UInt64, _ kind: Int32, _ loader: UInt64,
                          _ request: UnsafeRawPointer?, _ requestLength: Int,
                          _ opts: UnsafePointer<lds_load_options>?) -> Int32 {
    startLoad(rt, cell, .process, kind, loader, request, requestLength, opts)
}

@_cdecl("lds_process_cancel")
public func ldsProcessCancel(_ rt: OpaquePointer?, _ id: UInt64) -> Int32 {
    withCellQueueing(rt, id, .process) { runtime, cell in
        cell.stop(reset: false)
        return LDS_OK
    }
}

@_cdecl("lds_process_reset")
public func ldsProcessReset(_ rt: OpaquePointer?, _ id: UInt64) -> Int32 {
    withCellQueueing(rt, id, .process) { runtime, cell in
        cell.stop(reset: true)
        return LDS_OK
    }
}

@_cdecl("lds_process_set_progress")
public func ldsProcessSetProgress(_ rt: OpaquePointer?, _ id: UInt64, _ enabled: Int32) -> Int32 {
    setProgress(rt, id, .process, enabled)
}
