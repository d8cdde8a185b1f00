import StarlineCore

/// The order of a delivery run (W5): one lane per conversation (all moments share one), each lane's jobs
/// handed out one at a time in queue order — the next only once the one before it was reported, so it was
/// settled in chat.db first — and the lanes side by side, so a conversation that waits holds back no other.
///
/// `next` is the run's source (`BulkRun` pulls from it as workers free up); it blocks while every lane
/// with jobs left has one out, and `finished` (called from the run's report) frees the lane again.
final class OutboxLanes: Sendable {
    private struct State {
        /// Indices into `jobs`, per lane, in queue order.
        var lanes: [[Int]] = []
        var next: [Int] = []
        var out: [Bool] = []
        var laneOfJob: [Int] = []
    }

    let jobs: [OutboxDelivery.Job]
    private let state: Locked<State>
    /// How many lanes (conversations, plus one for moments) the run has.
    let count: Int

    init(_ jobs: [OutboxDelivery.Job]) {
        self.jobs = jobs
        var s = State()
        var laneOfKey: [String: Int] = [:]
        for (index, job) in jobs.enumerated() {
            let key = job.kind == .message ? "message:" + job.conversationId : "moments"
            let lane = laneOfKey[key] ?? {
                s.lanes.append([])
                laneOfKey[key] = s.lanes.count - 1
                return s.lanes.count - 1
            }()
            s.lanes[lane].append(index)
            s.laneOfJob.append(lane)
        }
        s.next = Array(repeating: 0, count: s.lanes.count)
        s.out = Array(repeating: false, count: s.lanes.count)
        count = s.lanes.count
        state = Locked(s)
    }

    /// The index in `jobs` of the next job: of the lanes with none out, the one whose next job was queued
    /// first. Waits while every lane with jobs left has one out; nil when no lane has jobs left.
    func next() -> Int? {
        let picked: Int?? = state.await { s -> Int?? in
            var pick: Int?
            var left = false
            for lane in s.lanes.indices where s.next[lane] < s.lanes[lane].count {
                left = true
                if !s.out[lane], pick.map({ s.lanes[lane][s.next[lane]] < s.lanes[$0][s.next[$0]] }) ?? true { pick = lane }
            }
            guard left else { return .some(nil) }
            guard let lane = pick else { return nil }
            s.out[lane] = true
            s.next[lane] += 1
            return .some(s.lanes[lane][s.next[lane] - 1])
        }
        return picked ?? nil
    }

    /// The job at `index` was reported: its lane may hand out the next one.
    func finished(_ index: Int) {
        state.withLockNotifying { s in
            guard s.laneOfJob.indices.contains(index) else { return }
            s.out[s.laneOfJob[index]] = false
        }
    }
}
