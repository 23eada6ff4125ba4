/// A Redis command in the protocol's own form (RESP: an array of bulk
/// strings), made once, in one buffer, when the command is sent: hiredis
/// takes it as it is (`redisAsyncFormattedCommand`) instead of formatting
/// its arguments again.
struct RedisCommand {
    /// The encoded command.
    private(set) var bytes: [UInt8]

    /// A command of `args`.
    init(_ args: [[UInt8]]) {
        var size = Writer.countSize
        for arg in args { size &+= Writer.bulkSize(arg.count) }
        bytes = Writer.make(size) { w in
            w.count(args.count)
            for arg in args { w.bulk(arg) }
        }
    }

    /// `GET` of the key `prefix` + `mark` + `key`, without joining them
    /// first (a batch's GETs are made one per key).
    init(get prefix: [UInt8], _ mark: [UInt8], _ key: [UInt8]) {
        let length = prefix.count &+ mark.count &+ key.count
        bytes = Writer.make(Writer.countSize &+ Writer.bulkSize(3) &+ Writer.bulkSize(length)) { w in
            w.count(2)
            w.bulk(RedisCommand.getName)
            w.bulkHeader(length)
            w.append(prefix)
            w.append(mark)
            w.append(key)
            w.crlf()
        }
    }

    /// No command: what a sent command's buffer is replaced with.
    static let none = RedisCommand(encoded: [])

    private init(encoded: [UInt8]) {
        bytes = encoded
    }

    private static let getName: [UInt8] = Array("GET".utf8)

    /// Writes a command into a buffer sized beforehand (an upper bound).
    private struct Writer {
        private let room: UnsafeMutableBufferPointer<UInt8>
        private(set) var offset = 0

        /// The most bytes of "*N\r\n".
        static let countSize = 23
        /// The most bytes of "$L\r\n" + L bytes + "\r\n".
        static func bulkSize(_ length: Int) -> Int { length &+ 25 }

        static func make(_ size: Int, _ body: (inout Writer) -> Void) -> [UInt8] {
            [UInt8](unsafeUninitializedCapacity: size) { room, count in
                var w = Writer(room: room)
                body(&w)
                count = w.offset
            }
        }

        private init(room: UnsafeMutableBufferPointer<UInt8>) {
            self.room = room
        }

        mutating func count(_ n: Int) {
            byte(UInt8(ascii: "*"))
            decimal(n)
            crlf()
        }

        mutating func bulkHeader(_ length: Int) {
            byte(UInt8(ascii: "$"))
            decimal(length)
            crlf()
        }

        mutating func bulk(_ arg: [UInt8]) {
            bulkHeader(arg.count)
            append(arg)
            crlf()
        }

        mutating func append(_ part: [UInt8]) {
            let n = min(part.count, room.count - offset)
            guard n > 0, let target = room.baseAddress else { return }
            part.withUnsafeBufferPointer { source in
                if let from = source.baseAddress { (target + offset).initialize(from: from, count: n) }
            }
            offset += n
        }

        mutating func crlf() {
            byte(13)
            byte(10)
        }

        private mutating func byte(_ b: UInt8) {
            guard offset < room.count else { return }
            room[offset] = b
            offset += 1
        }

        /// `n` (never negative: a count or a length) in decimal.
        private mutating func decimal(_ n: Int) {
            let value = UInt(max(n, 0))
            var divisor: UInt = 1
            while divisor <= value / 10 { divisor *= 10 }
            repeat {
                byte(UInt8(ascii: "0") &+ UInt8((value / divisor) % 10))
                divisor /= 10
            } while divisor > 0
        }
    }
}
