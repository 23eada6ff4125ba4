/// The value of a `Retry-After` header (RFC 9110, section 10.2.3) as a
/// delay in milliseconds: either delta-seconds, or an HTTP-date measured
/// against the wall clock (0 when it is past). Numbers saturate instead of
/// overflowing: the value is the server's word, and the back-off is capped
/// by the load's `retryMaxMs` anyway. Anything else is nil (ignored).
enum RetryAfter {
    static func delayMs(_ value: String, nowMs: UInt64) -> UInt64? {
        let bytes = Array(value.utf8)
        if let seconds = digits(bytes[...]) {
            return saturatingMs(seconds: seconds)
        }
        guard let dateSeconds = HTTPDate.secondsSinceEpoch(bytes) else { return nil }
        let nowSeconds = nowMs / 1000
        guard dateSeconds > nowSeconds else { return 0 }
        return saturatingMs(seconds: dateSeconds - nowSeconds) - nowMs % 1000
    }

    /// A run of one or more ASCII digits, saturated at `UInt64.max`; nil for
    /// anything else (empty, signs, spaces, other characters).
    static func digits(_ bytes: ArraySlice<UInt8>) -> UInt64? {
        guard !bytes.isEmpty else { return nil }
        var value: UInt64 = 0
        for b in bytes {
            guard b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9") else { return nil }
            let (times10, o1) = value.multipliedReportingOverflow(by: 10)
            let (sum, o2) = times10.addingReportingOverflow(UInt64(b - UInt8(ascii: "0")))
            value = o1 || o2 ? UInt64.max : sum
        }
        return value
    }

    private static func saturatingMs(seconds: UInt64) -> UInt64 {
        let (ms, overflow) = seconds.multipliedReportingOverflow(by: 1000)
        return overflow ? UInt64.max : ms
    }
}

/// HTTP-dates (RFC 9110, section 5.6.7), as seconds since the Unix epoch:
/// the preferred IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`) and the two
/// obsolete forms recipients must still accept, RFC 850
/// (`Sunday, 06-Nov-94 08:49:37 GMT`) and asctime (`Sun Nov  6 08:49:37 1994`).
enum HTTPDate {
    static func secondsSinceEpoch(_ text: [UInt8]) -> UInt64? {
        imfFixdate(text) ?? rfc850(text) ?? asctime(text)
    }

