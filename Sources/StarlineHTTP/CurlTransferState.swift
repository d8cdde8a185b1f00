import CCurl
import StarlineCore

/// What the callbacks collect during one transfer; touched only by the thread running it.
final class TransferState {
    var body: [UInt8] = []
    var headers: [String: String] = [:]
    var tooLarge = false
    let limit: Int
    let cancel: CancelFlag?

    init(limit: Int, cancel: CancelFlag?) {
        self.limit = limit
        self.cancel = cancel
    }
}

/// Set from a task-cancellation handler (any thread), read by the transfer's progress callback and the retry
/// loop, and waking the loop's wait.
public final class CancelFlag: Sendable {
    private let value = Locked(false)

    public init() {}
    public func cancel() { value.withLock { $0 = true } }
    public var isCancelled: Bool { value.withLock { $0 } }

    /// Sleeps up to `seconds` of real time, ending within 20 ms of `cancel()` (slices of nanosleep: the flag is
    /// set from another thread, and a wait this rare does not need a condition variable).
    public func sleep(_ seconds: Double) {
        let end = MonotonicClock.nanoseconds() &+ ReplyLimits.nanoseconds(seconds)
        while !isCancelled {
            let now = MonotonicClock.nanoseconds()
            guard now < end else { return }
            StarlineClock.threadSleep(seconds: min(Double(end - now) / 1e9, 0.02))
        }
    }
}

// The callbacks are free functions: libcurl calls them through C function pointers, on the thread running
// the transfer, which no Swift actor owns.

/// CURLOPT_WRITEFUNCTION: appends to the body; a short count (over the size limit) aborts with CURLE_WRITE_ERROR.
func curlWriteBody(_ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ context: UnsafeMutableRawPointer?) -> Int {
    guard let context else { return 0 }
    let state = Unmanaged<TransferState>.fromOpaque(context).takeUnretainedValue()
    let length = size * count
    guard length > 0, let data else { return length }
    if state.body.count + length > state.limit {
        state.tooLarge = true
        return 0
    }
    data.withMemoryRebound(to: UInt8.self, capacity: length) {
        state.body.append(contentsOf: UnsafeBufferPointer(start: $0, count: length))
    }
    return length
}

/// CURLOPT_HEADERFUNCTION: one header line per call, status lines included.
func curlWriteHeader(_ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ context: UnsafeMutableRawPointer?) -> Int {
    guard let context else { return 0 }
    let state = Unmanaged<TransferState>.fromOpaque(context).takeUnretainedValue()
    let length = size * count
    guard length > 0, let data else { return length }
    // Bytes, not Characters: this runs for every header of every answer (a bulk run makes thousands a second),
    // and Character iteration (grapheme breaking, "\r\n" as one Character) cost more than the rest of the transfer.
    let bytes = data.withMemoryRebound(to: UInt8.self, capacity: length) { UnsafeBufferPointer(start: $0, count: length) }
    if bytes.starts(with: [0x48, 0x54, 0x54, 0x50, 0x2F]) {  // "HTTP/"
        state.headers = [:]  // a new response (after "100 Continue"): only the final one's headers count
        return length
    }
    guard let colon = bytes.firstIndex(of: 0x3A) else { return length }
    func isSpace(_ b: UInt8) -> Bool { b == 0x20 || b == 0x09 || b == 0x0D || b == 0x0A }
    var start = colon + 1, end = bytes.count
    while start < end, isSpace(bytes[start]) { start += 1 }
    while end > start, isSpace(bytes[end - 1]) { end -= 1 }
    // ASCII lowercase of the name (header names are tokens: ASCII only).
    let name = String(decoding: bytes[..<colon].map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }, as: UTF8.self)
    let value = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self)
    if let existing = state.headers[name] {
        state.headers[name] = existing + ", " + value
    } else {
        state.headers[name] = value
    }
    return length
}

/// CURLOPT_XFERINFOFUNCTION: non-zero aborts the transfer (CURLE_ABORTED_BY_CALLBACK) once cancelled.
func curlProgress(
    _ context: UnsafeMutableRawPointer?, _ dlTotal: curl_off_t, _ dlNow: curl_off_t,
    _ ulTotal: curl_off_t, _ ulNow: curl_off_t
) -> Int32 {
    guard let context else { return 0 }
    return Unmanaged<TransferState>.fromOpaque(context).takeUnretainedValue().cancel?.isCancelled == true ? 1 : 0
}
