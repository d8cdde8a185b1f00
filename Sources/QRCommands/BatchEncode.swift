#if canImport(Glibc)
import Glibc
#endif
import StarlineCore
import StarlineQR
import Synchronization

/// How `encode --batch` reads its input.
enum BatchFormat: String, CaseIterable, Sendable {
    /// One payload per line, as is (a trailing CR of a CRLF file is dropped).
    case lines
    /// One JSON object per line: `{"text": "…", "name": "…"}`, `name` optional.
    case jsonl
}

/// `sl-qr encode --batch FILE|- --output-dir DIR`: many codes in one process (no start-up per code), one JSON
/// record per input line, a bad line reported on its own record without stopping the run.
///
/// The input is streamed: at most one line is buffered, and a line longer than any payload could be
/// (`maxLineBytes`) is reported without being kept, so a batch of any size runs in bounded memory.
struct BatchEncode {
    /// The longest line worth reading: the largest QR payload, escaped as JSON at worst (`\u00XX`, 6 bytes
    /// a byte), plus room for a name. Longer lines are reported as too long.
    static let maxLineBytes = QREncoder.absoluteMaxBytes * 6 + 4096

    let source: String
    let directory: String
    let batchFormat: BatchFormat
    let options: EncodeOptions
    let format: QRFormat
    /// Encoding threads (`-j`).
    let jobs: Int

    /// Lines encoded between two prints of their records.
    static let chunkSize = 256

    /// The file extension of each format's files.
    static func fileExtension(_ format: QRFormat) -> String {
        switch format {
        case .png: "png"
        case .svg: "svg"
        case .utf8, .ansi, .ascii: "txt"
        case .matrix: "json"
        }
    }

    /// A name must stay a plain file inside DIR: no `/`, not `.`/`..`, no leading dot (no hidden files,
    /// no `..x` tricks), no NUL or control characters, and short enough for any file system.
    static func validateName(_ name: String) throws {
        let problem: String? =
            name.isEmpty
            ? "is empty"
            : name.utf8.count > 200
                ? "is longer than 200 bytes"
                : name.contains("/")
                    ? "contains /"
                    : name.hasPrefix(".")
                        ? "starts with a dot"
                        : name.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F })
                            ? "contains a control character"
                            : nil
        if let problem {
            throw StarlineError(.usage, "invalid name \"\(name)\": it \(problem)", details: .object([("name", .string(name))]))
        }
    }

    func run(_ context: CommandContext) throws -> ExitStatus {
        let output = context.output
        try Self.makeDirectory(directory)
        var reader: LineReader
        if source == "-" {
            if let fd = context.io.stdin.fileDescriptor {
                reader = LineReader(fd: fd, name: "standard input", ownsDescriptor: false)
            } else {
                reader = LineReader(bytes: try context.readStandardInput(maxBytes: 256 << 20))
            }
        } else {
            let fd: Int32
            do { fd = try InputFile.open(source, what: "the batch") } catch {
                throw StarlineError(.usage, error.message, details: error.details)
            }
            reader = LineReader(fd: fd, name: source, ownsDescriptor: true)
        }
        defer { reader.close() }

        var names: Set<String> = []
        var (total, failed, skipped) = (0, 0, 0)
        let ext = Self.fileExtension(format)
        // Lines are parsed in order (names must be unique), then encoded and written by `jobs` workers a
        // chunk at a time, and the records printed in line order: memory stays bounded by the chunk.
        var chunk: [(line: Int, work: Result<(payload: [UInt8], name: String?, file: String), any Error>)] = []
        func flushChunk() {
            let records = Locked<[JSON?]>([JSON?](repeating: nil, count: chunk.count))
            let next = Atomic<Int>(0)
            let work = chunk
            WorkerThreads.run(count: min(jobs, work.count)) { _ in
                while true {
                    let i = next.wrappingAdd(1, ordering: .relaxed).oldValue
                    guard i < work.count else { return }
                    let record: JSON
                    do {
                        let item = try work[i].work.get()
                        let fields = try QRImageWriter.writeFile(
                            payload: item.payload, options, format: format, to: directory + "/" + item.file,
                            extraFields: item.name.map { [("name", .string($0))] } ?? [])
                        record = .object([("line", .int(work[i].line))] + fields)
                    } catch {
                        let failure = (error as? StarlineError) ?? StarlineError(.internalError, "\(error)")
                        record = .object([("line", .int(work[i].line)), ("error", failure.json["error"] ?? .null)])
                    }
                    records.withLock { $0[i] = record }
                }
            }
            for record in records.withLock({ $0 }) {
                guard let record else { continue }
                if record["error"] != nil { failed += 1 }
                output.emitLine(record)
            }
            chunk.removeAll(keepingCapacity: true)
        }
        while let line = try reader.next(limit: Self.maxLineBytes) {
            // A blank line is skipped, not failed (as zbarimg's users and `xargs` expect of a list): counted in
            // the summary; the lines around it keep their numbers (and default names).
            if isBlank(line) {
                skipped += 1
                continue
            }
            total += 1
            chunk.append(
                (
                    line.number,
                    Result { () throws -> (payload: [UInt8], name: String?, file: String) in
                        let (payload, name) = try parse(line)
                        let fileName = (name ?? Self.paddedNumber(line.number)) + "." + ext
                        guard names.insert(fileName).inserted else {
                            throw StarlineError(
                                .usage, "duplicate name \(fileName): an earlier line of the batch writes it",
                                details: .object([("name", .string(fileName))]))
                        }
                        return (payload, name, fileName)
                    }
                ))
            if chunk.count >= Self.chunkSize { flushChunk() }
        }
        flushChunk()
        guard total > 0 else {
            throw StarlineError(
                .usage, skipped == 0 ? "the batch \(source) has no lines" : "the batch \(source) has only blank lines (\(skipped))",
                details: .object([("skippedBlank", .int(skipped))]))
        }
        output.emitLine(
            .object([
                (
                    "summary",
                    .object([
                        ("lines", .int(total + skipped)), ("encoded", .int(total - failed)),
                        ("failed", .int(failed)), ("skippedBlank", .int(skipped))
                    ])
                )
            ]))
        output.flush()
        if failed == 0 { return .ok }
        let details = JSON.object([("lines", .int(total)), ("failed", .int(failed)), ("skippedBlank", .int(skipped))])
        if failed == total { throw StarlineError(.data, "every one of the \(total) lines of the batch failed", details: details) }
        throw StarlineError(.partial, "\(failed) of \(total) lines of the batch failed", details: details)
    }

    /// An empty line (a lone CR of a CRLF file included); in JSON Lines, one of only spaces and tabs as well.
    func isBlank(_ line: LineReader.Line) -> Bool {
        guard !line.tooLong else { return false }
        switch batchFormat {
        case .lines: return line.bytes.isEmpty || line.bytes == [0x0D]
        case .jsonl: return line.bytes.allSatisfy { $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }
        }
    }

    /// The payload and the optional name of one line.
    func parse(_ line: LineReader.Line) throws -> (payload: [UInt8], name: String?) {
        guard !line.tooLong else {
            throw StarlineError(
                .capacityExceeded, "line \(line.number) is longer than \(Self.maxLineBytes) bytes, more than any QR code holds",
                details: .object([("maxLineBytes", .int(Self.maxLineBytes))]))
        }
        switch batchFormat {
        case .lines:
            var bytes = line.bytes
            if bytes.last == 0x0D { bytes.removeLast() }
            return (bytes, nil)
        case .jsonl:
            let value: JSON
            do { value = try JSON.parse(line.bytes) } catch {
                throw StarlineError(.data, "line \(line.number) is not a JSON object: \(error)")
            }
            guard value.objectValue != nil, let text = value["text"]?.stringValue else {
                throw StarlineError(.data, "line \(line.number) has no \"text\" string")
            }
            var name: String?
            if let n = value["name"], n != .null {
                guard let s = n.stringValue else { throw StarlineError(.data, "line \(line.number): \"name\" is not a string") }
                try Self.validateName(s)
                name = s
            }
            return (Array(text.utf8), name)
        }
    }

    /// Six digits at least, so `ls` sorts the files of a batch of up to a million lines in input order.
    static func paddedNumber(_ n: Int) -> String {
        let digits = String(n)
        return String(repeating: "0", count: max(0, 6 - digits.count)) + digits
    }

    /// DIR, created (with the umask) when missing; anything but a directory there is an error.
    static func makeDirectory(_ path: String) throws {
        if mkdir(path, 0o777) == 0 { return }
        let code = errno
        var st = stat()
        if code == EEXIST, stat(path, &st) == 0, (st.st_mode & S_IFMT) == S_IFDIR { return }
        throw StarlineError(
            .storage, "cannot create the output directory \(path): \(String(cString: strerror(code == EEXIST ? ENOTDIR : code)))",
            details: .object([("path", .string(path))]))
    }
}

