import Observation
import Testing
@testable import Loadstate

/// A load shows its first state before `load` returns, as Processed does:
/// a view drawn right after a button's action shows `loading`, not the
/// state from before. The loop's own loading state, when it comes, is not
/// streamed a second time.
@MainActor
final class FirstFrameModel: LoadableSupport {
    var numbers: LoadableState<Int> = .absent
    @Loadable var words: LoadableState<String>
}

/// Runs `body` where the loads that return at once are chosen (not the
/// ones that wait for the end), as a button's action calls them.
@MainActor
private func start(_ body: () -> Void) { body() }

@MainActor
@Suite(.timeLimit(.minutes(1)))
struct FirstFrameTests {
    @Test func aLoadShowsLoadingBeforeItReturns() async {
        let cell = LoadableCell<Int>()
        let release = Gate()
        var states = cell.states.makeAsyncIterator()
        #expect(await states.next() == .absent)
        start {
            cell.load {
                await release.wait()
                return 1
            }
        }
        #expect(cell.state == .loading)
        release.open()
        // Streamed once each: loading, then the value (the loop's loading state is not streamed again).
        #expect(await states.next() == .loading)
        #expect(await states.next() == .loaded(1))
        await cell.settled()
        #expect(cell.driver.stateChanges == 2)
    }

    @Test func aLoadWithARequestShowsItsRequest() {
        let loader = LoadFunction<Int, Int> { $0 * 2 }
        let cell = LoadableCellWith(loader: loader)
        cell.load(21)
        #expect(cell.state == .loading && cell.snapshot.request == 21)
    }

    @Test func aSilentLoadShowsTheRefreshingFlagBeforeItReturns() async {
        let cell = LoadableCell<Int>()
        await cell.load { 1 }
        let release = Gate()
        start {
            cell.load(silently: true) {
                await release.wait()
                return 2
            }
        }
        #expect(cell.state == .loaded(1) && cell.isRefreshing)
        release.open()
        await cell.waitForLoad()
        #expect(cell.state == .loaded(2) && !cell.isRefreshing)
    }

    @Test func aModelsPropertyAndALoadableWrapperShowLoadingAtOnce() async {
        let model = FirstFrameModel()
        let release = Gate()
        start {
            model.load(\.numbers) {
                await release.wait()
                return 3
            }
        }
        #expect(model.numbers == .loading)
        start {
            model.$words.load {
                await release.wait()
                return "three"
            }
        }
        #expect(model.words == .loading)
        release.open()
        await model.load(\.numbers) { 4 }
        #expect(model.numbers == .loaded(4))
    }

    @Test func aProcessShowsRunningBeforeRunReturns() async {
        let cell = ProcessCell<String>()
        let release = Gate()
        start { cell.run("save") { await release.wait() } }
        #expect(cell.state == .running("save"))
        release.open()
    }

    @Test func anEarlierLoadsLateResultDoesNotShowOverALaterLoadsFirstState() async {
        let cell = LoadableCell<Int>()
        let first = Gate()
        start {
            cell.load {
                await first.wait()
                return 1
            }
        }
        await cell.settled()
        first.open()
        let second = Gate()
        start {
            cell.load {
                await second.wait()
                return 2
            }
        }
        // Whatever the first load's end did meanwhile, the second load's loading state shows.
        #expect(cell.state == .loading)
        second.open()
        await cell.waitForLoad()
        #expect(cell.state == .loaded(2))
    }
}

/// Responses and HTTP errors print as people read them.
@Suite struct HTTPResponseDescriptionTests {
    @Test func aResponsePrintsItsStatusAFewHeadersAndABodyPreview() {
        let headers = Array("Content-Type: text/html\r\nX-A: 1\r\nX-B: 2\r\nX-C: 3\r\n".utf8)
        let body = Array(("<html>" + String(repeating: "hello ", count: 100) + "</html>").utf8)
        let response = HTTPResponse(status: 404, headers: headers, body: body)
        let text = String(describing: response)
        #expect(text.hasPrefix("HTTP 404, 4 headers (content-type: text/html, x-a: 1, x-b: 2, ...), 613 bytes: \"<html>hello"))
        #expect(text.count < 200)
        let failed = LoadableState<HTTPResponse>.error(
            LoadError(domain: .http, code: 404, message: "HTTP 404", underlying: HTTPStatusError(response: response)))
        #expect(String(describing: failed).count < 300)
        #expect(String(describing: HTTPStatusError(response: response)).hasPrefix("HTTP status error: HTTP 404"))
    }

    @Test func aBinaryBodyShowsItsSizeOnly() {
        let response = HTTPResponse(status: 200, headers: [], body: [0, 1, 2, 0xff])
        #expect(String(describing: response) == "HTTP 200, 4 bytes")
    }

    @Test func aCellKeyedByURLIsALoaderOfStrings() {
        let cell = LoadableCellWith(loader: BuiltinLoader.http().urlFunction())
        cell.load("http://127.0.0.1:9/")
        #expect(cell.snapshot.request == "http://127.0.0.1:9/")
    }
}
