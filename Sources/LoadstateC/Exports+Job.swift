import CLoadstateABI
@_spi(LoadstateC) import Loadstate

@inline(__always)
private func submit(_ rt: OpaquePointer?, _ job: UInt64, _ op: JobOperation<Bytes>) -> Int32 {
    withRuntime(rt) { runtime in
        runtime.submit(op, job: job, of: ByteJob.self).rawValue
    }
}

/// A job call that carries a value (yield, succeed): copies the value
/// (the caller's buffer is checked first, as for every call), then hands
/// the operation made of it to `submit`.
func submitValue(_ value: UnsafeRawPointer?, _ length: Int, _ operation: (Bytes) -> JobOperation<Bytes>,
                 _ submit: (JobOperation<Bytes>) -> Int32) -> Int32 {
    switch copyBytes(value, length) {
    case .success(let bytes): return submit(operation(bytes))
    case .failure(let code): return code.rawValue
    }
}

@_cdecl("lds_job_yield")
public func ldsJobYield(_ rt: OpaquePointer?, _ job: UInt64, _ value: UnsafeRawPointer?, _ length: Int) -> Int32 {
    guard rt != nil else { return LDS_EINVAL }
    return submitValue(value, length, JobOperation.yield) { submit(rt, job, $0) }
}

@_cdecl("lds_job_succeed")
public func ldsJobSucceed(_ rt: OpaquePointer?, _ job: UInt64, _ value: UnsafeRawPointer?, _ length: Int) -> Int32 {
    guard rt != nil else { return LDS_EINVAL }
    return submitValue(value, length, JobOperation.succeed) { submit(rt, job, $0) }
}

@_cdecl("lds_job_finish")
public func ldsJobFinish(_ rt: OpaquePointer?, _ job: UInt64) -> Int32 {
    submit(rt, job, .finish)
}

@_cdecl("lds_job_fail")
public func ldsJobFail(_ rt: OpaquePointer?, _ job: UInt64, _ code: Int32, _ message: UnsafePointer<CChar>?) -> Int32 {
    fail(rt, job, code, message, retry: .allowed)
}

@_cdecl("lds_job_fail_final")
public func ldsJobFailFinal(_ rt: OpaquePointer?, _ job: UInt64, _ code: Int32, _ message: UnsafePointer<CChar>?) -> Int32 {
    fail(rt, job, code, message, retry: .never)
}

private func fail(_ rt: OpaquePointer?, _ job: UInt64, _ code: Int32, _ message: UnsafePointer<CChar>?,
                  retry: RetryAdvice) -> Int32 {
    guard rt != nil else { return LDS_EINVAL }
    switch copyMessage(message) {
    case .success(let text):
        return submit(rt, job, .fail(LoadError(domain: .host, code: code, message: text), retry: retry))
    case .failure(let rc):
        return rc.rawValue
    }
}

@_cdecl("lds_job_progress")
public func ldsJobProgress(_ rt: OpaquePointer?, _ job: UInt64, _ done: UInt64, _ total: UInt64) -> Int32 {
    submit(rt, job, .progress(done: done, total: total))
}

@_cdecl("lds_job_cancel_self")
public func ldsJobCancelSelf(_ rt: OpaquePointer?, _ job: UInt64) -> Int32 {
    submit(rt, job, .cancelSelf)
}

@_cdecl("lds_job_reset_self")
public func ldsJobResetSelf(_ rt: OpaquePointer?, _ job: UInt64) -> Int32 {
    submit(rt, job, .resetSelf)
}

@_cdecl("lds_job_is_cancelled")
public func ldsJobIsCancelled(_ rt: OpaquePointer?, _ job: UInt64) -> Int32 {
    withRuntime(rt) { runtime in
        switch runtime.isJobCancelled(job, of: ByteJob.self) {
        case .success(let cancelled): return cancelled ? 1 : 0
        case .failure(let code): return code.rawValue
        }
    }
}

@_cdecl("lds_job_on_cancel")
public func ldsJobOnCancel(_ rt: OpaquePointer?, _ job: UInt64,
                           _ fn: (@convention(c) (UInt64, UnsafeMutableRawPointer?) -> Void)?,
                           _ data: UnsafeMutableRawPointer?) -> Int32 {
    guard let fn else { return LDS_EINVAL }
    return withRuntime(rt) { runtime in
        runtime.onCancel(job: job, of: ByteJob.self) { fn(job, data) }.rawValue
    }
}
