import CLibUV

/// The last state events of a cell, kept while an inspector runs, for the
/// page's timeline: at most `capacity`, the oldest dropped. Loop thread.
final class CellHistory {
    /// How many events a cell keeps.
    static let capacity = 16

    struct Entry {
        var status: Status
        /// `CellHistory.queued` and the other flag bits. 16 bits: the
        /// entry's size is unchanged (24 bytes), the padding after
        /// `status` holds them.
        var flags: UInt16
        var seq: UInt64
        /// Wall-clock time of the event.
        var atMs: UInt64
    }

    static let queued: UInt16 = 1
    static let refreshing: UInt16 = 2
    static let partial: UInt16 = 4
    static let cancelled: UInt16 = 8
    static let fromCache: UInt16 = 16
    static let stale: UInt16 = 32
    static let paused: UInt16 = 64
    static let previous: UInt16 = 128
    static let placeholder: UInt16 = 256
    static let optimistic: UInt16 = 512
    static let rolledBack: UInt16 = 1024

    private var ring = Ring<Entry>(capacity: CellHistory.capacity)

    func record(_ entry: Entry) { ring.append(entry) }

    /// The entries, oldest first.
    var entries: [Entry] { ring.elements }

    /// The names of `flags`' bits, as the inspector shows them.
    /// In the order the cell's own flags are listed (`Cell.inspection`).
    static func names(_ flags: UInt16) -> [String] {
        var out: [String] = []
        if flags & queued != 0 { out.append("queued") }
        if flags & paused != 0 { out.append("paused") }
        if flags & refreshing != 0 { out.append("refreshing") }
        if flags & partial != 0 { out.append("partial") }
        if flags & cancelled != 0 { out.append("cancelled") }
        if flags & fromCache != 0 { out.append("from cache") }
        if flags & stale != 0 { out.append("stale") }
        if flags & previous != 0 { out.append("previous") }
        if flags & placeholder != 0 { out.append("placeholder") }
        if flags & optimistic != 0 { out.append("optimistic") }
        if flags & rolledBack != 0 { out.append("rolled back") }
        return out
    }
}

/// A loader's loads over the last minutes, for the page's plot: one sample
/// every `sampleEveryMs`, the last `samplesKept` kept, each with the
/// latencies of the loads that ended since the one before (quantiles of
/// the difference of the runtime's histograms) and the jobs queued then.
/// Loop thread.
final class LoaderSeries {
    /// A sample every 5 s, 60 kept: the last 5 minutes.
    static let sampleEveryMs: UInt64 = 5_000
    static let samplesKept = 60
    /// The most loaders followed (the others' plots stay empty).
    static let loadersKept = 256

    struct Sample {
        var atMs: UInt64
        var loads: UInt64
        var p50Us: UInt64
        var p90Us: UInt64
        var maxUs: UInt64
        var queued: Int
    }

    /// The histogram at the last sample.
    private(set) var last: LatencyHistogram
    private var ring = Ring<Sample>(capacity: LoaderSeries.samplesKept)

    init(baseline: LatencyHistogram) {
        last = baseline
    }

    /// The sample of the loads since the last one, `histogram` being the
    /// loader's now (not kept: see `take`).
    func sample(at atMs: UInt64, _ histogram: LatencyHistogram, queued: Int) -> Sample {
        let since = histogram.since(last)
        return Sample(atMs: atMs, loads: since.count, p50Us: since.quantileUs(0.5), p90Us: since.quantileUs(0.9),
                      maxUs: since.maxNs / 1000, queued: queued)
    }

    /// Takes a sample and keeps it.
    func take(at atMs: UInt64, _ histogram: LatencyHistogram, queued: Int) {
        let s = sample(at: atMs, histogram, queued: queued)
        last = histogram
        ring.append(s)
    }

    /// The samples kept, oldest first.
    var samples: [Sample] { ring.elements }
}

/// The last `capacity` elements appended, the oldest overwritten.
struct Ring<Element> {
    let capacity: Int
    private var storage: [Element] = []
    private var next = 0

    init(capacity: Int) {
        self.capacity = max(capacity, 1)
    }

    mutating func append(_ element: Element) {
        if storage.count < capacity {
            storage.append(element)
        } else {
            storage[next] = element
            next = (next + 1) % capacity
        }
    }

    /// The elements, oldest first.
    var elements: [Element] { Array(storage[next...] + storage[..<next]) }
}

extension LatencyHistogram {
    /// The loads of this histogram that `earlier` (the same counters, read
    /// before) did not have. Its maximum is the upper bound of the highest
    /// bucket they fill (never above this histogram's maximum).
    func since(_ earlier: LatencyHistogram) -> LatencyHistogram {
        var out = LatencyHistogram()
        out.count = count >= earlier.count ? count - earlier.count : 0
        out.sumNs = sumNs >= earlier.sumNs ? sumNs - earlier.sumNs : 0
        var highest = -1
        for i in buckets.indices {
            let before = i < earlier.buckets.count ? earlier.buckets[i] : 0
            out.buckets[i] = buckets[i] >= before ? buckets[i] - before : 0
            if out.buckets[i] > 0 { highest = i }
        }
        if highest >= 0 {
            let bound = LatencyHistogram.upperBoundUs(highest)
            let (boundNs, overflow) = bound.multipliedReportingOverflow(by: 1000)
            out.maxNs = overflow ? maxNs : min(boundNs, maxNs)
        }
        return out
    }
}
