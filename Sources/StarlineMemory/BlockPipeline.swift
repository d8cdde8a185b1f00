import Glibc
import StarlineCore
import StarlineCrypto

/// Blocks of a stream read on a second thread while the calling thread works on the block before: the
/// reading side (`fill`: read, and for an attachment being written, BLAKE2b) and the crypto side (encrypt or
/// decrypt, write) of a large attachment overlap, instead of taking turns on one core.
///
/// A fixed pool of equal buffers bounds memory whatever the stream's size. The consumer takes filled blocks
/// in order with `next()` and gives each buffer back with `release` when done with it (it may hold one while
/// asking for the next, to learn whether it was the last). `close()` stops the reader and waits for it, so
/// nothing touches the input or the buffers afterwards; the buffers are wiped when freed (they hold plaintext).
///
/// `threaded: false`, or a thread that cannot be created, fills each block on the calling thread inside
/// `next()`: same results, no overlap. A caller reading a pipe or terminal passes false, because stopping
/// after a failure must not wait for input that may never come.
final class BlockPipeline: @unchecked Sendable {
    // @unchecked: `buffers[slot]` is written only by the side that owns the slot, and ownership passes through
    // `state` (a slot is in `free`, being filled, in `filled`, or held by the consumer); `inline` is set before
    // the reader starts and read only by the consumer.
    typealias Fill = @Sendable (UnsafeMutableRawBufferPointer) throws(StarlineError) -> Int

    struct Block {
        let slot: Int
        let bytes: UnsafeMutableRawBufferPointer
    }

    private struct State {
        var free: [Int]
        var filled: [(slot: Int, count: Int)] = []
        var ended = false
        var failure: StarlineError?
        var stopping = false
        var readerDone = false
    }

    let bufferBytes: Int
    private let buffers: [UnsafeMutableRawBufferPointer]
    private let state: Locked<State>
    private let fill: Fill
    private var inline: Bool
    private var inlineEnded = false
    private var closed = false

    /// `fill` fills the buffer it gets, as far as the input allows, and returns the byte count; fewer than
    /// `bufferBytes` means the input ended after them, and 0 that it had ended already.
    init(buffers count: Int, bufferBytes: Int, threaded: Bool, fill: @escaping Fill) {
        precondition(count >= 2 && bufferBytes > 0)
        self.bufferBytes = bufferBytes
        buffers = (0..<count).map { _ in UnsafeMutableRawBufferPointer.allocate(byteCount: bufferBytes, alignment: 64) }
        state = Locked(State(free: Array((0..<count).reversed())))
        self.fill = fill
        inline = !threaded
        if threaded && !WorkerThreads.detach({ [self] in self.readAll() }) { inline = true }
    }

    deinit {
        precondition(closed || inline, "BlockPipeline dropped without close()")
        for buffer in buffers {
            Sodium.wipe(buffer)
            buffer.deallocate()
        }
    }

    /// The next filled block in input order, nil at the end of the input; throws what `fill` threw.
    func next() throws(StarlineError) -> Block? {
        if inline { return try nextInline() }
        enum Step { case block(Int, Int), end, failed(StarlineError) }
        let step = state.await { s -> Step? in
            if !s.filled.isEmpty { let f = s.filled.removeFirst(); return .block(f.slot, f.count) }
            if let failure = s.failure { return .failed(failure) }
            return s.ended ? .end : nil
        }!
        switch step {
        case .block(let slot, let count): return Block(slot: slot, bytes: UnsafeMutableRawBufferPointer(rebasing: buffers[slot][0..<count]))
        case .end: return nil
        case .failed(let error): throw error
        }
    }

    /// Gives a block's buffer back for the reader to fill again.
    func release(_ block: Block) {
        state.withLockNotifying { $0.free.append(block.slot) }
    }

    /// Stops the reader and waits until it has returned (at most one `fill` in progress finishes first).
    func close() {
        guard !closed else { return }
        closed = true
        if inline { return }
        state.withLockNotifying { $0.stopping = true }
        _ = state.await { $0.readerDone ? true : nil }
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
        return Block(slot: slot, bytes: UnsafeMutableRawBufferPointer(rebasing: buffers[slot][0..<count]))
    }

    /// The reader thread: fills free buffers in turn until the input ends, `fill` fails, or `close`.
    private func readAll() {
        defer { state.withLockNotifying { $0.readerDone = true } }
        while true {
            guard let slot = state.await({ s -> Int? in s.stopping ? -1 : s.free.popLast() }), slot >= 0 else { return }
            let count: Int
            do {
                count = try fill(buffers[slot])
            } catch {
                state.withLockNotifying { $0.failure = error }
                return
            }
            let last = count < bufferBytes
            state.withLockNotifying { s in
                if count > 0 { s.filled.append((slot, count)) } else { s.free.append(slot) }
                if last { s.ended = true }
            }
            if last { return }
        }
    }
}
