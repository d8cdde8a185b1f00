import StarlineCore
import Testing
@testable import StarlinePlatform
@testable import StarlineBulk

/// S16: one process as fast as the server allows. `--parallel auto` raises the number in flight while that
/// raises the throughput, and no further; `--rate` takes a ceiling as providers publish it and as shards split it.
@Suite struct ConcurrencyTunerTests {
    /// A server `latency` seconds away that answers at most `capacity` requests a second: with L in flight the
    /// throughput is min(L / latency, capacity) (Little's law), as a real one behaves, without noise.
    struct ModelServer {
        var latency: Double
        var capacity: Double
        func rate(_ limit: Int) -> Double { min(Double(limit) / latency, capacity) }
    }

    /// Feeds the tuner the answers `server` gives over `seconds`, at the limit the tuner sets as it goes; returns
    /// the limit at the end.
    func drive(_ tuner: inout ConcurrencyTuner, _ server: ModelServer, seconds: Double, from start: UInt64 = 1) -> UInt64 {
        var now = start
        let end = start + UInt64(seconds * 1e9)
        while now < end {
            now += UInt64(1e9 / server.rate(tuner.limit))
            _ = tuner.answered(at: now)
        }
        return now
    }

    @Test func testS16AutoRaisesTheConcurrencyWhileItRaisesTheThroughput() {
        // 10 ms away, room for 3,000 a second: 8 in flight give 800/s; the knee is at 30.
        var tuner = ConcurrencyTuner(start: 8, ceiling: 64)
        _ = drive(&tuner, ModelServer(latency: 0.010, capacity: 3_000), seconds: 30)
        #expect(tuner.limit >= 30, "limit \(tuner.limit)")
        // Past the knee a raise adds only queueing, so it is undone: the limit stays within one doubling of the knee.
        #expect(tuner.limit <= 60, "limit \(tuner.limit)")
        #expect(tuner.peak <= 64)
    }

    @Test func testS16AutoStaysPutWhenMoreInFlightOnlyQueue() {
        // A server already at its ceiling with 8 in flight: no raise pays, the limit returns to 8 after each probe.
        var tuner = ConcurrencyTuner(start: 8, ceiling: 64)
        _ = drive(&tuner, ModelServer(latency: 0.001, capacity: 2_000), seconds: 30)
        #expect(tuner.limit == 8, "limit \(tuner.limit)")
        #expect(tuner.peak == ConcurrencyTuner.raised(8))
    }

    @Test func testS16AutoReachesItsCeilingOnAFarServerAndNoFurther() {
        // While raises pay in full they double: a far server gets 64 in flight within a second and a half.
        var quick = ConcurrencyTuner(start: 8, ceiling: 64)
        _ = drive(&quick, ModelServer(latency: 0.050, capacity: 100_000), seconds: 1.5)
        #expect(quick.limit == 64, "limit \(quick.limit)")
        var tuner = ConcurrencyTuner(start: 8, ceiling: 64)
        _ = drive(&tuner, ModelServer(latency: 0.050, capacity: 100_000), seconds: 30)
        #expect(tuner.limit == 64 && tuner.peak == 64)
    }

    @Test func testS16AutoBacksOffOnThrottlesAndLostAnswers() {
        var tuner = ConcurrencyTuner(start: 8, ceiling: 64)
        let server = ModelServer(latency: 0.020, capacity: 100_000)
        var now = drive(&tuner, server, seconds: 20)
        #expect(tuner.limit == 64)
        // A 429 halves it.
        #expect(tuner.throttled() == 32)
        // Requests without an answer take a quarter of what was added, and never go under the start.
        #expect(tuner.unanswered() == 24)
        for _ in 0..<20 { _ = tuner.unanswered() }
        #expect(tuner.limit == 8)
        // The limit grows back once answers come at a pace that rises with it.
        now = drive(&tuner, server, seconds: 20, from: now)
        #expect(tuner.limit == 64, "limit \(tuner.limit)")
        // 429s take it under the start (the server asked for less), down to one.
        for _ in 0..<10 { _ = tuner.throttled() }
        #expect(tuner.limit == 1)
    }

    @Test func testS16AServerThatSlowsDownForEveryoneGetsFewerRequests() {
        var tuner = ConcurrencyTuner(start: 8, ceiling: 64)
        let now = drive(&tuner, ModelServer(latency: 0.010, capacity: 3_000), seconds: 30)
        let before = tuner.limit
        // The same server, now answering three times slower for everyone: its latency triples at a lower
        // throughput; the run takes requests away instead of queueing more.
        _ = drive(&tuner, ModelServer(latency: 0.030, capacity: 1_000), seconds: 3, from: now)
        #expect(tuner.limit < before, "limit \(tuner.limit), was \(before)")
    }

    @Test func testS16AutoRunsAboveEightThroughTheGate() {
        let gate = RateGate(maxConcurrency: 64, startingConcurrency: 8)
        #expect(gate.allowedConcurrency == 8)
        let fixed = RateGate(maxConcurrency: 8)
        #expect(fixed.allowedConcurrency == 8 && fixed.peakConcurrency == 8)
    }

    @Test func testS16RateTakesACeilingAsProvidersPublishItAndAsShardsSplitIt() throws {
        #expect(try BulkRate(parsing: "150").requestsPerSecond == 150)
        #expect(try BulkRate(parsing: "150/4").requestsPerSecond == 37.5)
        #expect(try BulkRate(parsing: "2400/1m").requestsPerSecond == 40)
        #expect(try BulkRate(parsing: "3000/150s").requestsPerSecond == 20)
        #expect(try BulkRate(parsing: "3000/150s/4").requestsPerSecond == 5)
        #expect(try BulkRate(parsing: "1200/1m/3").description == "1200/1m/3")
        for bad in [
            "", "0", "-5", "x", "150/0", "150/s", "3000/150/4", "3000/150s/0", "1/2d", "100001", "1/1d/100", "5/4/3/2",
            "9999999999999999999999"
        ] {
            #expect(throws: StarlineError.self, "\(bad)") { try BulkRate(parsing: bad) }
        }
        #expect(try BulkConcurrency(parsing: "auto") == .auto)
        #expect(try BulkConcurrency(parsing: "auto").start == 8 && BulkConcurrency.auto.ceiling == 64)
        #expect(try BulkConcurrency(parsing: "12") == .fixed(12))
        for bad in ["0", "129", "Auto", "", "8.5"] {
            #expect(throws: StarlineError.self, "\(bad)") { try BulkConcurrency(parsing: bad) }
        }
    }
}
