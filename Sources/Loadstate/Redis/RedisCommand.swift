/// A Redis command in the protocol's own form (RESP: an array of bulk
/// strings), made once, in one buffer, when the command is sent: hiredis
/// takes it as it is (`redisAsyncFormattedCommand`) instead of formatting
/// its arguments again.
struct RedisCommand {
    /// The encoded command.
    private(set) var bytes: [UInt8] = []

    /// A command of `args`.
    init(_ args: [[UInt8]]) {
        var size = RedisCommand.countSize
        for arg in args { size &+= RedisCommand.bulkSize(arg.count) }
        bytes.reserveCapacity(size)
        count(args.count)
        for arg in args { bulk(arg) }
    }

    /// `GET` of the key `prefix` + `mark` + `key`, without joining them
    /// first (a batch's GETs are made one per key).
    init(get prefix: [UInt8], _ mark: [UInt8], _ key: [UInt8]) {
        let length = prefix.count &+ mark.count &+ key.count
        bytes.reserveCapacity(RedisCommand.countSize &+ RedisCommand.bulkSize(3) &+ RedisCommand.bulkSize(length))
        count(2)
        bulk(RedisCommand.getName)
        bulkHeader(length)
        bytes.append(contentsOf: prefix)
        bytes.append(contentsOf: mark)
        bytes.append(contentsOf: key)
        crlf()
    }

    /// No command: what a sent command's buffer is replaced with.
    static let none = RedisCommand(encoded: [])

    private init(encoded: [UInt8]) {
        bytes = encoded
    }

    private static let getName: [UInt8] = Array("GET".utf8)
    /// The most bytes of "*N\r\n".
    private static let countSize = 23
    /// The most bytes of "$L\r\n" + L bytes + "\r\n".
    private static func bulkSize(_ length: Int) -> Int { length &+ 25 }

    private mutating func count(_ n: Int) {
        bytes.append(UInt8(ascii: "*"))
        decimal(n)
        crlf()
    }

    private mutating func bulkHeader(_ length: Int) {
        bytes.append(UInt8(ascii: "$"))
        decimal(length)
        crlf()
    }

    private mutating func bulk(_ arg: [UInt8]) {
        bulkHeader(arg.count)
        bytes.append(contentsOf: arg)
        crlf()
    }

    private mutating func crlf() {
        bytes.append(13)
        bytes.append(10)
    }

    /// Appends `n` (never negative: a count or a length) in decimal.
    private mutating func decimal(_ n: Int) {
        let value = UInt(max(n, 0))
        var divisor: UInt = 1
        while divisor <= value / 10 { divisor *= 10 }
        repeat {
            bytes.append(UInt8(ascii: "0") &+ UInt8((value / divisor) % 10))
            divisor /= 10
        } while divisor > 0
    }
}
