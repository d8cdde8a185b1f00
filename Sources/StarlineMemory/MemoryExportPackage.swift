import StarlineCore
import StarlineCrypto

/// The memory export (W3): the plaintext that `sl-memory export` seals as an age file — JSON Lines, so it
/// streams in constant memory whatever the attachments weigh (`docs/formats.md`, "Memory export"):
///
///     {"format":"starline-memory-export","version":1,"exportedAt":"…","notes":N}
///     {"note":{"id","title","body","tags","createdAt","updatedAt","attachments":[{"name","size","blake2b"}]}}
///     {"data":"BASE64"}…        the note's attachments, in order, in pieces of at most 48 KiB
///     …
///     {"end":{"notes":N,"attachments":M}}
///
/// The reader checks everything it can without the vault — the header, every line's shape, each attachment's
/// size and BLAKE2b, the counts in the trailer — so `import` can check a whole package before it writes.
public enum MemoryExportPackage {
    public static let format = "starline-memory-export"
    public static let version = 1
    static let pieceBytes = 48 * 1024
    /// A line of the package is at most this long (a base64 piece is 64 KiB; a note's text at most 16 MiB).
    static let maxLineBytes = 24 * 1024 * 1024

    public struct Summary: Sendable, Equatable {
        public var notes: Int
        public var attachments: Int
        /// The notes' titles, in order (what `import --dry-run` lists).
        public var titles: [String] = []
    }

    /// Writes every note of `vault` with its attachments, one line at a time, to `emit`.
    public static func write(_ vault: MemoryVault, exportedAt: Timestamp, to emit: ([UInt8]) throws -> Void) throws -> Summary {
        let summaries = try vault.list()
        func line(_ json: JSON) throws { try emit(Array((json.serialized() + "\n").utf8)) }
        try line(.object([("format", .string(format)), ("version", .int(version)), ("exportedAt", .string(exportedAt.rfc3339)),
                          ("notes", .int(summaries.count))]))
        var attachments = 0
        for summary in summaries {
            let note = try vault.show(summary.id)
            let files = JSON.array(note.attachments.map { .object([("name", .string($0.name)), ("size", .int(Int64(clamping: $0.size))), ("blake2b", .string($0.blake2b))]) })
            try line(.object([("note", .object([("id", .string(note.id)), ("title", .string(note.title)), ("body", .string(note.body)),
                                                ("tags", .array(note.tags.map(JSON.string))), ("createdAt", .string(note.createdAt.rfc3339)),
                                                ("updatedAt", .string(note.updatedAt.rfc3339)), ("attachments", files)]))]))
            for attachment in note.attachments {
                var pending: [UInt8] = []
                var failure: Error?
                _ = try vault.getAttachment(note.id, name: attachment.name) { (chunk) throws(StarlineError) in
                    pending += chunk
                    while pending.count >= pieceBytes, failure == nil {
                        do { try line(.object([("data", .string(Base64.encode(Array(pending[..<pieceBytes]))))])) } catch { failure = error }
                        pending.removeFirst(pieceBytes)
                    }
                }
                if let failure { throw failure }
                if !pending.isEmpty { try line(.object([("data", .string(Base64.encode(pending)))])) }
                Sodium.wipe(&pending)
                attachments += 1
            }
        }
        try line(.object([("end", .object([("notes", .int(summaries.count)), ("attachments", .int(attachments))]))]))
        return Summary(notes: summaries.count, attachments: attachments, titles: summaries.map(\.title))
    }
}

/// Reads a package pushed to it in arbitrary pieces (what `AgeDecryptor` releases) and checks it; with a
/// vault, also adds its notes — each with new ids and its own times — and attachments.
public final class MemoryExportReader {
    private let vault: MemoryVault?
    private var buffer: [UInt8] = []
    private var lineNumber = 0
    private var sawHeader = false
    private var declaredNotes = 0
    private var notes = 0
    private var attachments = 0
    private var finished = false
    private var titles: [String] = []
    /// The attachments still to come for the current note, and the one being read.
    private var expected: [(name: String, size: UInt64, blake2b: String)] = []
    private var current: IncomingAttachment?
    private var currentNoteID: String?

    /// `vault` nil: check only.
    public init(into vault: MemoryVault?) { self.vault = vault }

    public func push(_ bytes: UnsafeRawBufferPointer) throws {
        buffer += bytes
        while let newline = buffer.firstIndex(of: 0x0A) {
            let line = Array(buffer[..<newline])
            buffer.removeSubrange(...newline)
            try handle(line)
        }
        if buffer.count > MemoryExportPackage.maxLineBytes { throw bad("a line is longer than \(MemoryExportPackage.maxLineBytes) bytes") }
    }

    /// After the last byte: the trailer must have been read, nothing may follow it.
    public func finish() throws -> MemoryExportPackage.Summary {
        guard buffer.isEmpty else { throw bad("the package does not end with a line break") }
        guard finished else { throw bad("the package ends before its trailer (truncated)") }
        return MemoryExportPackage.Summary(notes: notes, attachments: attachments, titles: titles)
    }

