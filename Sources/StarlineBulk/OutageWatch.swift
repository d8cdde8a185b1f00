import StarlineCore
import StarlineHTTP

/// Whether the server is down for everyone, as a bulk run sees it: an outage is the run's
/// problem, not the item's; a few bad items are their own problem and never hold the others.
///
/// Transient failures (no answer, a 5xx) of at least `threshold` *distinct* items in a row, with no answer in
/// between, make the server *suspect*: every worker holds its next request and one probe goes out — the
/// request of an item that is waiting anyway, so the probe tests exactly the route the run needs (an outage of
/// one route is an outage for this run). A probe that gets any answer ends the suspicion and nothing is
/// refunded. A probe that fails confirms the outage: the run is *down*, the failures of the streak that led to
/// it are refunded to their items (`isOutage(streak:)`), and probes go on alone with backoff (jitter, capped
/// at `maxProbeInterval`) until one is answered.
///
/// Which item probes decides whether a few bad items can pass for an outage, so the watch ranks the waiting
/// items and the probe goes to the best one: an item that has never failed, then one whose failures were all
/// part of streaks with no answer around them, last a *known-bad* item — one that failed while the server
/// answered other items sent after it failed (a persistent 500 on one user's sessions, a request that hangs;
/// an answer to a request sent earlier proves nothing about it, `answered(probe:ticket:)`). A known-bad item's
/// failures are its own: they are always charged, never extend a streak, and its failing probe confirms
/// nothing (the next waiter probes). A request that times out is therefore one item's problem until other
/// items time out too, and one bad item among good ones never makes the workers wait for it.
///
/// Past `timeout` seconds of waiting in all (every outage of the run together) the watch stops: the engine
/// reports the items it did not finish `skipped`, with the last failure as the cause (exit 7, resumable).
public final class OutageWatch: Sendable {
    public enum Phase: Sendable, Equatable { case up, suspect, down }

    /// What the engine should do before an item's next request.
    public enum Admission: Sendable {
        case go
        /// This worker sends the probe: its answer is reported with `answered(probe:)` / `transientFailure(probe: true)`.
        case probe
        /// This worker sends the probe, with an item it takes now instead of its own, which has failed already
        /// (`mayTakeFresh`): every worker may hold an item that fails on its own, and only an item that has
        /// not failed tells an outage from them.
        case probeWithFreshItem
        /// The run is stopped, or waited out its outage budget (the error says which).
        case stop(StarlineError?)
    }

    /// What a transient failure cost its item.
    public enum Charge: Sendable, Equatable {
        /// Counted against the item's attempts; refunded later if `isOutage(streak:)` becomes true.
        case charged(streak: Int)
        /// Made while the server was suspect or down: not the item's.
        case free
    }

    public struct Event: Sendable {
        public enum Kind: Sendable { case suspect, down, waiting, up }
        public var kind: Kind
        /// Seconds waited for the server in this outage (for `up`: how long it lasted).
        public var waited: Double
        /// Seconds of waiting in all before the run gives up.
        public var budget: Double
        public var lastError: StarlineError?
    }

    public let threshold: Int
    public let timeout: Double
    public let baseProbeInterval: Double
    public let maxProbeInterval: Double
    let clock: BulkClock
    let onEvent: @Sendable (Event) -> Void

    private struct State {
        var phase = Phase.up
        var streakId = 0
        /// The distinct items (not known-bad) that failed since the last answer, each with the number of its
        /// latest failure (`failures` then).
        var streakItems: [Int: UInt64] = [:]
        /// Transient failures so far (the latest is number `failures`): a request's `ticket` is this count when
        /// it went out.
        var failures: UInt64 = 0
        var outageStreaks: Set<Int> = []
        /// Items with a transient failure so far, each with the number of its latest; `knownBad` those that failed
        /// while the server answered others. Both forget an item when it ends (`ended`), so they hold at most the
        /// items in flight and waiting.
        var failed: [Int: UInt64] = [:]
        var knownBad: Set<Int> = []
        /// The items whose request is out (`sending`), each with its ticket.
        var inFlight: [Int: UInt64] = [:]
        /// The items waiting in `admit` while the server is suspect or down, with their rank (`rank`).
        var waiting: [Int: Int] = [:]
        var probing = false
        var probes = 0
        var nextProbeAt: UInt64 = 0
        var since: UInt64 = 0
        var waitedBefore: UInt64 = 0
        var lastNotice: UInt64 = 0
        var lastError: StarlineError?
        var stopped: StarlineError??
    }

