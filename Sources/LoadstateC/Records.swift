import CLoadstateABI
@_spi(LoadstateC) import Loadstate
#if canImport(Glibc)
import Glibc
#endif

/// Writing deliveries as `lds_record`s for `lds_runtime_dispatch_records`:
/// the fixed part, then the value, the request and the NUL-terminated
/// message the event points to, padded to 8 bytes.

private let fixedSize = MemoryLayout<lds_record>.size

/// A record's size for data of `count` bytes.
private func recordSize(_ count: Int) -> Int {
    (fixedSize + count + 7) & ~7
}

/// Copies `bytes` at `cursor` and moves it on; the copy's address (the
/// cursor itself for an empty array, so that it is not NULL).
private func put(_ bytes: Bytes, at cursor: inout UnsafeMutableRawPointer) -> UnsafeRawPointer {
    let start = cursor
    bytes.withUnsafeBytes { source in
        if let base = source.baseAddress { memcpy(start, base, source.count) }
    }
    cursor += bytes.count
    return UnsafeRawPointer(start)
}

private func store(_ record: lds_record, at base: UnsafeMutableRawPointer) {
    base.bindMemory(to: lds_record.self, capacity: 1).initialize(to: record)
}

func writeEventRecord(_ event: CellEvent<Bytes, Bytes>, flavor: CellFlavor, userData: UnsafeMutableRawPointer?,
                      into room: UnsafeMutableRawBufferPointer) -> Delivery.RecordOutcome {
    let state = event.state
    var message = state.error?.message
    let messageCount = message.map { $0.utf8.count + 1 } ?? 0
    let size = recordSize((state.value?.count ?? 0) + (state.request?.count ?? 0) + messageCount)
    guard size <= room.count, let base = room.baseAddress else { return .needs(size) }
    var c = cEventFields(event, flavor: flavor)
    var cursor = base + fixedSize
    if let value = state.value {
        c.value = put(value, at: &cursor)
        c.value_len = value.count
    }
    if let request = state.request {
        c.request = put(request, at: &cursor)
        c.request_len = request.count
    }
    if message != nil {
        let start = cursor
        message!.withUTF8 { utf8 in
            if let source = utf8.baseAddress { memcpy(start, source, utf8.count) }
            start.storeBytes(of: 0, toByteOffset: utf8.count, as: UInt8.self)
        }
        c.error_message = UnsafePointer(start.assumingMemoryBound(to: CChar.self))
        cursor += messageCount
    }
    store(lds_record(size: UInt32(size), what: UInt32(LDS_RECORD_EVENT), user_data: userData, job: 0, event: c),
          at: base)
    return .written(size)
}

func writeStartRecord(job: UInt64, request: Bytes, loaderData: UnsafeMutableRawPointer?,
                      into room: UnsafeMutableRawBufferPointer) -> Delivery.RecordOutcome {
    let size = recordSize(request.count)
    guard size <= room.count, let base = room.baseAddress else { return .needs(size) }
    var c = lds_event()
    var cursor = base + fixedSize
    c.request = put(request, at: &cursor)
    c.request_len = request.count
    store(lds_record(size: UInt32(size), what: UInt32(LDS_RECORD_START), user_data: loaderData, job: job, event: c),
          at: base)
    return .written(size)
}

func writeCancelRecord(job: UInt64, loaderData: UnsafeMutableRawPointer?,
                       into room: UnsafeMutableRawBufferPointer) -> Delivery.RecordOutcome {
    let size = recordSize(0)
    guard size <= room.count, let base = room.baseAddress else { return .needs(size) }
    store(lds_record(size: UInt32(size), what: UInt32(LDS_RECORD_CANCEL), user_data: loaderData, job: job,
                     event: lds_event()), at: base)
    return .written(size)
}

@_cdecl("lds_runtime_dispatch_records")
public func ldsRuntimeDispatchRecords(_ rt: OpaquePointer?, _ buf: UnsafeMutableRawPointer?, _ cap: Int,
                                      _ maxRecords: Int32, _ used: UnsafeMutablePointer<Int>?) -> Int32 {
    guard let used else { return LDS_EINVAL }
    used.pointee = 0
    // A size_t of 2^63 or more arrives negative: no buffer is that large.
    guard cap >= 0, buf != nil || cap == 0 else { return LDS_EINVAL }
    if let buf, UInt(bitPattern: buf) & 7 != 0 { return LDS_EINVAL }
    return withRuntime(rt) { runtime in
        do throws(ResultCode) {
            let buffer = UnsafeMutableRawBufferPointer(start: cap == 0 ? nil : buf, count: cap)
            let result = try runtime.delivery.dispatchRecords(into: buffer, max: Int(maxRecords))
            if result.handled == 0 && result.needed > 0 {
                used.pointee = result.needed
                return LDS_ETOOBIG
            }
            used.pointee = result.used
            return Int32(clamping: result.handled)
        } catch {
            return error.rawValue
        }
    }
}
