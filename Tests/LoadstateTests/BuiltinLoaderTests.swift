#if canImport(Glibc)
import Glibc
#endif
import Testing
@_spi(LoadstateC) @testable import Loadstate

/// The built-in loaders from Swift: typed requests and responses, errors
/// as Swift errors, cancellation with the calling task, cells.
@Suite(.timeLimit(.minutes(1)))
struct BuiltinLoaderTests {
    @Test func httpFetchGivesTheStatusHeadersAndBody() async throws {
        let http = BuiltinLoader.http(options: HTTPLoaderOptions(proxy: ""))
        let response = try await http.fetch(HTTPRequest(url: TestServer.shared.url("/bytes/3")))
        #expect(response.status == 200)
        #expect(response.isSuccess)
        #expect(response.text == "xxx")
        #expect(response.headers(named: "content-length") == ["3"])
        #expect(response.headerFields.contains { $0.name.lowercased() == "content-length" && $0.value == "3" })
        #expect(throws: LoadError.self) { try response.decode(using: ValueCodec<Int>.decimal) }
    }

    @Test func anHTTPStatusOutside2xxIsThrownWithItsResponse() async {
        let http = BuiltinLoader.http(options: HTTPLoaderOptions(proxy: ""))
        do {
            _ = try await http.fetch(HTTPRequest(url: TestServer.shared.url("/status/404")))
            Issue.record("a 404 was returned")
        } catch let error as HTTPStatusError {
            #expect(error.response.status == 404)
            #expect(error.response.text == "status 404")
            #expect(throws: HTTPStatusError.self) { try error.response.checked() }
        } catch {
            Issue.record("unexpected error \(error)")
        }
    }

    @Test func cancellingTheCallerCancelsTheTransfer() async {
        let http = BuiltinLoader.http(options: HTTPLoaderOptions(proxy: ""))
        let task = Task { try await http.fetch(HTTPRequest(url: TestServer.shared.url("/slow/30000"))) }
        task.cancel()
        let result = await task.result
        #expect(throws: CancellationError.self) { try result.get() }
    }

    @Test func anHTTPLoaderFeedsACellWithDecodedValues() async {
        let http = BuiltinLoader.http(options: HTTPLoaderOptions(proxy: ""))
        let pages = http.loadFunction { response in response.text.count }
        let cell = LoadableCellWith(loader: pages)
        await cell.load(HTTPRequest(url: TestServer.shared.url("/bytes/5")))
        #expect(cell.state == .loaded(5))
        #expect(cell.request?.url == TestServer.shared.url("/bytes/5"))
    }

    @Test func fileFetchReadsTheFile() async throws {
        var template = Array("/tmp/loadstate-swift-XXXXXX".utf8CString)
        let fd = mkstemp(&template)
        let contents: [UInt8] = Array("hello, file".utf8)
        contents.withUnsafeBytes { _ = write(fd, $0.baseAddress, $0.count) }
        close(fd)
        let path = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        defer { unlink(path) }
        let files = BuiltinLoader.file()
        #expect(try await files.fetch(path) == contents)
    }

    @Test func aMissingFileFailsInTheOSDomain() async {
        let files = BuiltinLoader.file()
        do {
            _ = try await files.fetch("/nonexistent/loadstate")
            Issue.record("a missing file was read")
        } catch let error as LoadError {
            #expect(error.domain == .os)
            #expect(error.code == ENOENT)
        } catch {
            Issue.record("unexpected error \(error)")
        }
    }

    @Test func execFetchGivesStdout() async throws {
        let commands = BuiltinLoader.exec()
        let output = try await commands.fetch(ExecRequest(argv: ["/bin/echo", "hi"]))
        #expect(output == Array("hi\n".utf8))
    }

    @Test func aFailingCommandFailsInTheExitDomain() async {
        let commands = BuiltinLoader.exec()
        do {
            _ = try await commands.fetch(ExecRequest(argv: ["/bin/sh", "-c", "echo no >&2; exit 3"]))
            Issue.record("a failing command succeeded")
        } catch let error as LoadError {
            #expect(error.domain == .exit)
            #expect(error.code == 3)
        } catch {
            Issue.record("unexpected error \(error)")
        }
    }

    @Test func cancellingTheCallerStopsARunningCommand() async throws {
        var template = Array("/tmp/loadstate-started-XXXXXX".utf8CString)
        close(mkstemp(&template))
        let marker = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        unlink(marker)
        defer { unlink(marker) }
        let commands = BuiltinLoader.exec()
        let task = Task {
            try await commands.fetch(ExecRequest(argv: ["/bin/sh", "-c", "touch \"$0\"; exec sleep 60", marker]))
        }
        // The command runs once it made the marker.
        while access(marker, F_OK) != 0 { await Task.yield() }
        task.cancel()
        let result = await task.result
        #expect(throws: CancellationError.self) { try result.get() }
    }

    @Test func aFetchOnAClosedRuntimeFails() async throws {
        let runtime = try Runtime()
        let files = BuiltinLoader.file(runtime: runtime)
        #expect(runtime.close() == .ok)
        await #expect(throws: LoadError.self) { try await files.fetch("/etc/hostname") }
    }
}

/// Errors in states are compared by identity or by `==`, never by what
/// they print.
@Suite struct ErrorComparisonTests {
    final class ObjectError: Error {}
    struct Printed: Error, CustomStringConvertible {
        var description: String { "same text" }
    }

    @Test func equatableErrorsCompareWithEquals() {
        #expect(LoadableState<Int>.error(EquatableError()) == .error(EquatableError()))
        #expect(LoadableState<Int>.error(EquatableError()) != .error(TimeoutError()))
    }

    @Test func objectErrorsCompareByIdentity() {
        let error = ObjectError()
        #expect(LoadableState<Int>.error(error) == .error(error))
        #expect(LoadableState<Int>.error(error) != .error(ObjectError()))
    }

    @Test func errorsThatPrintAlikeAreNotEqual() {
        #expect(LoadableState<Int>.error(Printed()) != .error(Printed()))
        #expect(ProcessState<Chore>.failed(process: .save, error: Printed())
                != .failed(process: .save, error: Printed()))
        #expect(ProcessState<Chore>.failed(process: .save, error: EquatableError())
                == .failed(process: .save, error: EquatableError()))
    }
}