    private let state = Locked(State())

    public init(
        threshold: Int = 3, timeout: Double = 300, baseProbeInterval: Double = 0.05, maxProbeInterval: Double = 0.5,
        clock: BulkClock = .system, onEvent: @escaping @Sendable (Event) -> Void = { _ in }
    ) {
        self.threshold = max(2, threshold)
        self.timeout = timeout.isFinite ? max(0, timeout) : 300
        self.baseProbeInterval = baseProbeInterval
        self.maxProbeInterval = maxProbeInterval
        self.clock = clock
        self.onEvent = onEvent
    }

    public var phase: Phase { state.withLock { $0.phase } }

    /// Seconds the run has waited for the server so far (outages over and the current one).
    public var waitedSeconds: Double {
        state.withLock { s in Double(s.waitedBefore + (s.phase == .up ? 0 : Self.elapsed(clock.now(), since: s.since))) / 1e9 }
    }

    /// Waits while the server is suspect or down; returns when the worker holding `item` may send, must probe,
    /// or must stop. Of the items waiting, the best ranked probes (`rank`); when that item has failed before
    /// and the worker `mayTakeFresh`, it probes with a fresh item instead.
    public func admit(item: Int, mayTakeFresh: Bool = false) -> Admission {
        while true {
            enum Step { case done(Admission), wait(UInt64, UInt64), event(Event, UInt64, UInt64) }
            let step: Step = state.withLock { s in
                // Read under the lock: a time read before it could be older than a `since` set meanwhile.
                let now = clock.now()
                func leave(_ admission: Admission) -> Step {
                    s.waiting[item] = nil
                    return .done(admission)
                }
                if let stopped = s.stopped { return leave(.stop(stopped)) }
                if s.phase == .up { return leave(.go) }
                let waited = s.waitedBefore + Self.elapsed(now, since: s.since)
                if Double(waited) / 1e9 > timeout {
                    let error = Self.gaveUp(after: Double(waited) / 1e9, last: s.lastError)
                    s.stopped = .some(error)
                    return leave(.stop(error))
                }
                let rank = Self.rank(item, s)
                s.waiting[item] = rank
                if !s.probing, now >= s.nextProbeAt, rank <= s.waiting.values.min() ?? rank {
                    s.probing = true
                    return leave(rank > 0 && mayTakeFresh ? .probeWithFreshItem : .probe)
                }
                let slice: UInt64 = 20_000_000
                let wake = s.probing ? now + slice : min(s.nextProbeAt, now + slice)
                if s.phase == .down, Self.elapsed(now, since: s.lastNotice) >= 10_000_000_000 {
                    s.lastNotice = now
                    return .event(
                        Event(
                            kind: .waiting, waited: Double(Self.elapsed(now, since: s.since)) / 1e9, budget: timeout, lastError: s.lastError
                        ), now, wake)
                }
                return .wait(now, wake)
            }
            switch step {
            case .done(let admission): return admission
            case .wait(let now, let wake): clock.sleep(Self.elapsed(wake, since: now))
            case .event(let event, let now, let wake):
                onEvent(event)
                clock.sleep(Self.elapsed(wake, since: now))
            }
        }
    }

    /// Taken just before a request goes out and given back with its answer (`answered(probe:ticket:)`): which
    /// failures the answer can speak of.
    public var ticket: UInt64 { state.withLock { $0.failures } }

    /// The `ticket` of `item`'s request, which goes out now: the watch counts it in flight until its answer or
    /// failure is reported (`answered(item:)`, `transientFailure`), which `exhausted` waits for.
    public func sending(item: Int) -> UInt64 {
        state.withLock { s in
            s.inFlight[item] = s.failures
            return s.failures
        }
    }

    /// What becomes of an item whose attempts are all spent (`exhausted`).
    public enum Exhaustion: Sendable, Equatable {
        /// Its failures are its own: it fails.
        case fails
        /// The server is suspect or down: its failures may be the outage's, and its next request waits in `admit`
        /// like every other (it is not charged while the server is down; a confirmed outage refunds its streak).
        case waits
        /// The run stopped meanwhile.
        case stopped
    }

