/// Builds JSON text. Strings are escaped so that the text is also safe
/// inside HTML (`<`, `>`, `&` as `\u` escapes).
struct JSONWriter {
    private(set) var text = ""
    private var needsComma = false

    mutating func beginObject() { separate(); text += "{"; needsComma = false }
    mutating func endObject() { text += "}"; needsComma = true }
    mutating func beginArray() { separate(); text += "["; needsComma = false }
    mutating func endArray() { text += "]"; needsComma = true }

    /// A key inside an object; the value follows.
    mutating func key(_ name: String) {
        separate()
        appendString(name)
        text += ":"
        needsComma = false
    }

    mutating func value(_ number: UInt64) { separate(); text += String(number); needsComma = true }
    mutating func value(_ number: Int) { separate(); text += String(number); needsComma = true }
    mutating func value(_ flag: Bool) { separate(); text += flag ? "true" : "false"; needsComma = true }

    /// A ratio with three decimals ("0.667"), or null when undefined.
    mutating func ratio(_ part: UInt64, of whole: UInt64) {
        separate()
        if whole == 0 {
            text += "null"
        } else {
            let thousandths = UInt64((Double(part) / Double(whole) * 1000).rounded())
            text += "\(thousandths / 1000).\(String(repeating: "0", count: 3 - String(thousandths % 1000).count))\(thousandths % 1000)"
        }
        needsComma = true
    }

    mutating func value(_ string: String?) {
        separate()
        if let string { appendString(string) } else { text += "null" }
        needsComma = true
    }

    mutating func field(_ name: String, _ number: UInt64) { key(name); value(number) }
    mutating func field(_ name: String, _ number: Int) { key(name); value(number) }
    mutating func field(_ name: String, _ flag: Bool) { key(name); value(flag) }
    mutating func field(_ name: String, _ string: String?) { key(name); value(string) }

    private mutating func separate() {
        if needsComma { text += "," }
    }

    private mutating func appendString(_ string: String) {
        text += "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": text += "\\\""
            case "\\": text += "\\\\"
            case "\n": text += "\\n"
            case "\r": text += "\\r"
            case "\t": text += "\\t"
            case "<", ">", "&", "\u{2028}", "\u{2029}":
                text += unicodeEscape(scalar.value)
            default:
                if scalar.value < 0x20 || scalar.value == 0x7f {
                    text += unicodeEscape(scalar.value)
                } else {
                    text.unicodeScalars.append(scalar)
                }
            }
        }
        text += "\""
    }

    private func unicodeEscape(_ value: UInt32) -> String {
        let hex = String(value, radix: 16)
        return "\\u" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
    }
}