/// Lines of a descriptor or of bytes in memory, read in chunks; a line over the limit is skipped to its
/// end and reported as too long rather than buffered.
struct LineReader {
    struct Line {
        var number: Int
        var bytes: [UInt8]
        var tooLong: Bool
    }

    private let fd: Int32
    private let name: String
    private let ownsDescriptor: Bool
    private var buffer: [UInt8]
    private var position = 0
    private var atEnd: Bool
    private var number = 0

    init(fd: Int32, name: String, ownsDescriptor: Bool) {
        (self.fd, self.name, self.ownsDescriptor, buffer, atEnd) = (fd, name, ownsDescriptor, [], false)
    }

    init(bytes: [UInt8]) {
        (fd, name, ownsDescriptor, buffer, atEnd) = (-1, "standard input", false, bytes, true)
    }

    func close() { if ownsDescriptor { _ = Glibc.close(fd) } }

    /// Refills the buffer from the descriptor, keeping what was not consumed; false at end of input.
    private mutating func fill() throws -> Bool {
        guard !atEnd else { return false }
        if position > 0 { buffer.removeFirst(position); position = 0 }
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                let code = errno
                throw StarlineError(
                    .usage, "cannot read the batch \(name): \(String(cString: strerror(code)))",
                    details: .object([("errno", .int(Int(code)))]))
            }
            if n == 0 { atEnd = true; return false }
            buffer.append(contentsOf: chunk[0..<n])
            return true
        }
    }

    /// The next line without its newline; nil at the end (a last line without a newline counts).
    mutating func next(limit: Int) throws -> Line? {
        var tooLong = false
        while true {
            if let newline = buffer[position...].firstIndex(of: 0x0A) {
                number += 1
                let bytes = tooLong || newline - position > limit ? [] : Array(buffer[position..<newline])
                let line = Line(number: number, bytes: bytes, tooLong: tooLong || newline - position > limit)
                position = newline + 1
                return line
            }
            if buffer.count - position > limit {
                // Drop what is buffered of an overlong line and remember it was one.
                tooLong = true
                buffer.removeAll(keepingCapacity: true)
                position = 0
            }
            if try !fill() {
                guard position < buffer.count || tooLong else { return nil }
                number += 1
                let line = Line(number: number, bytes: tooLong ? [] : Array(buffer[position...]), tooLong: tooLong)
                position = buffer.count
                return line
            }
        }
    }
}
