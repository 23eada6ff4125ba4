/// A cell as the inspector shows it, whatever its Value and Request types.
protocol InspectableCell: AnyObject {
    /// Loop thread: the cell's latest event, in the inspector's words.
    func inspection(showValues: Bool) -> CellInspection
    /// Loop thread: the inspector's actions (as the C API's cancel and refresh).
    func inspectorCancel()
    func inspectorRefresh()
    /// The cell's id (the page lists the newest cells first).
    var inspectionID: UInt64 { get }
    /// Loop thread: drops the events kept for the inspector (it stops).
    func dropInspectorHistory()
}

/// What the inspector shows of a cell.
struct CellInspection {
    var id: UInt64
    /// The host's name for the cell, if any.
    var name: String?
    /// The cache key of the cell's last load (the running one, or what a
    /// refresh reloads), if it used a cache: a printable preview.
    var key: String?
    var isProcess: Bool
    var status: String
    var flags: [String]
    var seq: UInt64
    var attempt: UInt32
    var updatedAtMs: UInt64
    var request: String?
    var value: String?
    var error: String?
    /// The last state events since the inspector started, oldest first:
    /// status (the page's word), flag names, seq, wall-clock time.
    var events: [(status: String, flags: [String], seq: UInt64, atMs: UInt64)] = []
}

extension Cell: InspectableCell {
    func inspection(showValues: Bool) -> CellInspection {
        let event = latestEvent
        let state = event.state
        var flags: [String] = []
        if state.isQueued { flags.append("queued") }
        if state.isPaused { flags.append("paused") }
        if state.isRefreshing { flags.append("refreshing") }
        if state.isPartial { flags.append("partial") }
        if event.isCancelled { flags.append("cancelled") }
        if state.isFromCache { flags.append("from cache") }
        if state.isStale { flags.append("stale") }
        if state.isPrevious { flags.append("previous") }
        if state.isPlaceholder { flags.append("placeholder") }
        if state.isOptimistic { flags.append("optimistic") }
        if event.isRolledBack { flags.append("rolled back") }
        let status = statusName(state.status)
        var inspection = CellInspection(
            id: id, name: name, key: cacheKey.map { keyPreview($0) },
            isProcess: flavor == .process, status: status, flags: flags, seq: event.seq,
            attempt: state.attempt, updatedAtMs: state.updatedAt,
            request: state.request.map { inspectionPreview($0) },
            value: showValues ? state.value.map { inspectionPreview($0) } : (state.value == nil ? nil : "(hidden)"),
            error: state.error.map { "\($0.domain) \($0.code)" + ($0.message.map { ": " + inspectionPreview($0) } ?? "") })
        inspection.events = (inspectorHistory?.entries ?? []).map {
            (statusName($0.status), CellHistory.names($0.flags), $0.seq, $0.atMs)
        }
        return inspection
    }

    /// The page's word for `status` in this cell's flavor.
    private func statusName(_ status: Status) -> String {
        switch (status, flavor) {
        case (.absent, .loadable): return "absent"
        case (.loading, .loadable): return "loading"
        case (.loaded, .loadable): return "loaded"
        case (.error, .loadable): return "error"
        case (.absent, .process): return "idle"
        case (.loading, .process): return "running"
        case (.loaded, .process): return "finished"
        case (.error, .process): return "failed"
        }
    }

    var inspectionID: UInt64 { id }

    func dropInspectorHistory() { inspectorHistory = nil }

    func inspectorCancel() {
        stop(reset: false)
    }

    func inspectorRefresh() {
        let ticket = requestLeave()
        refresh(ticket: ticket)
    }
}

/// A short, printable preview of a request or value: bytes as text with
/// other bytes escaped, anything else as Swift describes it; at most
/// `limit` characters.
func inspectionPreview<T>(_ thing: T, limit: Int = 96) -> String {
    var out = ""
    if let bytes = thing as? [UInt8] {
        for byte in bytes.prefix(limit) {
            if byte >= 0x20 && byte < 0x7f {
                out.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                let hex = String(byte, radix: 16)
                out += "\\x" + (hex.count < 2 ? "0" + hex : hex)
            }
        }
        if bytes.count > limit { out += "…" }
        return out
    }
    let text = (thing as? String) ?? String(describing: thing)
    out = String(text.prefix(limit))
    if text.count > limit { out += "…" }
    return out
}

/// A cache key as the inspector shows it: as text when it is UTF-8
/// without control characters, else as `inspectionPreview` shows bytes;
/// at most 256 characters.
func keyPreview(_ key: [UInt8]) -> String {
    if let text = String(validating: key, as: UTF8.self),
       !text.unicodeScalars.contains(where: { $0.value < 0x20 || ($0.value >= 0x7f && $0.value <= 0x9f) }) {
        return inspectionPreview(text, limit: 256)
    }
    return inspectionPreview(key, limit: 256)
}
