/// What the exec loader runs: an argument vector, an optional
/// environment (nil inherits the runtime's) and an optional working
/// directory. Encoded as a byte-string request:
///
///     "LDX1"  list argv  list env (or absent)  field cwd (or absent)
///
/// where a list is a u32 count of fields and a field is a u32 length and
/// its bytes, little-endian; 0xFFFFFFFF marks an absent list or field.
public struct ExecRequest: Sendable, Equatable {
    /// The program and its arguments; the program is looked up in `PATH`
    /// when it has no slash.
    public var argv: [String]
    /// `NAME=value` entries; nil inherits the runtime's environment.
    public var environment: [String]?
    /// The working directory; nil keeps the runtime's.
    public var directory: String?

    /// A command to run.
    public init(argv: [String], environment: [String]? = nil, directory: String? = nil) {
        self.argv = argv
        self.environment = environment
        self.directory = directory
    }

    static let magic = "LDX1"

    @usableFromInline package func encoded() -> [UInt8] {
        var w = WireWriter(magic: Self.magic)
        w.list(argv.map { Array($0.utf8) })
        w.list(environment.map { $0.map { Array($0.utf8) } })
        w.field(directory.map { Array($0.utf8) })
        return w.bytes
    }

    /// Nil when the bytes are not a well-formed request with a program.
    @usableFromInline package init?(decoding bytes: [UInt8]) {
        guard var r = WireReader(bytes, magic: Self.magic),
              let argv = r.list(), let argvList = argv, !argvList.isEmpty,
              let env = r.list(), let dir = r.field() else { return nil }
        // Arguments, variables and the directory must be UTF-8: they are
        // refused, never repaired into other bytes.
        let strings = { (items: [[UInt8]]) -> [String]? in
            var out: [String] = []
            for item in items {
                guard !item.contains(0), let text = String(validating: item, as: UTF8.self) else { return nil }
                out.append(text)
            }
            return out
        }
        guard let args = strings(argvList) else { return nil }
        self.argv = args
        if let env {
            guard let vars = strings(env) else { return nil }
            environment = vars
        }
        if let dir {
            guard !dir.contains(0), let text = String(validating: dir, as: UTF8.self) else { return nil }
            directory = text
        }
    }
}
