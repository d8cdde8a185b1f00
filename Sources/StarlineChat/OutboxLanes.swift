import StarlineCore

/// The order of a delivery run (W5): one lane per conversation (all moments share one), each lane's jobs
/// handed out one at a time in queue order — the next only once the one before it was reported, so it was
/// settled in chat.db first — and the lanes side by side, so a conversation that waits holds back no other.
///
/// `next` is the run's source (`BulkRun` pulls from it as workers free up); it blocks while every lane
/// with jobs left has one out, and `finished` (called from the run's report) frees the lane again. Of the
/// free lanes, the one whose next job was queued first goes first (a heap: O(log lanes) a job).
final class OutboxLanes: Sendable {
    private struct State {
        /// Indices into the run's jobs, per lane, in queue order.
        var lanes: [[Int]] = []
        var next: [Int] = []
        var laneOfJob: [Int] = []
        /// Free lanes with jobs left, as a binary min-heap on the index of their next job.
        var ready: [(job: Int, lane: Int)] = []
        /// Lanes with jobs not handed out yet (free or out).
        var left = 0

        mutating func push(_ lane: Int) {
            ready.append((lanes[lane][next[lane]], lane))
            var child = ready.count - 1
            while child > 0, ready[(child - 1) / 2].job > ready[child].job {
                ready.swapAt(child, (child - 1) / 2)
                child = (child - 1) / 2
            }
        }

        mutating func popFirst() -> Int? {
            guard let first = ready.first else { return nil }
            let last = ready.removeLast()
            if !ready.isEmpty {
                ready[0] = last
                var parent = 0
                while true {
                    let l = 2 * parent + 1, r = l + 1
                    var least = parent
                    if l < ready.count, ready[l].job < ready[least].job { least = l }
                    if r < ready.count, ready[r].job < ready[least].job { least = r }
                    guard least != parent else { break }
                    ready.swapAt(parent, least)
                    parent = least
                }
            }
            return first.lane
        }
    }

    private let state: Locked<State>
    /// How many lanes (conversations, plus one for moments) the run has.
    let count: Int

    init(_ jobs: [OutboxDelivery.Job]) {
        var s = State()
        var laneOfKey: [String: Int] = [:]
        for (index, job) in jobs.enumerated() {
            let key = job.kind == .message ? "message:" + job.conversationId : "moments"
            let lane: Int
            if let known = laneOfKey[key] {
                lane = known
            } else {
                lane = s.lanes.count
                laneOfKey[key] = lane
                s.lanes.append([])
            }
            s.lanes[lane].append(index)
            s.laneOfJob.append(lane)
        }
        s.next = Array(repeating: 0, count: s.lanes.count)
        // Lanes are numbered by their first job, so they are already in heap order.
        s.ready = s.lanes.indices.map { (s.lanes[$0][0], $0) }
        s.left = s.lanes.count
        count = s.lanes.count
        state = Locked(s)
    }

    /// The index (in the run's jobs) of the next job to send, waiting while every lane with jobs left has
    /// one out; nil when no lane has jobs left.
    func next() -> Int? {
        let picked: Int?? = state.await { s -> Int?? in
            guard let lane = s.popFirst() else { return s.left == 0 ? .some(nil) : nil }
            let job = s.lanes[lane][s.next[lane]]
            s.next[lane] += 1
            if s.next[lane] == s.lanes[lane].count { s.left -= 1 }
            return .some(job)
        }
        return picked ?? nil
    }

    /// The job at `index` was reported: its lane may hand out its next one.
    func finished(_ index: Int) {
        state.withLockNotifying { s in
            guard s.laneOfJob.indices.contains(index) else { return }
            let lane = s.laneOfJob[index]
            if s.next[lane] < s.lanes[lane].count { s.push(lane) }
        }
    }
}
