import Glibc
import StarlineCore
import StarlineCrypto

/// Blocks of a stream read on one thread, optionally looked at in order on a second (`inspect`: the BLAKE2b
/// of an attachment being written), while the calling thread works on the blocks before them (encrypt or
/// decrypt, write). A large attachment's stages overlap on the cores instead of taking turns on one; the
/// slowest stage (BLAKE2b when writing) sets the pace.
///
/// A fixed pool of equal buffers bounds memory whatever the stream's size. The consumer takes blocks in
/// order with `next()` and gives each buffer back with `release` when done with it (it may hold one while
/// asking for the next, to learn whether it was the last). `close()` stops the threads and waits for them, so
/// nothing touches the input or the buffers afterwards; the buffers are wiped when freed (they hold plaintext).
///
/// `threaded: false`, or a reader thread that cannot be created, fills and inspects each block on the
/// calling thread inside `next()`: same results, no overlap (an inspector thread that cannot be created
/// leaves `inspect` to the reader). A caller reading a pipe or terminal passes false, because stopping after
/// a failure must not wait for input that may never come.
final class BlockPipeline: @unchecked Sendable {
    // @unchecked: a buffer is written only by the stage that owns its slot, and slots pass between stages
    // through `state` (free → filled → ready → held by the consumer → free); `mode` is set before the threads
    // start and read only by the consumer.
    typealias Fill = @Sendable (UnsafeMutableRawBufferPointer) throws(StarlineError) -> Int
    typealias Inspect = @Sendable (UnsafeRawBufferPointer) -> Void

    struct Block {
        let slot: Int
        let bytes: UnsafeMutableRawBufferPointer
    }

    private struct State {
        var free: [Int]
        /// Read, waiting for the inspector thread.
        var filled: [(slot: Int, count: Int)] = []
        /// Read and inspected, waiting for the consumer.
        var ready: [(slot: Int, count: Int)] = []
        var readEnded = false
        /// No block will be added to `ready` any more.
        var ended = false
        var failure: StarlineError?
        var stopping = false
        var running = 0
    }

    private enum Mode { case inline, reader, readerAndInspector }

    let bufferBytes: Int
    private let buffers: [UnsafeMutableRawBufferPointer]
    private let state: Locked<State>
    private let fill: Fill
    private let inspect: Inspect?
    private var mode: Mode = .inline
    private var inlineEnded = false
    private var closed = false

    /// `fill` fills the buffer it gets as far as the input allows and returns the byte count: fewer than
    /// `bufferBytes` means the input ended after them, 0 that it had ended already. `inspect` sees every
    /// non-empty block, in order, before the consumer does.
    init(buffers count: Int, bufferBytes: Int, threaded: Bool, fill: @escaping Fill, inspect: Inspect? = nil) {
        precondition(count >= 3 && bufferBytes > 0)
        self.bufferBytes = bufferBytes
        buffers = (0..<count).map { _ in UnsafeMutableRawBufferPointer.allocate(byteCount: bufferBytes, alignment: 64) }
        state = Locked(State(free: Array((0..<count).reversed())))
        self.fill = fill
        self.inspect = inspect
        guard threaded else { return }
        // Counted as running before they start, so `close` waits for a thread that has not begun yet.
        state.withLock { $0.running = inspect == nil ? 1 : 2 }
        if inspect != nil {
            mode = .readerAndInspector
            if !WorkerThreads.detach({ [self] in self.inspectAll() }) {
                mode = .reader
                state.withLock { $0.running = 1 }
            }
        } else {
            mode = .reader
        }
        if !WorkerThreads.detach({ [self] in self.readAll() }) {
            // Nothing was read yet: an inspector already started ends when it sees the input ended, and the
            // consumer fills inline from the pool, which is untouched.
            state.withLockNotifying { s in
                s.running -= 1
                s.readEnded = true
                s.ended = true
            }
            if mode == .readerAndInspector { _ = state.await { $0.running == 0 ? true : nil } }
            state.withLock { s in
                s.readEnded = false
                s.ended = false
            }
            mode = .inline
        }
    }

