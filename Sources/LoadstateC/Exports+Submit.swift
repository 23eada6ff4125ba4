import CLoadstateABI
@_spi(LoadstateC) import Loadstate

/// `lds_runtime_submit`: a batch of calls made in order under one entry
/// into the runtime. A run of consecutive loads is looked up under one
/// acquisition of the table lock and handed to the loop as one work item;
/// so is a run of consecutive job calls (yield, succeed, finish, fail);
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
            } else if isJobCall(ops[index]) {
                var end = index + 1
                while end < count && isJobCall(ops[end]) { end += 1 }
                accepted += submitJobCalls(runtime, ops, index..<end, results)
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
    let loadFlags = UInt32(LDS_LOAD_SILENT) | UInt32(LDS_LOAD_SHARE) | UInt32(LDS_LOAD_NO_PROGRESS)
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
            if flags & UInt32(LDS_LOAD_NO_PROGRESS) != 0 { load.cell.deliversProgress = false }
            loads.append(load)
            results?[index] = LDS_OK
        }
        // Queued under the lock that gave the tickets, so that the loop runs
        // each cell's operations in their order (see `Cell.queueLeaving`).
        guard !loads.isEmpty else { return }
        if loads.count == 1 {
            let load = loads[0]
            runtime.loop.executeSkippable { load.cell.load(load.spec, ticket: load.ticket) }
        } else {
            let batch = loads
            runtime.loop.executeSkippable {
                // Through the buffer, each load is borrowed where a for-in loop would copy (and retain) it.
                batch.withUnsafeBufferPointer { batch in
                    for index in batch.indices {
                        batch[index].cell.load(batch[index].spec, ticket: batch[index].ticket)
                    }
                }
            }
        }
    }
    return Int32(loads.count)
}

/// Whether `op` is a call on a job (yield, succeed, finish, fail).
private func isJobCall(_ op: lds_op) -> Bool {
    switch Int32(bitPattern: op.op) {
    case LDS_OP_YIELD, LDS_OP_SUCCEED, LDS_OP_FINISH, LDS_OP_FAIL: return true
    default: return false
    }
}

/// The calls `ops[range]` (all job calls): each checked and its data
/// copied as its own function would, then every valid one submitted under
/// one acquisition of the table lock. Returns how many were accepted.
private func submitJobCalls(_ runtime: Runtime, _ ops: UnsafePointer<lds_op>, _ range: Range<Int>,
                            _ results: UnsafeMutablePointer<Int32>?) -> Int32 {
    var batch: [(job: UInt64, op: JobOperation<Bytes>)] = []
    var indices: [Int] = []
    batch.reserveCapacity(range.count)
    indices.reserveCapacity(range.count)
    for index in range {
        switch jobOperation(ops[index]) {
        case .success(let operation):
            batch.append((ops[index].target, operation))
            indices.append(index)
        case .failure(let code):
            results?[index] = code.rawValue
        }
    }
    guard !batch.isEmpty else { return 0 }
    var accepted: Int32 = 0
    for (index, rc) in zip(indices, runtime.submit(batch, of: ByteJob.self)) {
        results?[index] = rc.rawValue
        if rc == .ok { accepted += 1 }
    }
    return accepted
}

/// The operation a job call asks for, its fields checked and its data
/// copied as its own function (`lds_job_succeed`, ...) does.
private func jobOperation(_ op: lds_op) -> Result<JobOperation<Bytes>, ResultCode> {
    guard op.loader == 0, op.code == 0 || op.op == UInt32(LDS_OP_FAIL) else { return .failure(.invalidArgument) }
    switch Int32(bitPattern: op.op) {
    case LDS_OP_YIELD, LDS_OP_SUCCEED:
        let yields = op.op == UInt32(LDS_OP_YIELD)
        return copyBytes(op.data, op.data_len).map { yields ? .yield($0) : .succeed($0) }
    case LDS_OP_FINISH:
        guard op.data == nil && op.data_len == 0 else { return .failure(.invalidArgument) }
        return .success(.finish)
    case LDS_OP_FAIL:
        let rc = checkBuffer(op.data, op.data_len)
        guard rc == .ok else { return .failure(rc) }
        var message: String?
        if op.data_len > 0, let data = op.data {
            let bytes = UnsafeRawBufferPointer(start: data, count: op.data_len)
            guard !bytes.contains(0) else { return .failure(.invalidArgument) }
            message = String(decoding: bytes, as: UTF8.self)
        }
        return .success(.fail(LoadError(domain: .host, code: op.code, message: message), retry: .allowed))
    default:
        return .failure(.invalidArgument)
    }
}

/// One call of a batch other than a load or a job call (a cancel; any
/// other op is unknown), as its own function makes it.
private func submitCall(_ runtime: Runtime, _ op: lds_op) -> Int32 {
    guard op.op == UInt32(LDS_OP_CANCEL), op.loader == 0, op.code == 0, op.data == nil, op.data_len == 0 else {
        return LDS_EINVAL
    }
    guard let cell = findCell(runtime, op.target, .loadable) else { return LDS_ENOENT }
    guard runtime.acceptsQueuedWork else { return LDS_EAGAIN }
    cell.stop(reset: false)
    return LDS_OK
}
