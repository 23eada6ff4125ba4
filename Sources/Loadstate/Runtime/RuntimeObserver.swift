import CLibUV

/// How a job ended, as a runtime observer sees it.
@_spi(LoadstateC) public enum JobEnd: Sendable {
    /// It succeeded or finished.
    case succeeded
    /// It failed with this error (retried or not: a retry is a new job).
    case failed(LoadError)
    /// It was cancelled: by its last cell leaving (a cancel, reset, newer
    /// load, timeout, free), by itself, or by the runtime's close.
    case cancelled
}

/// A runtime-wide observer: every cell event, job start and job end of
/// one runtime, on the loop thread, in the order they happen. Subclasses
/// override what they need; the methods must not block (they run on the
/// loop thread, between the runtime's own steps).
///
/// Lifecycle: set with `Runtime.setObserver` (from any thread: it takes
/// effect on the loop, after the commands queued before it); the observer
/// replaced, or the one the runtime holds when it closes, gets `detached`
/// on the loop thread (or after the loop stopped), once, after its last call.
@_spi(LoadstateC) open class RuntimeObserver: @unchecked Sendable {
    @usableFromInline package init() {}

    /// A cell's event, after the cell's own observer received it.
    open func cellEvent<Value, Request>(_ cell: Cell<Value, Request>, _ event: CellEvent<Value, Request>) {}

    /// `job` started at `atNs` (`uv_hrtime`): just before its loader's
    /// `start` (for a loader with limits, once the job is admitted). `cell`:
    /// the first cell waiting for it, if any.
    open func jobStarted<Value, Request>(_ job: Job<Value, Request>, cell: Cell<Value, Request>?, atNs: UInt64) {}

    /// `job` ended at `atNs`, `durationNs` after it started. Only for jobs
    /// whose start this observer saw.
    open func jobEnded<Value, Request>(_ job: Job<Value, Request>, _ end: JobEnd, durationNs: UInt64, atNs: UInt64) {}

    /// No call comes after this one.
    open func detached() {}
}

extension Runtime {
    /// Sets the runtime-wide observer (nil: none). Any thread; applied on
    /// the loop after what was queued before. The observer it replaces gets
    /// `detached` there.
    @_spi(LoadstateC) public func setObserver(_ new: RuntimeObserver?) {
        loop.execute { [self] in
            let old = observer
            observer = new
            old?.detached()
        }
    }

    /// Loop thread: a job starts.
    @inline(__always)
    func observeJobStart<Value, Request>(_ job: Job<Value, Request>) {
        guard let observer else { return }
        var cell: Cell<Value, Request>?
        job.waiters.forEach { if cell == nil { cell = $0 } }
        let now = uv_hrtime()
        job.observedStartNs = now
        job.observer = observer
        observer.jobStarted(job, cell: cell, atNs: now)
    }

    /// Loop thread: a job ended.
    @inline(__always)
    func observeJobEnd<Value, Request>(_ job: Job<Value, Request>, _ end: @autoclosure () -> JobEnd) {
        // Only the observer that saw the job start, if it is still the one.
        guard let observer, let seenBy = job.observer, seenBy === observer else { return }
        let now = uv_hrtime()
        observer.jobEnded(job, end(), durationNs: now >= job.observedStartNs ? now - job.observedStartNs : 0, atNs: now)
    }
}

extension JobEnd {
    /// How a terminal operation ends its job.
    init<Value>(_ op: JobOperation<Value>) {
        switch op {
        case .fail(let error, _): self = .failed(error)
        case .cancelSelf, .resetSelf: self = .cancelled
        default: self = .succeeded
        }
    }
}
