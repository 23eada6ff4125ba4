/// A loader that runs a Swift closure in a task.
///
/// The closure returns the final value, or nil to end keeping the last
/// yielded one. Thrown errors decide the ending: `CancelLoadable` /
/// `CancelProcess` cancel, `ResetLoadable` / `ResetProcess` reset, any
/// other error fails the load (the error is kept as `LoadError.underlying`).
/// Cancelling the job cancels the task.
///
/// A loader made for an inline (`async`) load hands its first job to the
/// awaiting caller instead of starting a task; later jobs (a `refresh`)
/// run in tasks like any other.
@_spi(LoadstateC) public final class SwiftLoader<Value: Sendable, Request: Sendable>: Loader<Value, Request>, @unchecked Sendable {
    @usableFromInline package typealias Body = @Sendable (Request, JobContext<Value>) async throws -> Value?

    let body: Body
    /// What the caller of an inline load receives: the job's request and
    /// context, and a stream that ends when the job is cancelled.
    struct InlineStart: Sendable {
        let request: Request
        let context: JobContext<Value>
        let cancelled: AsyncStream<Void>
    }

    /// Loop thread only: the caller of an inline load, waiting for its job.
    var inlineCaller: CheckedContinuation<InlineStart?, Never>?

    @usableFromInline package init(id: UInt64, body: @escaping Body) {
        self.body = body
        super.init(id: id)
    }

    @_spi(LoadstateC) public override func start(_ job: Job<Value, Request>, runtime: Runtime) {
        let context = Self.context(for: job.id, runtime: runtime)
        if let caller = inlineCaller {
            inlineCaller = nil
            let (cancelled, signal) = AsyncStream<Void>.makeStream()
            job.onLoopCancel = { signal.finish() }
            caller.resume(returning: InlineStart(request: job.request, context: context, cancelled: cancelled))
            return
        }
        let body = self.body
        let request = job.request
        let task = Task { await Self.perform(body, request, context) }
        job.onLoopCancel = { task.cancel() }
    }

    /// Hands nil to an inline caller whose load never started a job.
    func abandonInlineCaller() {
        inlineCaller?.resume(returning: nil)
        inlineCaller = nil
    }

    static func context(for id: UInt64, runtime: Runtime) -> JobContext<Value> {
        JobContext(
            submit: { op in runtime.submit(op, job: id, of: Job<Value, Request>.self) },
            isCancelled: {
                (try? runtime.isJobCancelled(id, of: Job<Value, Request>.self).get()) ?? true
            })
    }

    /// Runs the body and reports how it ended.
    static func perform(_ body: Body, _ request: Request, _ context: JobContext<Value>) async {
        let ending: JobOperation<Value>
        do {
            if let value = try await body(request, context) {
                ending = .succeed(value)
            } else {
                ending = .finish
            }
        } catch is CancelLoadable {
            ending = .cancelSelf
        } catch is CancelProcess {
            ending = .cancelSelf
        } catch is ResetLoadable {
            ending = .resetSelf
        } catch is ResetProcess {
            ending = .resetSelf
        } catch where Task.isCancelled {
            // The task was cancelled with its job (or the awaiting caller
            // was): end as a cancel, not as a failure.
            ending = .cancelSelf
        } catch {
            ending = .fail(LoadError(domain: .host, code: 0, message: String(describing: error), underlying: error),
                           retry: .allowed)
        }
        context.end(ending)
    }
}
