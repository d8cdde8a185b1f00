#if canImport(Glibc)
import Glibc
#endif

/// Lines of a stream read as they arrive, in bounded memory whatever the stream's size: a
/// pipe from another command, a journal of millions of records. A line is cut at LF (a CR before it is
/// dropped); one longer than `maxLineBytes` is not buffered — it is returned as `tooLong` and skipped to its
/// end, so memory stays at one chunk plus one line.
public final class LineReader {
    public struct Line: Sendable {
        /// 1-based.
        public var number: Int
        /// The line without its end; nil when it was longer than the limit.
        public var bytes: [UInt8]?
        /// Bytes of the stream before this line (where it starts).
        public var offset: Int
    }

    public let name: String
    public let maxLineBytes: Int
    private let fd: Int32?
    private var buffer: [UInt8]
    private var start = 0
    private var ended = false
    private var number = 0
    private var consumed = 0
    private static let chunk = 64 << 10

    /// Reads `fd` (not closed here).
    public init(fd: Int32, name: String, maxLineBytes: Int) {
        self.fd = fd
        self.name = name
        self.maxLineBytes = max(1, maxLineBytes)
        buffer = []
        buffer.reserveCapacity(Self.chunk)
    }

    /// Reads bytes already in memory (captured stdin in tests).
    public init(bytes: [UInt8], name: String, maxLineBytes: Int) {
        fd = nil
        self.name = name
        self.maxLineBytes = max(1, maxLineBytes)
        buffer = bytes
        ended = true
    }

    public convenience init(_ input: InputSource, name: String, maxLineBytes: Int) {
        switch input {
        case .fileDescriptor(let fd): self.init(fd: fd, name: name, maxLineBytes: maxLineBytes)
        case .bytes(let bytes): self.init(bytes: bytes, name: name, maxLineBytes: maxLineBytes)
        }
    }

    /// The next line, or nil at the end of the stream (a last line without LF is a line).
    public func next() throws -> Line? {
        var tooLong = false
        let lineStart = consumed
        while true {
            if let end = buffer[start...].firstIndex(of: 0x0A) {
                number += 1
                let bytes: [UInt8]? = tooLong || end - start > maxLineBytes + 1 ? nil : limited(Self.dropCR(buffer[start..<end]))
                consumed += end + 1 - start
                start = end + 1
                return Line(number: number, bytes: bytes, offset: lineStart)
            }
            // No end in what is buffered: a line past the limit is dropped as it comes, never held.
            if buffer.count - start > maxLineBytes + 1 {
                tooLong = true
                consumed += buffer.count - start
                start = buffer.count
            }
            if ended {
                guard start < buffer.count || tooLong else { return nil }
                number += 1
                let bytes: [UInt8]? = tooLong ? nil : limited(Self.dropCR(buffer[start...]))
                consumed += buffer.count - start
                start = buffer.count
                return Line(number: number, bytes: bytes, offset: lineStart)
            }
            try fill()
        }
    }

    /// Consumes white space (and a UTF-8 byte order mark at the very start) up to the first other byte, which it
    /// returns without consuming; nil when the stream holds nothing else. Line numbers count what was skipped.
    public func skipWhitespace() throws -> UInt8? {
        while true {
            if consumed == 0, start == 0, buffer.count >= 3, buffer[0] == 0xEF, buffer[1] == 0xBB, buffer[2] == 0xBF {
                start = 3
                consumed = 3
            }
            while start < buffer.count {
                let b = buffer[start]
                guard b == 0x20 || b == 0x09 || b == 0x0D || b == 0x0A else { return b }
                if b == 0x0A { number += 1 }
                start += 1
                consumed += 1
            }
            if ended { return nil }
            try fill()
        }
    }

    /// The bytes not yet consumed, a chunk at a time, for a reader that is not line-based (a JSON array on one
    /// line); nil at the end.
    public func nextChunk() throws -> [UInt8]? {
        while start >= buffer.count {
            if ended { return nil }
            try fill()
        }
        defer {
            consumed += buffer.count - start
            start = buffer.count
        }
        return Array(buffer[start...])
    }

    /// Moves what is left to the front and reads one more chunk.
    private func fill() throws {
        guard let fd else { ended = true; return }
        if start > 0 {
            buffer.removeSubrange(0..<start)
            start = 0
        }
        let old = buffer.count
        buffer.append(contentsOf: repeatElement(0, count: Self.chunk))
        var got = 0
        while true {
            got = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress! + old, Self.chunk) }
            if got >= 0 || errno != EINTR { break }
        }
        if got < 0 {
            let code = errno
            buffer.removeSubrange(old...)
            throw StarlineError(
                .storage, "cannot read \(name): \(String(cString: strerror(code)))", details: .object([("errno", .int(Int(code)))]))
        }
        buffer.removeSubrange((old + got)...)
        if got == 0 { ended = true }
    }

    private func limited(_ line: [UInt8]) -> [UInt8]? { line.count > maxLineBytes ? nil : line }

    private static func dropCR(_ line: ArraySlice<UInt8>) -> [UInt8] {
        line.last == 0x0D ? Array(line.dropLast()) : Array(line)
    }
}