    /// Whether an item that has spent its attempts fails now. Its charges stand only if the evidence says the
    /// failures were its own: the server answered a request sent after its last failure (known-bad).
    ///
    /// While requests of other items sent before that failure are still out, their outcome decides — they fail
    /// too (a streak of distinct items: the server is suspect) or one is answered —, so this waits for them.
    /// When nothing else is out and the run `canProbe` (it can ask the server something else when no fresh item
    /// is left), the item's own streak makes the server suspect: the probe that follows (a fresh item, else
    /// `serverAnswers`) either is answered — the item is known-bad and fails — or fails and confirms an outage
    /// that refunds the item's streak. Without either, a worker whose requests fail fast while the others' are
    /// slow to report (a starved machine, a refused connection against requests still hanging), or a run with
    /// fewer workers than the threshold, spent all its attempts alone and failed its item in what was an outage
    /// for everyone. A run that cannot probe fails it when nothing else can tell.
    public func exhausted(item: Int, canProbe: Bool = false) -> Exhaustion {
        var event: Event?
        let verdict: Exhaustion =
            state.await { s -> Exhaustion? in
                if s.stopped != nil { return .stopped }
                if s.knownBad.contains(item) { return .fails }
                if s.phase != .up { return .waits }
                let last = s.failed[item] ?? 0
                if s.inFlight.contains(where: { $0.key != item && $0.value < last }) { return nil }
                guard canProbe, last > 0 else { return .fails }
                // The probe's answer then speaks of this item's failure (`answered`: a streak's items it went out after).
                s.streakItems[item] = last
                event = raiseSuspicion(&s, now: clock.now())
                return .waits
            } ?? .fails
        if let event { onEvent(event) }
        return verdict
    }

    /// An answer (any status the run can act on: a success, a 4xx, a 429): the server is up — as of when the
    /// request went out. `ticket` (taken then) tells the failures before it from those after: with several
    /// workers, the answer to a request sent before the server went down can arrive after other items failed,
    /// and it proves nothing about them — they are not known-bad for it, and a confirmed outage ends only with a
    /// probe's answer (every other request in flight then went out before the suspicion). Without a ticket the
    /// request went out after every failure so far.
    ///
    /// An answer to a request sent before every failure of the current streak says nothing about them: it neither
    /// ends the streak nor a suspicion (a held request answered late would otherwise hide an outage's start).
    /// `item`: whose request it was, no longer in flight.
    public func answered(probe: Bool = false, ticket: UInt64? = nil, item: Int? = nil) {
        let event: Event? = state.withLockNotifying { s in
            let now = clock.now()
            if probe { s.probing = false }
            if let item { s.inFlight[item] = nil }
            let sent = ticket ?? s.failures
            if !probe, let first = s.streakItems.values.min(), sent < first { return nil }
            // The server answered a request sent after these items failed: unless an outage explained it, they
            // fail on their own.
            if !s.outageStreaks.contains(s.streakId) {
                s.knownBad.formUnion(s.streakItems.filter { $0.value <= sent }.keys)
            }
            s.streakId += 1
            s.streakItems = [:]
            guard s.phase != .up, probe || s.phase == .suspect else { return nil }
            let wasDown = s.phase == .down
            let lasted = Self.elapsed(now, since: s.since)
            s.waitedBefore += lasted
            s.phase = .up
            s.probes = 0
            return wasDown ? Event(kind: .up, waited: Double(lasted) / 1e9, budget: timeout, lastError: s.lastError) : nil
        }
        if let event { onEvent(event) }
    }

