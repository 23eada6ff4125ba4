import CLibUV
#if canImport(Glibc)
import Glibc
#endif

/// Starts `Tests/support/<script>` (with `arguments`) with python3, its stdin a pipe the test
/// process keeps open (the script stops when it closes), and returns that
/// pipe and the first line the script prints (what it tells about itself).
func startSupportScript(_ script: String, what: String, arguments: [String] = []) -> (stdinWrite: Int32, firstLine: String) {
    var toChild: [Int32] = [0, 0]
    var fromChild: [Int32] = [0, 0]
    // Close-on-exec: the dup2 of the spawn gives the script its own copies;
    // no other process a test spawns meanwhile may inherit these.
    precondition(uv_pipe(&toChild, 0, 0) == 0 && uv_pipe(&fromChild, 0, 0) == 0)
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    posix_spawn_file_actions_adddup2(&actions, toChild[0], 0)
    posix_spawn_file_actions_adddup2(&actions, fromChild[1], 1)
    posix_spawn_file_actions_addclose(&actions, toChild[1])
    posix_spawn_file_actions_addclose(&actions, fromChild[0])
    let path = TestServer.repositoryRoot + "/Tests/support/" + script
    let argv: [UnsafeMutablePointer<CChar>?] = [strdup("python3"), strdup(path)] + arguments.map { strdup($0) } + [nil]
    var pid: pid_t = 0
    let rc = posix_spawnp(&pid, "python3", &actions, nil, argv, environ)
    for a in argv { free(a) }
    posix_spawn_file_actions_destroy(&actions)
    precondition(rc == 0, "cannot start \(what)")
    close(toChild[0])
    close(fromChild[1])
    var line: [UInt8] = []
    var byte: UInt8 = 0
    while read(fromChild[0], &byte, 1) == 1, byte != 10 { line.append(byte) }
    close(fromChild[0])
    return (toChild[1], String(decoding: line, as: UTF8.self))
}

/// The local HTTP server of `Tests/support/http_server.py`, started once
/// for the loader tests. It stops when the test process exits (its stdin
/// closes).
final class TestServer: @unchecked Sendable {
    static let shared = TestServer()

    let port: Int
    private let stdinWrite: Int32

    private init() {
        let (stdin, line) = startSupportScript("http_server.py", what: "the test server")
        stdinWrite = stdin
        port = Int(line) ?? 0
        precondition(port > 0, "the test server gave no port")
    }

    func url(_ path: String) -> String {
        "http://127.0.0.1:\(port)\(path)"
    }

    /// The repository root, from this file's path.
    static var repositoryRoot: String {
        var parts = #filePath.split(separator: "/", omittingEmptySubsequences: false)
        parts.removeLast(3)
        return parts.joined(separator: "/")
    }
}
