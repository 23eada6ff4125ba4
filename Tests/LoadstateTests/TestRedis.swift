@_spi(LoadstateC) @testable import Loadstate
#if canImport(Glibc)
import Glibc
#endif

/// Debian's redis-server, started by a test on 127.0.0.1 and a free port,
/// in a directory of its own, with no persistence. `stop` kills it,
/// `start` starts it again on the same port; it is killed when released.
final class TestRedis: @unchecked Sendable {
    private(set) var port: UInt16
    private var pid: pid_t = 0
    private var startedOnce = false
    private let directory: String

    init() throws {
        var template = Array("/tmp/lds-redis-XXXXXX".utf8CString)
        guard let dir = mkdtemp(&template) else { throw ResultCodeError.failed("mkdtemp") }
        directory = String(cString: dir)
        port = TestRedis.freePort()
        try start()
    }

    deinit {
        stop()
        unlink(directory + "/redis.log")
        rmdir(directory)
    }

    var url: String { "redis://127.0.0.1:\(port)/0" }

    /// Starts the server and waits until this very process answers (10 s at
    /// most a try). The first start takes another free port when the one
    /// chosen was taken meanwhile (a client socket of another test can hold
    /// it, and redis-server then exits); a restart keeps its port.
    func start() throws {
        guard pid == 0 else { return }
        for _ in 0..<10 {
            if try startOnce() { startedOnce = true; return }
            if startedOnce { break }
            port = TestRedis.freePort()
        }
        throw ResultCodeError.failed("redis-server did not start on port \(port): \(logTail())")
    }

    /// One start on `port`: whether the child answers there before it exits
    /// or 10 s pass.
    private func startOnce() throws -> Bool {
        let args = ["redis-server", "--port", "\(port)", "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                    "--dir", directory, "--logfile", directory + "/redis.log"]
        var argv = args.map { strdup($0) } + [nil]
        defer { for a in argv { free(a) } }
        var child: pid_t = 0
        guard posix_spawnp(&child, "redis-server", nil, nil, &argv, environ) == 0 else {
            throw ResultCodeError.failed("cannot start redis-server (is it installed?)")
        }
        pid = child
        let deadline = Loadstate.Clock.monotonicMs() + 10_000
        while Loadstate.Clock.monotonicMs() < deadline {
            var status: Int32 = 0
            if waitpid(child, &status, WNOHANG) == child { pid = 0; return false }
            if answeringProcess() == child { return true }
            usleep(10_000)
        }
        stop()
        return false
    }
    /// Kills the server (SIGKILL) and reaps it.
    func stop() {
        guard pid != 0 else { return }
        kill(pid, SIGKILL)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        pid = 0
    }

    /// The process_id that the server on `port` gives in `INFO server`, or
    /// nil when none answers (yet).
    private func answeringProcess() -> pid_t? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 0, tv_usec: 250_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        guard connected else { return nil }
        let request = Array("INFO server\r\n".utf8)
        guard send(fd, request, request.count, Int32(MSG_NOSIGNAL)) == request.count else { return nil }
        var reply: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while reply.count < 65_536 {
            let n = recv(fd, &buffer, buffer.count, 0)
            guard n > 0 else { return nil }
            reply += buffer[0..<n]
            guard let value = TestRedis.field("process_id:", in: reply) else { continue }
            return pid_t(value)
        }
        return nil
    }

    /// The digits after `name` in `reply` when a CRLF ends them, else nil.
    private static func field(_ name: String, in reply: [UInt8]) -> String? {
        let key = Array(name.utf8)
        guard reply.count >= key.count else { return nil }
        for start in 0...(reply.count - key.count) where reply[start..<(start + key.count)].elementsEqual(key) {
            let digits = reply[(start + key.count)...].prefix { $0 >= 0x30 && $0 <= 0x39 }
            let rest = reply[(start + key.count + digits.count)...]
            guard rest.starts(with: [0x0D, 0x0A]) else { return nil }
            return String(decoding: digits, as: UTF8.self)
        }
        return nil
    }

    /// The last lines of the server's log, for a failure's message.
    private func logTail() -> String {
        guard let file = fopen(directory + "/redis.log", "r") else { return "(no log)" }
        defer { fclose(file) }
        var lines: [String] = []
        var line = [CChar](repeating: 0, count: 1024)
        while fgets(&line, Int32(line.count), file) != nil {
            lines.append(String(decoding: line.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self))
            if lines.count > 10 { lines.removeFirst() }
        }
        return lines.joined()
    }

    private static func freePort() -> UInt16 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                _ = bind(fd, $0, length)
                _ = getsockname(fd, $0, &length)
            }
        }
        return UInt16(bigEndian: address.sin_port)
    }
}

enum ResultCodeError: Error {
    case failed(String)
}
