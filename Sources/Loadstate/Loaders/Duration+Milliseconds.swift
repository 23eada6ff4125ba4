extension Duration {
    /// Whole milliseconds, saturating at `UInt64.max`; negative durations are 0.
    var saturatingMilliseconds: UInt64 {
        let (seconds, attoseconds) = components
        guard seconds >= 0 else { return 0 }
        let (ms, overflow) = UInt64(seconds).multipliedReportingOverflow(by: 1000)
        if overflow { return .max }
        let (sum, overflow2) = ms.addingReportingOverflow(UInt64(max(attoseconds, 0) / 1_000_000_000_000_000))
        return overflow2 ? .max : sum
    }
}
