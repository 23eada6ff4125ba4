/// A Redis command in the protocol's own form (RESP: an array of bulk
/// strings), made once, in one buffer, when the command is sent: hiredis
/// takes it as it is (`redisAsyncFormattedCommand`) instead of formatting
/// its arguments again.
struct RedisCommand {
    /// The encoded command.
    private(set) var bytes: [UInt8]

    /// A command of `args`.
    init(_ args: [[UInt8]]) {
        var size = 16
        for arg in args { size &+= arg.count &+ 16 }
        bytes = []
        bytes.reserveCapacity(size)
        header(count: args.count)
        for arg in args { bulk(arg) }
    }

    /// `GET` of the key made of `parts`, one after the other, without
    /// joining them first (a batch's GETs are made one per key).
    init(get parts: [UInt8]...) {
        bytes = []
        var length = 0
        for part in parts { length &+= part.count }
        bytes.reserveCapacity(length &+ 32)
        header(count: 2)
        bulk(RedisCommand.getName)
        bulkHeader(length)
        for part in parts { bytes.append(contentsOf: part) }
        bytes.append(contentsOf: RedisCommand.crlf)
    }

    /// No command: what a sent command's buffer is replaced with.
    static let none = RedisCommand(encoded: [])

    private init(encoded: [UInt8]) {
        bytes = encoded
    }

    private static let getName: [UInt8] = Array("GET".utf8)
    private static let crlf: [UInt8] = [13, 10]

    private mutating func header(count: Int) {
        bytes.append(UInt8(ascii: "*"))
        decimal(count)
        bytes.append(contentsOf: RedisCommand.crlf)
    }

    private mutating func bulkHeader(_ length: Int) {
        bytes.append(UInt8(ascii: "$"))
        decimal(length)
        bytes.append(contentsOf: RedisCommand.crlf)
    }

    private mutating func bulk(_ arg: [UInt8]) {
        bulkHeader(arg.count)
        bytes.append(contentsOf: arg)
        bytes.append(contentsOf: RedisCommand.crlf)
    }

    /// Appends `n` (never negative: a count or a length) in decimal.
    private mutating func decimal(_ n: Int) {
        var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                     UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var value = UInt(max(n, 0))
        var count = 0
        withUnsafeMutableBytes(of: &digits) { room in
            repeat {
                room[room.count - 1 - count] = UInt8(ascii: "0") &+ UInt8(value % 10)
                value /= 10
                count += 1
            } while value > 0 && count < room.count
            bytes.append(contentsOf: room[(room.count - count)...])
        }
    }
}
