/// One run of a loader on behalf of a cell.
///
/// Lifecycle: created on the loop thread by a load and inserted in the
/// handle table; `running` until a terminal operation is accepted
/// (`ending`), or until the cell cancels it; then removed from the table
/// (`ended`). Operations from any thread go through `Runtime.submit`, which
/// checks the phase and appends to the inbox under the table lock; the loop
/// applies the inbox in order. A cancel first applies what the inbox holds,
/// so every operation that was accepted takes effect before the cancel.
public final class Job<Value, Request>: Handle, @unchecked Sendable {
    public enum Phase { case running, ending, ended }

    // Guarded by the table lock.
    var phase: Phase = .running
    var inbox: [JobOperation<Value>] = []
    var drainScheduled = false
    var cancelHooks: [() -> Void] = []

    // Loop thread only.
    /// The cell the job works for; nil once the job ended.
    var cell: Cell<Value, Request>?
    public let loader: Loader<Value, Request>
    public let request: Request
    /// 1 for the first try, 2 for the first retry, ...
    public let attempt: UInt32
    /// Whether the job yielded a value.
    var yielded = false
    /// Called on the loop thread, once, when the job is cancelled (from
    /// outside or inside, superseded, timed out, its cell or runtime
    /// freed); not when it ends by succeed, finish or fail. For loaders
    /// that work on the loop itself; hosts use `Runtime.onCancel`.
    public var onLoopCancel: (() -> Void)?

    init(id: UInt64, cell: Cell<Value, Request>, loader: Loader<Value, Request>,
         request: Request, attempt: UInt32) {
        self.cell = cell
        self.loader = loader
        self.request = request
        self.attempt = attempt
        super.init(id: id)
    }
}
