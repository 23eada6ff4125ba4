@_spi(LoadstateC) @testable import Loadstate
#if canImport(Glibc)
import Glibc
#endif

/// Debian's redis-server, started by a test on 127.0.0.1 and a free port,
/// in a directory of its own, with no persistence. `stop` kills it,
/// `start` starts it again on the same port; it is killed when released.
final class TestRedis: @unchecked Sendable {
    let port: UInt16
    private var pid: pid_t = 0
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
        rmdir(directory)
    }

    var url: String { "redis://127.0.0.1:\(port)/0" }

    /// Starts the server and waits until it accepts connections (10 s at most).
    func start() throws {
        guard pid == 0 else { return }
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
        while !accepts() {
            guard Loadstate.Clock.monotonicMs() < deadline else { throw ResultCodeError.failed("redis-server did not start") }
            usleep(10_000)
        }
    }

    /// Kills the server (SIGKILL) and reaps it.
    func stop() {
        guard pid != 0 else { return }
        kill(pid, SIGKILL)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        pid = 0
    }

    private func accepts() -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
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