    deinit {
        precondition(closed || mode == .inline, "BlockPipeline dropped without close()")
        for buffer in buffers {
            Sodium.wipe(buffer)
            buffer.deallocate()
        }
    }

    /// The next block in input order, nil at the end of the input; throws what `fill` threw.
    func next() throws(StarlineError) -> Block? {
        if mode == .inline { return try nextInline() }
        enum Step { case block(Int, Int), end, failed(StarlineError) }
        let step = state.await { s -> Step? in
            if !s.ready.isEmpty { let r = s.ready.removeFirst(); return .block(r.slot, r.count) }
            guard s.ended else { return nil }
            if let failure = s.failure { return .failed(failure) }
            return .end
        }!
        switch step {
        case .block(let slot, let count): return block(slot, count)
        case .end: return nil
        case .failed(let error): throw error
        }
    }

    /// Gives a block's buffer back to be filled again.
    func release(_ block: Block) {
        state.withLockNotifying { $0.free.append(block.slot) }
    }

    /// Stops the threads and waits until they have returned (a `fill` in progress finishes first).
    func close() {
        guard !closed else { return }
        closed = true
        if mode == .inline { return }
        state.withLockNotifying { $0.stopping = true }
        _ = state.await { $0.running == 0 ? true : nil }
    }

    private func block(_ slot: Int, _ count: Int) -> Block {
        Block(slot: slot, bytes: UnsafeMutableRawBufferPointer(rebasing: buffers[slot][0..<count]))
    }

    private func nextInline() throws(StarlineError) -> Block? {
        if inlineEnded { return nil }
        guard let slot = state.withLock({ $0.free.popLast() }) else { preconditionFailure("BlockPipeline: every buffer is held") }
        let count: Int
        do {
            count = try fill(buffers[slot])
        } catch {
            state.withLock { $0.free.append(slot) }
            throw error
        }
        if count < bufferBytes { inlineEnded = true }
        if count == 0 {
            state.withLock { $0.free.append(slot) }
            return nil
        }
        let filled = block(slot, count)
        inspect?(UnsafeRawBufferPointer(filled.bytes))
        return filled
    }

    /// The reader thread: fills free buffers in turn until the input ends, `fill` fails, or `close`.
    private func readAll() {
        let inspectHere = mode == .reader ? inspect : nil
        let handOver = mode == .readerAndInspector
        defer { state.withLockNotifying { $0.running -= 1 } }
        while true {
            guard let slot = state.await({ s -> Int? in s.stopping ? -1 : s.free.popLast() }), slot >= 0 else { return }
            let count: Int
            do {
                count = try fill(buffers[slot])
            } catch {
                state.withLockNotifying { s in
                    s.free.append(slot)
                    s.failure = error
                    s.readEnded = true
                    if !handOver { s.ended = true }
                }
                return
            }
            if count > 0 { inspectHere?(UnsafeRawBufferPointer(rebasing: buffers[slot][0..<count])) }
            let last = count < bufferBytes
            state.withLockNotifying { s in
                if count > 0 {
                    if handOver { s.filled.append((slot, count)) } else { s.ready.append((slot, count)) }
                } else {
                    s.free.append(slot)
                }
                if last {
                    s.readEnded = true
                    if !handOver { s.ended = true }
                }
            }
            if last { return }
        }
    }

    /// The inspector thread: runs `inspect` on each block read, in order, and passes it on to the consumer.
    private func inspectAll() {
        guard let inspect else { return }
        defer { state.withLockNotifying { $0.running -= 1 } }
        while true {
            let next = state.await { s -> (slot: Int, count: Int)? in
                if s.stopping { return (-1, 0) }
                if !s.filled.isEmpty { return s.filled.removeFirst() }
                if s.readEnded {
                    s.ended = true
                    return (-1, 0)
                }
                return nil
            }!
            if next.slot < 0 { return }
            inspect(UnsafeRawBufferPointer(rebasing: buffers[next.slot][0..<next.count]))
            state.withLockNotifying { $0.ready.append(next) }
        }
    }
}
