/// Header lines as the http loader keeps them ("Name: value\r\n" each),
/// read in place: names compared without regard to ASCII case, values with
/// the whitespace around them trimmed. Lines without a colon are skipped.
struct HTTPHeaderLines {
    let bytes: ArraySlice<UInt8>

    init<C: Collection<UInt8>>(_ bytes: C) where C.Index == Int {
        self.bytes = ArraySlice(bytes)
    }

    init(_ bytes: ArraySlice<UInt8>) {
        self.bytes = bytes
    }

    /// Calls `body` with the name and value of each line, in order.
    func forEach(_ body: (_ name: ArraySlice<UInt8>, _ value: ArraySlice<UInt8>) -> Void) {
        var start = bytes.startIndex
        while start < bytes.endIndex {
            var end = start
            while end < bytes.endIndex && bytes[end] != UInt8(ascii: "\n") { end += 1 }
            let line = bytes[start..<end]
            if let colon = line.firstIndex(of: UInt8(ascii: ":")) {
                body(line[start..<colon], Self.trimmed(line[(colon + 1)...]))
            }
            start = end < bytes.endIndex ? end + 1 : end
        }
    }

    /// The values of every line named `name` (lower case), in order.
    func values(_ name: String) -> [ArraySlice<UInt8>] {
        let wanted = Array(name.utf8)
        var found: [ArraySlice<UInt8>] = []
        forEach { n, v in if Self.equalsIgnoringCase(n, wanted) { found.append(v) } }
        return found
    }

    /// The value of the first line named `name` (lower case).
    func first(_ name: String) -> ArraySlice<UInt8>? {
        values(name).first
    }

    /// Whether a line is named `lowercase`; allocates nothing (for the
    /// path every response takes).
    func has(_ lowercase: StaticString) -> Bool {
        let name = UnsafeBufferPointer(start: lowercase.utf8Start, count: lowercase.utf8CodeUnitCount)
        var lineStart = bytes.startIndex
        while lineStart < bytes.endIndex {
            if bytes.endIndex - lineStart > name.count && bytes[lineStart + name.count] == UInt8(ascii: ":") {
                var matches = true
                for i in 0..<name.count where Self.lower(bytes[lineStart + i]) != name[i] {
                    matches = false
                    break
                }
                if matches { return true }
            }
            guard let newline = bytes[lineStart...].firstIndex(of: UInt8(ascii: "\n")) else { break }
            lineStart = newline + 1
        }
        return false
    }

    /// Whether `bytes` spells `lowercase` in any ASCII case.
    static func equalsIgnoringCase<C: Collection<UInt8>>(_ bytes: C, _ lowercase: [UInt8]) -> Bool {
        guard bytes.count == lowercase.count else { return false }
        return zip(bytes, lowercase).allSatisfy { lower($0) == $1 }
    }

    static func lower(_ b: UInt8) -> UInt8 {
        b >= UInt8(ascii: "A") && b <= UInt8(ascii: "Z") ? b | 0x20 : b
    }

    /// Without spaces, tabs, CR and LF at either end.
    static func trimmed(_ s: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        func blank(_ b: UInt8) -> Bool { b == 0x20 || b == 0x09 || b == 0x0D || b == 0x0A }
        var s = s
        while let f = s.first, blank(f) { s = s.dropFirst() }
        while let l = s.last, blank(l) { s = s.dropLast() }
        return s
    }

    /// Whether a value may be sent back in a request header as it is: no
    /// control character but tab (so no CR or LF), not empty.
    static func isSendable(_ value: ArraySlice<UInt8>) -> Bool {
        !value.isEmpty && value.allSatisfy { $0 == 0x09 || ($0 >= 0x20 && $0 != 0x7F) }
    }
}
