import StarlineCore

/// The ASCII armor of age: "the strict PEM encoding specified in RFC 7468, Section 3 (Figure 3), with
/// case-sensitive label "AGE ENCRYPTED FILE". Note that this encoding employs base64 with `=` padding".
///
/// RFC 7468: "Generators MUST wrap the base64-encoded lines so that each line consists of exactly 64
/// characters except for the final line, which will encode the remainder of the data (within the
/// 64-character line boundary), and they MUST NOT emit extraneous whitespace."
enum AgeArmor {
    static let begin = Array("-----BEGIN AGE ENCRYPTED FILE-----".utf8)
    static let end = Array("-----END AGE ENCRYPTED FILE-----".utf8)
    static let columns = 64
    /// 64 base64 characters carry 48 bytes.
    static let bytesPerLine = 48

    /// "age implementations SHOULD reject non-canonical ASCII armor encodings except for whitespace before
    /// and after the PEM block".
    static func isWhitespace(_ c: UInt8) -> Bool {
        c == 0x20 || c == 0x09 || c == 0x0A || c == 0x0D
    }
}

/// Armors what is written through it: the BEGIN line at once, a 64-column line per 48 bytes, and at
/// `finish` the padded remainder and the END line.
final class AgeArmorWriter {
    private let output: AgeWriter
    private var pending: [UInt8] = []

    init(_ output: AgeWriter) throws(StarlineError) {
        self.output = output
        try output.write(AgeArmor.begin + [0x0A])
    }

    var writer: AgeWriter { AgeWriter { [self] (bytes) throws(StarlineError) in try write(bytes) } }

    private func write(_ bytes: UnsafeRawBufferPointer) throws(StarlineError) {
        pending += bytes
        let whole = pending.count / AgeArmor.bytesPerLine * AgeArmor.bytesPerLine
        guard whole > 0 else { return }
        // Whole lines only: a multiple of 48 bytes encodes without padding, to a multiple of 64 characters.
        let encoded = AgeBase64.encodePadded(pending[0..<whole])
        var text: [UInt8] = []
        text.reserveCapacity(encoded.count + encoded.count / AgeArmor.columns)
        for start in stride(from: 0, to: encoded.count, by: AgeArmor.columns) {
            text += encoded[start..<(start + AgeArmor.columns)]
            text.append(0x0A)
        }
        pending.removeFirst(whole)
        try output.write(text)
    }

    /// The last line (omitted when the data filled its last line exactly, so no empty line appears) and
    /// the END line.
    func finish() throws(StarlineError) {
        var text: [UInt8] = []
        if !pending.isEmpty { text += AgeBase64.encodePadded(pending) + [0x0A] }
        pending = []
        try output.write(text + AgeArmor.end + [0x0A])
    }
}

/// Removes the armor from what it reads, strictly: leading whitespace, the exact BEGIN line, lines of
/// exactly 64 canonical base64 characters and a last line of 1 to 64 (padded where the data ends), the
/// exact END line, then nothing but whitespace. Each line may end in LF or CRLF ("MAY choose to accept
/// both LF and CRLF line endings"). Nothing else: no headers, no blank lines, no spaces, no checksum.
///
/// The end of the armor (END line and what follows it) is checked when the last data line is read, before
/// its bytes are passed on.
final class AgeArmorReader {
    private let input: AgeInputBuffer
    private var started = false
    private var finished = false
    private var decoded: [UInt8] = []
    private var offset = 0

    init(_ input: AgeInputBuffer) {
        self.input = input
    }

    var reader: AgeReader { AgeReader { [self] (buffer) throws(StarlineError) in try read(into: buffer) } }

    /// Fills `buffer` with as many decoded lines as fit (48 bytes a line), so the reader above it is not
    /// called once per line.
    private func read(into buffer: UnsafeMutableRawBufferPointer) throws(StarlineError) -> Int {
        var filled = 0
        while filled < buffer.count {
            if offset == decoded.count {
                if finished { break }
                try nextLine()
                continue
            }
            let n = Swift.min(buffer.count - filled, decoded.count - offset)
            decoded.withUnsafeBytes { d in (buffer.baseAddress! + filled).copyMemory(from: d.baseAddress! + offset, byteCount: n) }
            offset += n
            filled += n
        }
        return filled
    }

    /// One line of the armor, without its LF or CRLF; a line longer than a data line can be is an error.
    private func line(_ what: String) throws(StarlineError) -> (bytes: [UInt8], terminated: Bool) {
        switch try input.readLine(maximumLength: AgeArmor.columns + 1) {
        case .terminated(var bytes):
            if bytes.last == 0x0D { bytes.removeLast() }
            return (bytes, true)
        case .unterminated(let bytes): return (bytes, false)
        case .endOfInput: throw .ageArmor("the armor ends before \(what)")
        case .tooLong: throw .ageArmor("a line of the armor is longer than \(AgeArmor.columns) columns")
        }
    }

    private func nextLine() throws(StarlineError) {
        if !started {
            while let c = try input.peek(), AgeArmor.isWhitespace(c) { _ = try input.readByte() }
            let first = try line("its BEGIN line")
            guard first.bytes == AgeArmor.begin, first.terminated else {
                throw .ageArmor("the first line is not \"-----BEGIN AGE ENCRYPTED FILE-----\"")
            }
            started = true
        }
        let next = try line("its END line")
        if next.bytes == AgeArmor.end {
            try finish(next.terminated)
            decoded = []
            offset = 0
            return
        }
        guard next.terminated else { throw .ageArmor("the armor ends without its END line") }
        guard !next.bytes.isEmpty else { throw .ageArmor("the armor has an empty line") }
        guard next.bytes.count <= AgeArmor.columns else {
            throw .ageArmor("a line of the armor is longer than \(AgeArmor.columns) columns")
        }
        guard let bytes = AgeBase64.decodePadded(next.bytes) else {
            throw .ageArmor("a line of the armor is not canonical padded base64")
        }
        if bytes.count < AgeArmor.bytesPerLine {
            // A short line is the last one: the END line must follow it.
            let closing = try line("its END line")
            guard closing.bytes == AgeArmor.end else {
                throw .ageArmor("a line shorter than 64 columns is not followed by the END line")
            }
            try finish(closing.terminated)
        }
        decoded = bytes
        offset = 0
    }

    /// After the END line: "whitespace before and after the PEM block" only.
    private func finish(_ terminated: Bool) throws(StarlineError) {
        if terminated {
            while let c = try input.readByte() {
                guard AgeArmor.isWhitespace(c) else { throw .ageArmor("data follows the END line") }
            }
        }
        finished = true
    }
}
