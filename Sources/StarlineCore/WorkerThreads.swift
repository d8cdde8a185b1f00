#if canImport(Glibc)
import Glibc
#endif

/// The suite's one way to start threads: a fixed number of POSIX threads joined before returning (`run`),
/// or one detached thread (`detach`) for blocking work whose caller does not wait in place.
///
/// `DispatchQueue.concurrentPerform` does the same, but linking libdispatch into a tool costs every start of
/// it: its static tables carry ~4,000 relocations the dynamic loader must apply (and the pages it dirties),
/// and it probes `/sys/devices/system/cpu` when it initialises. sl-qr's parallel decode needs only this.
public enum WorkerThreads {
    /// Calls `body(worker)` for `worker` in `0..<count`: worker 0 on the calling thread, the others on new
    /// threads; returns when all have returned. When a thread cannot be created (EAGAIN: a process or user
    /// thread limit), its worker runs on the calling thread after worker 0, so every worker runs exactly once.
    /// Bodies that share work should take it from a shared counter, so fewer threads only means less overlap.
    public static func run(count: Int, _ body: (Int) -> Void) {
        guard count > 1 else {
            if count == 1 { body(0) }
            return
        }
        withoutActuallyEscaping(body) { escapable in
            var started: [pthread_t] = []
            var leftOver: [Int] = []
            for worker in 1..<count {
                let context = Unmanaged.passRetained(WorkerContext(worker: worker, body: escapable)).toOpaque()
                var thread = pthread_t()
                if pthread_create(&thread, nil, workerThreadMain, context) == 0 {
                    started.append(thread)
                } else {
                    Unmanaged<WorkerContext>.fromOpaque(context).release()
                    leftOver.append(worker)
                }
            }
            escapable(0)
            for worker in leftOver { escapable(worker) }
            // The body must not outlive this call (withoutActuallyEscaping): join every thread first.
            for thread in started { pthread_join(thread, nil) }
        }
    }

    /// Starts `body` on a new detached thread; false when no thread could be created (EAGAIN), in which
    /// case `body` never runs and the caller decides what to do instead.
    @discardableResult
    public static func detach(_ body: @escaping @Sendable () -> Void) -> Bool {
        let context = Unmanaged.passRetained(DetachedBody(body)).toOpaque()
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        var thread = pthread_t()
        guard pthread_create(&thread, &attributes, detachedThreadMain, context) == 0 else {
            Unmanaged<DetachedBody>.fromOpaque(context).release()
            return false
        }
        return true
    }
}

private final class DetachedBody {
    let run: @Sendable () -> Void
    init(_ run: @escaping @Sendable () -> Void) { self.run = run }
}

private func detachedThreadMain(_ raw: UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? {
    Unmanaged<DetachedBody>.fromOpaque(raw!).takeRetainedValue().run()
    return nil
}

/// What one thread runs. @unchecked: `body` is called from the new thread while the creating thread waits
/// in `pthread_join`; sharing inside `body` is the caller's business (atomics, `Mutex`).
private final class WorkerContext: @unchecked Sendable {
    let worker: Int
    let body: (Int) -> Void
    init(worker: Int, body: @escaping (Int) -> Void) {
        self.worker = worker
        self.body = body
    }
}

/// The thread entry point: a free function, since it runs on a thread no Swift actor owns.
private func workerThreadMain(_ raw: UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? {
    let context = Unmanaged<WorkerContext>.fromOpaque(raw!).takeRetainedValue()
    context.body(context.worker)
    return nil
}
