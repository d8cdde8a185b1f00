/// How many requests a bulk run keeps in flight when the user did not fix it (`--parallel auto`, S16): as many
/// as raise the throughput, found by probing. A server far away (or slow per request) needs many in flight to be
/// kept busy — 8 connections to one 10 ms away stop at 800 requests a second, whatever the server could do —
/// while a server near its ceiling gains nothing from more and only queues them.
///
/// Small steps up, multiplicative retreat (AIMD, as TCP does, with its slow start), with latency as the judge:
/// each window of answers gives a throughput X at the limit L; by Little's law the latency is L / X. A raise
/// that leaves the latency as it was raises X in proportion, and is followed by another — twice the size while
/// they pay in full, so the limit may overshoot the knee by up to one doubling at the same throughput; a raise whose extra
/// requests only wait in the server's queue (the latency rose with L, X did not grow by 5 %) is undone and the
/// limit held for a while before the next probe. While held, a latency that doubles with a throughput that
/// fell (the server slowed down for everyone) takes a quarter off the limit; a 429 halves it (`throttled`); a
/// request without an answer (a refused or reset connection: a server at its connection limit, or several
/// processes sharing one) takes a quarter off what the tuner added, never going under the start.
struct ConcurrencyTuner: Sendable {
    let ceiling: Int
    /// Where the run started: requests without an answer never take the limit under it (a few bad items must not
    /// slow the run, S16), a 429 does.
    let start: Int
    private(set) var limit: Int
    /// The most the limit reached during the run (the summary reports it).
    private(set) var peak: Int

    private enum Step: Sendable {
        /// The limit was raised from `from`, where the throughput was `rate`: the next window judges the raise.
        case probing(from: Int, rate: Double)
        /// No probe for `windows` more windows; `latency`/`rate`: the first window's, what a slowdown is judged by.
        case holding(windows: Int, latency: Double?, rate: Double?)
    }

    private var step: Step
    private var windowStart: UInt64?
    private var answers = 0

    /// Raise by a quarter (at least one); by double while each raise pays in full (`judge`).
    static func raised(_ limit: Int) -> Int { limit + max(1, limit / 4) }
    /// A quarter (at least one) off, down to `floor`.
    static func lowered(_ limit: Int, floor: Int) -> Int { max(floor, limit - max(1, limit / 4)) }
    /// A raise pays when the throughput grows by this much (noise on a shared machine is a few per cent), or by half
    /// the raise when that is less.
    static let gain = 1.05
    /// Windows a limit is held after a raise that did not pay or a throttle.
    static let holdWindows = 10
    /// A window lasts at least this long, and at least `answersPerLimit` answers per request in flight.
    static let windowNanoseconds: UInt64 = 200_000_000
    static let answersPerLimit = 4

    init(start: Int, ceiling: Int) {
        self.ceiling = max(1, ceiling)
        limit = min(max(1, start), self.ceiling)
        self.start = limit
        peak = limit
        // The first window only measures the start.
        step = .holding(windows: 1, latency: nil, rate: nil)
    }

    /// One answer (not a throttle, not a request without answer) at `now` (monotonic nanoseconds); returns the limit.
    mutating func answered(at now: UInt64) -> Int {
        guard let start = windowStart else {
            windowStart = now
            answers = 1
            return limit
        }
        answers += 1
        let elapsed = now &- start
        guard elapsed >= Self.windowNanoseconds, answers >= Self.answersPerLimit * limit else { return limit }
        let rate = Double(answers) * 1e9 / Double(elapsed)
        windowStart = now
        answers = 0
        judge(rate: rate)
        return limit
    }

    /// A 429: the limit halves, and is held (the gate waits out the Retry-After); returns the new limit.
    mutating func throttled() -> Int {
        limit = max(1, limit / 2)
        step = .holding(windows: Self.holdWindows, latency: nil, rate: nil)
        windowStart = nil
        return limit
    }

    /// A request without an answer; returns the new limit.
    mutating func unanswered() -> Int {
        guard limit > start else { return limit }
        limit = Self.lowered(limit, floor: start)
        step = .holding(windows: Self.holdWindows, latency: nil, rate: nil)
        windowStart = nil
        return limit
    }

    private mutating func judge(rate: Double) {
        let latency = Double(limit) / rate
        switch step {
        case .probing(let from, let before):
            // A small last raise (63 to a ceiling of 64) is judged by half its own size.
            let paid = rate >= before * min(Self.gain, 1 + (Double(limit) / Double(from) - 1) / 2)
            if paid {
                // A raise that paid in (nearly) full proportion finds the server far from busy: double the next
                // one (TCP's slow start), so a far server gets its 64 in a second, not in ten. At the ceiling,
                // `probe` holds instead.
                let proportional = rate >= before * (1 + 0.8 * (Double(limit) / Double(from) - 1))
                probe(from: rate, doubling: proportional)
            } else {
                // The extra requests only queued: back to where the throughput was the same for less, judged
                // from now on by what it gave there.
                limit = from
                step = .holding(windows: Self.holdWindows, latency: Double(from) / before, rate: before)
            }
        case .holding(let windows, let heldLatency, let heldRate):
            if let heldLatency, let heldRate, latency > 2 * heldLatency, rate < heldRate, limit > 1 {
                limit = Self.lowered(limit, floor: 1)
                step = .holding(windows: Self.holdWindows, latency: nil, rate: nil)
            } else if windows > 1 {
                step = .holding(windows: windows - 1, latency: heldLatency ?? latency, rate: heldRate ?? rate)
            } else {
                probe(from: rate)
            }
        }
    }

    private mutating func probe(from rate: Double, doubling: Bool = false) {
        guard limit < ceiling else {
            step = .holding(windows: Self.holdWindows, latency: Double(limit) / rate, rate: rate)
            return
        }
        step = .probing(from: limit, rate: rate)
        limit = min(ceiling, doubling ? 2 * limit : Self.raised(limit))
        peak = max(peak, limit)
    }
}