    /// A request of `item` that got no answer, or a 5xx.
    public func transientFailure(item: Int, probe: Bool, error: StarlineError) -> Charge {
        var event: Event?
        let charge: Charge = state.withLockNotifying { s in
            let now = clock.now()
            s.lastError = error
            s.failures += 1
            s.failed[item] = s.failures
            s.inFlight[item] = nil
            if probe { s.probing = false }
            if s.knownBad.contains(item) {
                // Its own failure, whatever the phase: charged, and no evidence about the server. The next waiter
                // probes at once.
                if probe { s.nextProbeAt = now }
                return .charged(streak: -1)
            }
            if probe, s.phase != .up {
                event = probeFailed(&s, now: now, error: error)
                return .free
            }
            guard s.phase == .up else { return .free }
            s.streakItems[item] = s.failures
            let streak = s.streakId
            if s.streakItems.count >= threshold { event = raiseSuspicion(&s, now: now) }
            return .charged(streak: streak)
        }
        if let event { onEvent(event) }
        return charge
    }

    /// A probe that was not an item's request (`BulkRun`'s `serverAnswers`, when no fresh item is left) got no answer.
    public func probeFailed(error: StarlineError) {
        let event: Event? = state.withLockNotifying { s in
            s.probing = false
            s.lastError = error
            return s.phase == .up ? nil : probeFailed(&s, now: clock.now(), error: error)
        }
        if let event { onEvent(event) }
    }

    /// The server is suspect from `now`: every worker holds its next request and the next waiter probes at once.
    private func raiseSuspicion(_ s: inout State, now: UInt64) -> Event {
        s.phase = .suspect
        s.since = now
        s.probes = 0
        s.nextProbeAt = now
        return Event(kind: .suspect, waited: 0, budget: timeout, lastError: s.lastError)
    }

    /// A failed probe: a suspicion is confirmed (the streak that raised it was the outage, not its items, and is
    /// refunded), and the next probe waits its backoff.
    private func probeFailed(_ s: inout State, now: UInt64, error: StarlineError) -> Event? {
        var event: Event?
        if s.phase == .suspect {
            s.phase = .down
            s.outageStreaks.insert(s.streakId)
            s.lastNotice = now
            event = Event(kind: .down, waited: Double(Self.elapsed(now, since: s.since)) / 1e9, budget: timeout, lastError: error)
        }
        s.probes += 1
        s.nextProbeAt = now + ReplyLimits.nanoseconds(probeInterval(s.probes))
        return event
    }

    /// The item is done with (its result was reported): the watch forgets what it knew of it.
    public func ended(item: Int) {
        state.withLockNotifying { s in
            s.failed[item] = nil
            s.knownBad.remove(item)
            s.waiting[item] = nil
            s.inFlight[item] = nil
        }
    }

    /// The items waiting in `admit` and their rank (tests).
    var waitingItems: [Int: Int] { state.withLock { $0.waiting } }

    /// The order in which waiting items probe: 0 never failed, 1 failed only where no answer came, 2 known-bad.
    private static func rank(_ item: Int, _ s: State) -> Int {
        s.knownBad.contains(item) ? 2 : s.failed[item] != nil ? 1 : 0
    }

    /// True once the streak a failure was charged in turned out to be an outage: the charge is refunded.
    public func isOutage(streak: Int) -> Bool { state.withLock { $0.outageStreaks.contains(streak) } }

    /// Ends every wait: `admit` answers `.stop(error)` from now on.
    public func stop(_ error: StarlineError?) {
        state.withLockNotifying { s in if s.stopped == nil { s.stopped = .some(error) } }
    }

    /// Backoff of the n-th failed probe (1-based): base × 2^(n-1), at most `maxProbeInterval`, with equal jitter.
    func probeInterval(_ n: Int) -> Double {
        RetryPolicy(retries: 0, baseDelay: baseProbeInterval, maxDelay: maxProbeInterval).backoff(max(0, n - 1))
    }

    /// `now - since`, 0 when `since` is later (never a wrapped-around "waited for 584 years").
    static func elapsed(_ now: UInt64, since: UInt64) -> UInt64 { now > since ? now - since : 0 }

    static func gaveUp(after seconds: Double, last: StarlineError?) -> StarlineError {
        let code: ErrorCode = last?.code == .server || last?.code == .timeout ? last!.code : .network
        let cause = last.map { ": \($0.message)" } ?? ""
        return StarlineError(
            code,
            "the server did not answer for \(Int(seconds.rounded())) s (--outage-timeout)\(cause); the items not finished were skipped: --resume finishes them",
            details: .object([("outage", .bool(true)), ("waitedSeconds", .int(Int(seconds.rounded())))]))
    }
}
