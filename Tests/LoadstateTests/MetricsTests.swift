import Testing
@_spi(LoadstateC) @testable import Loadstate

@Suite(.timeLimit(.minutes(1)))
struct MetricsTests {
    @Test func latencyBucketsArePowersOfTwoMicroseconds() {
        #expect(LoadMetrics.bucket(ns: 0) == 0)
        #expect(LoadMetrics.bucket(ns: 999) == 0)
        #expect(LoadMetrics.bucket(ns: 1_000) == 1)
        #expect(LoadMetrics.bucket(ns: 3_999) == 2)
        #expect(LoadMetrics.bucket(ns: 4_000) == 3)
        #expect(LoadMetrics.bucket(ns: UInt64.max) == LoadMetrics.latencyBuckets - 1)
    }

    @Test func quantilesStayWithinTheirBucketAndTheMaximum() {
        var h = LatencyHistogram()
        #expect(h.quantileUs(0.5) == 0)
        // 90 loads of 100..127 us (bucket 7), 10 of 1000 us (bucket 10).
        h.buckets[7] = 90
        h.buckets[10] = 10
        h.count = 100
        h.maxNs = 1_000_000
        let p50 = h.quantileUs(0.5)
        #expect(p50 >= 64 && p50 <= 128)
        #expect(h.quantileUs(0.9) <= 128)
        let p99 = h.quantileUs(0.99)
        #expect(p99 >= 512 && p99 <= 1_000)
        #expect(h.quantileUs(1) == 1_000)
    }

    @Test func aLoadIsCountedOnceFromStartToEnd() async throws {
        let f = try CoreFixture()
        defer { f.close() }
        f.load("a")
        _ = await f.log.next()
        let job = await f.loader.nextJob()
        #expect(f.runtime.statistics().loads.started == 1)
        #expect(f.runtime.statistics().loads.jobsInFlight == 1)
        f.submit(.succeed("A"), job)
        _ = await f.log.next()
        let stats = f.runtime.statistics()
        #expect(stats.loads.succeeded == 1)
        #expect(stats.loads.latency.count == 1)
        #expect(stats.loads.jobsInFlight == 0)
        #expect(stats.eventsDelivered == 2)
        #expect(stats.loaders.map(\.id) == [f.loader.id])
        let text = f.runtime.metricsText()
        #expect(text.contains("\nloadstate_loads_ended_total{loader=\"\(f.loader.id)\",outcome=\"succeeded\"} 1\n"))
        #expect(text.contains("\nloadstate_load_duration_seconds_count{loader=\"\(f.loader.id)\"} 1\n"))
    }
}
