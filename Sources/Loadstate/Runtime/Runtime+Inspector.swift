#if canImport(Glibc)
import Glibc
#endif

extension Runtime {
    /// Starts the runtime's inspector on `address` (see `Inspector`) and
    /// returns its URL, token included. Any thread: the loop binds the
    /// address while the caller waits (the loop never blocks, so the wait
    /// is short). `.wrongState` when an inspector already serves; `.closed`
    /// after `close`; `.invalidArgument` or `.io` from the bind.
    @usableFromInline package func startInspector(address: String, options: InspectorOptions) -> Result<String, ResultCode> {
        onLoopAndWait { [self] () -> Result<String, ResultCode> in
            guard !isClosed else { return .failure(.closed) }
            guard inspector == nil else { return .failure(.wrongState) }
            do throws(ResultCode) {
                let started = try Inspector(runtime: self, address: address, options: options)
                inspector = started
                return .success(started.url)
            } catch {
                return .failure(error)
            }
        }
    }

    /// Stops the inspector: its listener and every connection close.
    /// `.notFound` when none serves. Any thread, as `startInspector`.
    @usableFromInline package func stopInspector() -> ResultCode {
        onLoopAndWait { [self] () -> ResultCode in
            guard let running = inspector else { return .notFound }
            running.stop()
            inspector = nil
            return .ok
        }
    }

    /// The inspector's URL, token included, if one serves. Any thread, as `startInspector`.
    @usableFromInline package func inspectorURL() -> String? {
        onLoopAndWait { [self] in inspector?.url }
    }

    /// Runs `body` on the loop thread and returns its result: at once on
    /// the loop thread, otherwise waiting for the loop to run it.
    private func onLoopAndWait<T>(_ body: @escaping () -> T) -> T {
        if loop.isLoopThread { return body() }
        let reply = LoopReply<T>()
        loop.execute { reply.put(body()) }
        return reply.take()
    }
}
