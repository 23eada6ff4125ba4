/// A job as the inspector shows it, whatever its Value and Request types.
protocol InspectableJob: AnyObject {
    /// The id of the job's loader.
    var loaderID: UInt64 { get }
    /// Loop thread: what the inspector shows of the job.
    func inspection(nowMs: UInt64) -> JobInspection
}

/// What the inspector shows of a job.
struct JobInspection {
    var id: UInt64
    var loader: UInt64
    var attempt: UInt32
    /// Since the job was made: for a job that waits for its loader's
    /// limits, since it was queued (it is made queued).
    var ageMs: UInt64
    var cells: Int
    /// The highest priority of its cells' loads.
    var priority: Int32
    var request: String
}

extension Job: InspectableJob {
    var loaderID: UInt64 { loader.id }

    func inspection(nowMs: UInt64) -> JobInspection {
        JobInspection(id: id, loader: loader.id, attempt: attempt,
                      ageMs: nowMs >= startedAtMs ? nowMs - startedAtMs : 0, cells: waiters.count,
                      priority: priority, request: inspectionPreview(request))
    }
}
