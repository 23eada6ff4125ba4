import Testing
@_spi(LoadstateC) @testable import Loadstate

/// `LoadableCellWith.get`: a caller gets its own request's value, or
/// `LoadSuperseded` naming the request that replaced it; `refresh` after a
/// cancel reloads the request the restored state shows.
@Suite(.timeLimit(.minutes(1)))
struct SupersededTests {
    /// A loader that answers "v<request>", each request waiting for its gate if it has one.
    final class Gated: @unchecked Sendable {
        let gates: [Int: Gate]
        let calls = Locked<[Int]>([])

        init(gates: [Int: Gate] = [:]) { self.gates = gates }

        func function() -> LoadFunction<Int, String> {
            LoadFunction<Int, String> { request in
                self.calls.withLock { $0.append(request) }
                if let gate = self.gates[request] { await gate.wait() }
                if request < 0 { throw Boom() }
                return "v\(request)"
            }
        }
    }

    @Test func getReturnsTheValueOfItsRequest() async throws {
        let cell = LoadableCellWith(loader: Gated().function())
        #expect(try await cell.get(1) == "v1")
        #expect(cell.state == .loaded("v1"))
    }

    @Test func aGetSupersededByAnotherRequestThrowsLoadSupersededNamingIt() async throws {
        let gate = Gate()
        let cell = LoadableCellWith(loader: Gated(gates: [1: gate]).function())
        let first = Task { try await cell.get(1) }
        while cell.state != .loading { await Task.yield() }
        let second = try await cell.get(2)
        #expect(second == "v2")
        do {
            _ = try await first.value
            Issue.record("the superseded get returned a value")
        } catch let superseded as LoadSuperseded<Int> {
            #expect(superseded.request == 2)
        }
        gate.open()
    }

    @Test func getsOfManyRequestsOnOneCellNeverReturnAnotherRequestsValue() async {
        let cell = LoadableCellWith(loader: Gated().function())
        let results = await withTaskGroup(of: (Int, Result<String, any Error>).self) { group in
            for n in 0..<30 {
                group.addTask {
                    do { return (n, .success(try await cell.get(n))) } catch { return (n, .failure(error)) }
                }
            }
            var all: [(Int, Result<String, any Error>)] = []
            for await result in group { all.append(result) }
            return all
        }
        var values = 0
        for (n, result) in results {
            switch result {
            case .success(let value):
                #expect(value == "v\(n)")
                values += 1
            case .failure(let error):
                #expect(error is LoadSuperseded<Int>)
            }
        }
        #expect(values >= 1)
    }

    @Test func aFailedGetThrowsTheLoadersError() async {
        let cell = LoadableCellWith(loader: Gated().function())
        await #expect(throws: Boom.self) { try await cell.get(-1) }
    }

    @Test func aCancelledGetThrowsCancellationError() async {
        let gate = Gate()
        let cell = LoadableCellWith(loader: Gated(gates: [1: gate]).function())
        let waiting = Task { try await cell.get(1) }
        while cell.state != .loading { await Task.yield() }
        cell.cancel()
        await #expect(throws: CancellationError.self) { try await waiting.value }
        gate.open()
    }

    @Test func refreshAfterACancelReloadsTheRequestTheStateShows() async throws {
        let gate = Gate()
        let loader = Gated(gates: [2: gate])
        let cell = LoadableCellWith(loader: loader.function())
        #expect(try await cell.get(1) == "v1")
        startTask { cell.load(2) }
        // The state shows request 2 at once; its loader is called when the loop starts it.
        while !loader.calls.withLock({ $0.contains(2) }) { await Task.yield() }
        cell.cancel()
        await cell.settled()
        #expect(cell.request == 1)
        #expect(cell.refresh())
        await cell.waitForLoad()
        #expect(loader.calls.withLock { $0 } == [1, 2, 1])
        #expect(cell.state == .loaded("v1"))
        gate.open()
    }
}
