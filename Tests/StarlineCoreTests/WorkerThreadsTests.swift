#if canImport(Glibc)
import Glibc
#endif
import StarlineCore
import Synchronization
import Testing

@Suite struct WorkerThreadsTests {
    @Test(
        "every worker runs exactly once, on distinct threads, and all have finished when run returns",
        arguments: [0, 1, 2, 7])
    func everyWorkerRunsOnce(count: Int) {
        let runs = Locked<[Int: Int]>([:])
        let threads = Locked<Set<UInt>>([])
        WorkerThreads.run(count: count) { worker in
            usleep(2_000)  // overlap, so that distinct threads are really needed
            runs.withLock { $0[worker, default: 0] += 1 }
            threads.withLock { _ = $0.insert(UInt(pthread_self())) }
        }
        let seen = runs.withLock { $0 }
        #expect(seen.keys.sorted() == Array(0..<count))
        #expect(seen.values.allSatisfy { $0 == 1 })
        #expect(threads.withLock { $0.count } == count)
    }

    @Test("workers sharing a counter process every item exactly once")
    func sharedCounterCoversAllItems() {
        let next = Atomic<Int>(0)
        let done = Locked<[Int]>(Array(repeating: 0, count: 1_000))
        WorkerThreads.run(count: 4) { _ in
            while true {
                let i = next.wrappingAdd(1, ordering: .relaxed).oldValue
                guard i < 1_000 else { return }
                done.withLock { $0[i] += 1 }
            }
        }
        #expect(done.withLock { $0 }.allSatisfy { $0 == 1 })
    }
}