    private func bad(_ reason: String) -> StarlineError {
        StarlineError(.data, "the memory export is not a valid package: line \(lineNumber): \(reason)", details: .object([("line", .int(lineNumber))]))
    }

    private func handle(_ bytes: [UInt8]) throws {
        lineNumber += 1
        guard !finished else { throw bad("data after the trailer") }
        guard let json = try? JSON.parse(bytes) else { throw bad("not JSON") }
        if !sawHeader {
            guard json["format"]?.stringValue == MemoryExportPackage.format else { throw bad("not a Starline memory export (no format header)") }
            guard json["version"]?.intValue == Int64(MemoryExportPackage.version) else { throw bad("export version \(json["version"]?.serialized() ?? "?") is not supported (this Starline reads version 1)") }
            guard let n = json["notes"]?.intValue, n >= 0, n <= 10_000_000 else { throw bad("the header has no note count") }
            declaredNotes = Int(n)
            sawHeader = true
            return
        }
        if let piece = json["data"]?.stringValue {
            guard let state = current ?? nextAttachment() else { throw bad("attachment data where none is expected") }
            current = state
            guard let decoded = Base64.decode(piece) else { throw bad("attachment data is not base64") }
            state.got += UInt64(decoded.count)
            guard state.got <= state.size else { throw bad("attachment '\(state.name)' has more than its \(state.size) bytes") }
            state.hasher.update(decoded)
            try state.writer?.append(decoded[...])
            if state.got == state.size { try closeAttachment() }
            return
        }
        // Anything but data: the attachments of the note before must be complete (empty ones need no data).
        while let state = current ?? nextAttachment() {
            guard state.size == 0 else { throw bad("attachment '\(state.name)' ends after \(state.got) of its \(state.size) bytes") }
            current = state
            try closeAttachment()
        }
        if let note = json["note"] {
            try addNote(note)
        } else if let end = json["end"] {
            guard end["notes"]?.intValue == Int64(notes), end["attachments"]?.intValue == Int64(attachments), notes == declaredNotes else {
                throw bad("the trailer's counts (\(end.serialized())) differ from the package's \(notes) notes and \(attachments) attachments")
            }
            finished = true
        } else {
            throw bad("a line that is neither a note, attachment data nor the trailer")
        }
    }

    private func addNote(_ note: JSON) throws {
        guard let body = note["body"]?.stringValue, let title = note["title"]?.stringValue,
              let tags = note["tags"]?.arrayValue?.compactMap(\.stringValue),
              let created = note["createdAt"]?.stringValue.flatMap(Timestamp.init(rfc3339:)),
              let updated = note["updatedAt"]?.stringValue.flatMap(Timestamp.init(rfc3339:)),
              let files = note["attachments"]?.arrayValue else { throw bad("a note without its fields") }
        expected = try files.map { file in
            guard let name = file["name"]?.stringValue, let size = file["size"]?.intValue, size >= 0, let hash = file["blake2b"]?.stringValue else {
                throw bad("an attachment without name, size or blake2b")
            }
            return (name, UInt64(size), hash)
        }
        notes += 1
        titles.append(title)
        guard let vault else { return }
        currentNoteID = try vault.add(NoteDraft(title: title, body: body, tags: tags, createdAt: created, updatedAt: updated)).id
    }

    private func nextAttachment() -> IncomingAttachment? {
        guard !expected.isEmpty else { return nil }
        let next = expected.removeFirst()
        let incoming = IncomingAttachment(name: next.name, size: next.size, blake2b: next.blake2b)
        if let vault {
            try? PrivateFiles.ensurePrivateDirectory(vault.location.attachmentsPath)
            incoming.writer = try? AttachmentWriter(directory: vault.location.attachmentsPath, blobID: incoming.blobID, key: incoming.key)
        }
        return incoming
    }

    private func closeAttachment() throws {
        guard let state = current else { return }
        current = nil
        let hash = Hex.encode(state.hasher.finalize())
        guard hash == state.blake2b else { throw bad("attachment '\(state.name)' does not match its BLAKE2b") }
        attachments += 1
        guard let vault, let id = currentNoteID else { return }
        guard let writer = state.writer else {
            throw StarlineError(.storage, "cannot write attachment '\(state.name)' into the vault's attachments directory")
        }
        let written = try writer.finish()
        state.writer = nil
        _ = try vault.attach(id, name: state.name, blobID: state.blobID, fileKey: state.key) { written }
    }
}

/// One attachment of a package as it streams in: its hash so far and, when importing, its file.
private final class IncomingAttachment {
    let name: String
    let size: UInt64
    let blake2b: String
    var got: UInt64 = 0
    var hasher = GenericHashStream(length: 32)
    var writer: AttachmentWriter?
    let blobID = Sodium.randomBytes(16)
    let key = SecretBytes(count: SecretStream.keyBytes)

    init(name: String, size: UInt64, blake2b: String) {
        self.name = name
        self.size = size
        self.blake2b = blake2b
    }
}
