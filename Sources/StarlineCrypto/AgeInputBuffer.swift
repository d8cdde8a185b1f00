import StarlineCore

/// A read-ahead buffer over an `AgeReader`: lines for the header and the armor, exact-size blocks for the
/// payload, and a look at what comes next (the end of the input decides which chunk is the last one).
/// Holds at most `capacity` bytes whatever the size of the input.
final class AgeInputBuffer {
    private let reader: AgeReader
    private var buffer: [UInt8]
    private var start = 0
    private var end = 0
    private var sawEnd = false

    init(_ reader: AgeReader, capacity: Int = 64 * 1024) {
        self.reader = reader
        buffer = [UInt8](repeating: 0, count: capacity)
    }

    /// A line read by `readLine`.
    enum Line {
        /// The bytes before the line feed (the LF itself is consumed, not included).
        case terminated([UInt8])
        /// The input ended after these bytes, with no line feed.
        case unterminated([UInt8])
        /// More than the allowed length before any line feed.
        case tooLong
        /// Nothing left at all.
        case endOfInput
    }

    /// Refills the buffer when it is empty; false at the end of the input.
    private func fill() throws(StarlineError) -> Bool {
        if start < end { return true }
        if sawEnd { return false }
        start = 0
        end = 0
        let n = try buffer.withMutableBytes { (b) throws(StarlineError) in try reader.read(b) }
        precondition(n >= 0 && n <= buffer.count, "AgeReader returned an impossible count")
        if n == 0 { sawEnd = true }
        end = n
        return n > 0
    }

    /// The next byte without consuming it; nil at the end of the input.
    func peek() throws(StarlineError) -> UInt8? {
        try fill() ? buffer[start] : nil
    }

    /// Whether the input has ended (nothing more to read).
    func atEnd() throws(StarlineError) -> Bool {
        try peek() == nil
    }

    func readByte() throws(StarlineError) -> UInt8? {
        guard try fill() else { return nil }
        start += 1
        return buffer[start - 1]
    }

    /// Reads up to the next LF; a line longer than `maximumLength` bytes (LF excluded) is `.tooLong`, and
    /// its remaining bytes are left unread (the caller stops there).
    func readLine(maximumLength: Int) throws(StarlineError) -> Line {
        var line: [UInt8] = []
        while try fill() {
            let available = buffer[start..<end]
            if let lf = available.firstIndex(of: 0x0A) {
                guard line.count + (lf - start) <= maximumLength else { return .tooLong }
                line += buffer[start..<lf]
                start = lf + 1
                return .terminated(line)
            }
            guard line.count + available.count <= maximumLength else { return .tooLong }
            line += available
            start = end
        }
        return line.isEmpty ? .endOfInput : .unterminated(line)
    }

    /// Fills `destination` completely unless the input ends first; returns the number of bytes read.
    func read(into destination: UnsafeMutableRawBufferPointer) throws(StarlineError) -> Int {
        var filled = 0
        while filled < destination.count, try fill() {
            let n = Swift.min(destination.count - filled, end - start)
            buffer.withUnsafeBytes { b in
                (destination.baseAddress! + filled).copyMemory(from: b.baseAddress! + start, byteCount: n)
            }
            start += n
            filled += n
        }
        return filled
    }
}