    // Names in lower case: they are compared without regard to case, as
    // recipients commonly do (a weekday, month or zone in another case is
    // still the same date).
    private static let months = ["jan", "feb", "mar", "apr", "may", "jun",
                                 "jul", "aug", "sep", "oct", "nov", "dec"].map { Array($0.utf8) }
    private static let shortDays = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"].map { Array($0.utf8) }
    private static let longDays = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday",
                                   "sunday"].map { Array($0.utf8) }

    private static func isName(_ t: ArraySlice<UInt8>, in names: [[UInt8]]) -> Bool {
        names.contains { HTTPHeaderLines.equalsIgnoringCase(t, $0) }
    }

    /// `Sun, 06 Nov 1994 08:49:37 GMT`
    private static func imfFixdate(_ t: [UInt8]) -> UInt64? {
        guard t.count == 29, isName(t[0..<3], in: shortDays), matches(t, 3, ", "),
              let day = number(t, 5, 2), matches(t, 7, " "), let month = month(t, 8), matches(t, 11, " "),
              let year = number(t, 12, 4), matches(t, 16, " "), let time = clock(t, 17), matches(t, 25, " GMT")
        else { return nil }
        return seconds(year: year, month: month, day: day, time: time)
    }

    /// `Sunday, 06-Nov-94 08:49:37 GMT`; a two-digit year under 50 is in
    /// the 2000s, any other in the 1900s.
    private static func rfc850(_ t: [UInt8]) -> UInt64? {
        guard let comma = t.firstIndex(of: UInt8(ascii: ",")), isName(t[0..<comma], in: longDays) else {
            return nil
        }
        let s = comma + 2
        guard t.count == s + 22, matches(t, comma, ", "), let day = number(t, s, 2), matches(t, s + 2, "-"),
              let month = month(t, s + 3), matches(t, s + 6, "-"), let yy = number(t, s + 7, 2),
              matches(t, s + 9, " "), let time = clock(t, s + 10), matches(t, s + 18, " GMT")
        else { return nil }
        // RFC 9110 section 5.6.7: a two-digit year more than 50 years
        // ahead is the most recent past year with those digits.
        let thisYear = 1970 + UInt64(Clock.wallMs() / 1000) / 31_556_952
        var year = thisYear - thisYear % 100 + yy
        if year > thisYear + 50 { year -= 100 }
        return seconds(year: year, month: month, day: day, time: time)
    }

    /// `Sun Nov  6 08:49:37 1994` (the day padded with a space).
    private static func asctime(_ t: [UInt8]) -> UInt64? {
        guard t.count == 24, isName(t[0..<3], in: shortDays), matches(t, 3, " "), let month = month(t, 4),
              matches(t, 7, " "), let day = t[8] == UInt8(ascii: " ") ? number(t, 9, 1) : number(t, 8, 2),
              matches(t, 10, " "), let time = clock(t, 11), matches(t, 19, " "), let year = number(t, 20, 4)
        else { return nil }
        return seconds(year: year, month: month, day: day, time: time)
    }

    /// Whether `literal` stands at `at`, letters in any case (" GMT", " gmt").
    private static func matches(_ t: [UInt8], _ at: Int, _ literal: StaticString) -> Bool {
        let n = literal.utf8CodeUnitCount
        guard at >= 0, at + n <= t.count else { return false }
        for i in 0..<n where HTTPHeaderLines.lower(t[at + i]) != HTTPHeaderLines.lower(literal.utf8Start[i]) {
            return false
        }
        return true
    }

    private static func number(_ t: [UInt8], _ at: Int, _ width: Int) -> UInt64? {
        guard at >= 0, at + width <= t.count else { return nil }
        return RetryAfter.digits(t[at..<at + width])
    }

    private static func month(_ t: [UInt8], _ at: Int) -> UInt64? {
        guard at + 3 <= t.count, let i = months.firstIndex(where: { HTTPHeaderLines.equalsIgnoringCase(t[at..<at + 3], $0) })
        else { return nil }
        return UInt64(i + 1)
    }

    /// `HH:MM:SS` as seconds into the day (a leap second, 60, allowed).
    private static func clock(_ t: [UInt8], _ at: Int) -> UInt64? {
        guard let h = number(t, at, 2), matches(t, at + 2, ":"), let m = number(t, at + 3, 2),
              matches(t, at + 5, ":"), let s = number(t, at + 6, 2), h < 24, m < 60, s <= 60
        else { return nil }
        return h * 3600 + m * 60 + s
    }

    /// Seconds since 1970-01-01 of a date in the proleptic Gregorian
    /// calendar (year at most 9999, so nothing overflows); nil before 1970
    /// or for a day the month does not have.
    private static func seconds(year: UInt64, month: UInt64, day: UInt64, time: UInt64) -> UInt64? {
        guard year >= 1970, (1...12).contains(month), day >= 1, day <= daysIn(month: month, year: year) else {
            return nil
        }
        // Days from 1970-01-01: whole years, then whole months of this year.
        let y = year - 1
        var days = y * 365 + y / 4 - y / 100 + y / 400 - (1969 * 365 + 1969 / 4 - 1969 / 100 + 1969 / 400)
        var m: UInt64 = 1
        while m < month {
            days += daysIn(month: m, year: year)
            m += 1
        }
        days += day - 1
        return days * 86_400 + time
    }

    private static func daysIn(month: UInt64, year: UInt64) -> UInt64 {
        switch month {
        case 2: return year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }
}
