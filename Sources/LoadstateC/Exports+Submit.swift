import CLoadstateABI
@_spi(LoadstateC) import Loadstate

/// `lds_runtime_submit`: a batch of calls made in order under one entry
/// into the runtime. A run of consecutive loads is looked up under one
/// acquisition of the table lock and handed to the loop as one work item;
/// every other call is made as its own function would make it.

@_cdecl("lds_runtime_submit")
public func ldsRuntimeSubmit(_ rt: OpaquePointer?, _ ops: UnsafePointer<lds_op>?, _ count: Int,
                             _ results: UnsafeMutablePointer<Int32>?) -> Int32 {
    // A size_t of 2^63 or more arrives negative.
    guard rt != nil, count >= 0, count <= Int(Int32.max), ops != nil || count == 0 else { return LDS_EINVAL }
    return withRuntime(rt) { runtime in
        guard let ops else { return 0 }
        var accepted: Int32 = 0
        var index = 0
        while index < count {
            if ops[index].op == UInt32(LDS_OP_LOAD) {
                var end = index + 1
                while end < count && ops[end].op == UInt32(LDS_OP_LOAD) { end += 1 }
                accepted += submitLoads(runtime, ops, index..<end, results)
                index = end
            } else {
                let rc = submitCall(runtime, ops[index])
                results?[index] = rc
                if rc == LDS_OK { accepted += 1 }
                index += 1
            }
        }
        return accepted
    }
}

/// Loads `ops[range]` (all `LDS_OP_LOAD`); returns how many were accepted.
private func submitLoads(_ runtime: Runtime, _ ops: UnsafePointer<lds_op>, _ range: Range<Int>,
                         _ results: UnsafeMutablePointer<Int32>?) -> Int32 {
    guard runtime.acceptsQueuedWork else {
        for index in range { results?[index] = LDS_EAGAIN }
        return 0
    }
    // The requests are copied, and the fields checked, before the lock.
    var requests: [Bytes?] = []
    requests.reserveCapacity(range.count)
    let loadFlags = UInt32(LDS_LOAD_SILENT) | UInt32(LDS_LOAD_SHARE)
    for index in range {
        let op = ops[index]
        guard UInt32(bitPattern: op.code) & ~loadFlags == 0 else {
            requests.append(nil)
            results?[index] = LDS_EINVAL
            continue
        }
        switch copyBytes(op.data, op.data_len) {
        case .success(let bytes):
            requests.append(bytes)
        case .failure(let code):
            requests.append(nil)
            results?[index] = code.rawValue
        }
    }
    var loads: [PreparedLoad] = []
    loads.reserveCapacity(range.count)
    let defaults = LoadOptions()
    var silent = LoadOptions()
    silent.silent = true
    runtime.table.withLock { storage in
        for (offset, index) in range.enumerated() {
            guard let request = requests[offset] else { continue }
            let op = ops[index]
            let flags = UInt32(bitPattern: op.code)
            guard let load = prepareLoadLocked(&storage, cell: op.target, flavor: .loadable, loader: op.loader,
                                               request: request, kind: 0,
                                               options: flags & UInt32(LDS_LOAD_SILENT) != 0 ? silent : defaults,
                                               choice: nil, share: flags & UInt32(LDS_LOAD_SHARE) != 0) else {
                results?[index] = LDS_ENOENT
                continue
            }
            loads.append(load)
            results?[index] = LDS_OK
        }
    }
    guard !loads.isEmpty else { return 0 }
    if loads.count == 1 {
        let load = loads[0]
        runtime.loop.execute { load.cell.load(load.spec, ticket: load.ticket) }
    } else {
        runtime.loop.execute {
            // Through the buffer, each load is borrowed where a for-in loop would copy (and retain) it.
            loads.withUnsafeBufferPointer { batch in
                for index in batch.indices { batch[index].cell.load(batch[index].spec, ticket: batch[index].ticket) }
            }
        }
    }
    return Int32(loads.count)
}

/// One call of a batch other than a load, as its own function makes it.
private func submitCall(_ runtime: Runtime, _ op: lds_op) -> Int32 {
    let usesData = op.op == UInt32(LDS_OP_YIELD) || op.op == UInt32(LDS_OP_SUCCEED) || op.op == UInt32(LDS_OP_FAIL)
    guard op.loader == 0, op.code == 0 || op.op == UInt32(LDS_OP_FAIL),
          usesData || (op.data == nil && op.data_len == 0) else { return LDS_EINVAL }
    switch Int32(bitPattern: op.op) {
    case LDS_OP_CANCEL:
        guard let cell = findCell(runtime, op.target, .loadable) else { return LDS_ENOENT }
        guard runtime.acceptsQueuedWork else { return LDS_EAGAIN }
        cell.stop(reset: false)
        return LDS_OK
    case LDS_OP_YIELD, LDS_OP_SUCCEED:
        let yields = op.op == UInt32(LDS_OP_YIELD)
        return submitValue(op.data, op.data_len, { yields ? .yield($0) : .succeed($0) }) { operation in
            runtime.submit(operation, job: op.target, of: ByteJob.self).rawValue
        }
    case LDS_OP_FINISH:
        return runtime.submit(.finish, job: op.target, of: ByteJob.self).rawValue
    case LDS_OP_FAIL:
        let rc = checkBuffer(op.data, op.data_len)
        guard rc == .ok else { return rc.rawValue }
        var message: String?
        if op.data_len > 0, let data = op.data {
            let bytes = UnsafeRawBufferPointer(start: data, count: op.data_len)
            guard !bytes.contains(0) else { return LDS_EINVAL }
            message = String(decoding: bytes, as: UTF8.self)
        }
        let error = LoadError(domain: .host, code: op.code, message: message)
        return runtime.submit(.fail(error, retry: .allowed), job: op.target, of: ByteJob.self).rawValue
    default:
        return LDS_EINVAL
    }
}
