/// A Redis command in the protocol's own form (RESP: an array of bulk
/// strings), made once, in one buffer, when the command is sent: hiredis
/// takes it as it is (`redisAsyncFormattedCommand`) instead of formatting
/// its arguments again.
struct RedisCommand {
    /// The encoded command.
    private(set) var bytes: [UInt8] = []

    /// A command of `args`.
    init(_ args: [[UInt8]]) {
        var size = RESP.countSize
        for arg in args { size &+= RESP.bulkSize(arg.count) }
        bytes.reserveCapacity(size)
        RESP.count(args.count, to: &bytes)
        for arg in args { RESP.bulk(arg, to: &bytes) }
    }

    /// `GET` of the entry of `key` under `prefix` (see `RedisKeys`),
    /// without joining its parts first.
    init(getEntry prefix: [UInt8], _ key: [UInt8]) {
        bytes.reserveCapacity(RESP.getSize(prefix.count &+ RedisKeys.entryInfix &+ key.count))
        key.withUnsafeBytes { RESP.getEntry(prefix, $0, to: &bytes) }
    }
}

/// Commands sent together (a batch's `GET`s), encoded one after another
/// in one buffer: one allocation for all of them, made before the loop
/// sees them.
struct RedisCommandGroup {
    /// The encoded commands, back to back.
    private(set) var bytes: [UInt8] = []
    /// Where each command ends in `bytes`; empty for a group of one
    /// command (`init(_:)`), which ends where `bytes` do.
    private var ends: [Int] = []

    /// How many commands it holds.
    var count: Int { ends.isEmpty ? (bytes.isEmpty ? 0 : 1) : ends.count }

    /// A group of `command` alone, sharing its buffer.
    init(_ command: RedisCommand) {
        bytes = command.bytes
    }

    /// An empty group with room for `commands` commands of `bytes` bytes.
    init(reservingCommands commands: Int, bytes size: Int) {
        ends.reserveCapacity(commands)
        bytes.reserveCapacity(size)
    }

    /// The bytes the `GET` of an entry takes, past its key's own.
    static func getSize(_ prefix: [UInt8], keyCount: Int) -> Int {
        RESP.getSize(prefix.count &+ RedisKeys.entryInfix &+ keyCount)
    }

    /// Appends the `GET` of the entry of `key` under `prefix` (to a group
    /// made by `init(reservingCommands:bytes:)`).
    mutating func appendGet(_ prefix: [UInt8], _ key: UnsafeRawBufferPointer) {
        RESP.getEntry(prefix, key, to: &bytes)
        ends.append(bytes.count)
    }

    /// Appends `command`.
    mutating func append(_ command: RedisCommand) {
        if ends.isEmpty && !bytes.isEmpty { ends.append(bytes.count) }
        bytes.append(contentsOf: command.bytes)
        ends.append(bytes.count)
    }

    /// The bytes of command `i` (below `count`), for the time of `body`.
    func withCommand<T>(_ i: Int, _ body: (UnsafeRawBufferPointer) -> T) -> T {
        let start = i == 0 ? 0 : ends[i &- 1]
        let end = ends.isEmpty ? bytes.count : ends[i]
        return bytes.withUnsafeBytes { body(UnsafeRawBufferPointer(rebasing: $0[start..<end])) }
    }
}

/// The protocol's encoding: "*N\r\n", then each argument as "$L\r\n",
/// its bytes and "\r\n".
private enum RESP {
    /// What every `GET` begins with: "*2\r\n$3\r\nGET\r\n".
    static let getHead: [UInt8] = Array("*2\r\n$3\r\nGET\r\n".utf8)
    /// The most bytes of "*N\r\n".
    static let countSize = 23
    /// The most bytes of "$L\r\n" + L bytes + "\r\n".
    static func bulkSize(_ length: Int) -> Int { length &+ 25 }
    /// The most bytes of a `GET` of a key of `length` bytes.
    static func getSize(_ length: Int) -> Int { countSize &+ bulkSize(3) &+ bulkSize(length) }

    static func getEntry(_ prefix: [UInt8], _ key: UnsafeRawBufferPointer, to bytes: inout [UInt8]) {
        bytes.append(contentsOf: getHead)
        bulkHeader(prefix.count &+ RedisKeys.entryInfix &+ key.count, to: &bytes)
        bytes.append(contentsOf: prefix)
        let t = RedisKeys.tag(key)
        bytes.append(t.0)
        bytes.append(t.1)
        bytes.append(t.2)
        bytes.append(t.3)
        bytes.append(t.4)
        bytes.append(RedisKeys.entryMark.0)
        bytes.append(RedisKeys.entryMark.1)
        bytes.append(contentsOf: key)
        crlf(to: &bytes)
    }

    static func count(_ n: Int, to bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: "*"))
        decimal(n, to: &bytes)
        crlf(to: &bytes)
    }

    static func bulk(_ arg: [UInt8], to bytes: inout [UInt8]) {
        bulkHeader(arg.count, to: &bytes)
        bytes.append(contentsOf: arg)
        crlf(to: &bytes)
    }

    private static func bulkHeader(_ length: Int, to bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: "$"))
        decimal(length, to: &bytes)
        crlf(to: &bytes)
    }

    private static func crlf(to bytes: inout [UInt8]) {
        bytes.append(13)
        bytes.append(10)
    }

    /// Appends `n` (never negative: a count or a length) in decimal.
    private static func decimal(_ n: Int, to bytes: inout [UInt8]) {
        let value = UInt(max(n, 0))
        var divisor: UInt = 1
        while divisor <= value / 10 { divisor *= 10 }
        repeat {
            bytes.append(UInt8(ascii: "0") &+ UInt8((value / divisor) % 10))
            divisor /= 10
        } while divisor > 0
    }
}
