import Glibc
import StarlineCore
import StarlineCrypto

/// Reads a package pushed to it in arbitrary pieces (what `AgeDecryptor` releases) and checks it; with an
/// import batch, also adds its notes — each with a new id and its own times — and attachments to it.
///
/// Linear in the package and bounded in memory: each byte is scanned for a line break once, only the
/// unfinished line is buffered (at most `maxLineBytes`), and one note is held until its attachments ended.
final class MemoryExportReader {
    private let batch: VaultImport?
    private let listingTitles: Bool
    private var buffer: [UInt8] = []
    private let digest = PackageDigest()
    private var lineNumber = 0
    private var sawHeader = false
    private var declaredNotes = 0
    private var notes = 0
    private var attachments = 0
    private var finished = false
    private var titles: [String] = []
    /// The attachments of the current note (as its line lists them), how many of them were read, the one
    /// being read, and — when importing — the note itself and the entries of its attachments placed so far.
    private var expected: [(name: String, size: UInt64, digest: AttachmentDigest, hex: String)] = []
    private var nextExpected = 0
    private var current: IncomingAttachment?
    private var pendingNote: NoteDraft?
    private var placed: [AttachmentEntry] = []

    /// `batch` nil: check only.
    init(into batch: VaultImport?, listingTitles: Bool = false) {
        self.batch = batch
        self.listingTitles = listingTitles
    }

    /// What `AgeDecryptor` writes to: pushes every piece, with the errors it can carry.
    var writer: AgeWriter {
        AgeWriter { [self] (bytes) throws(StarlineError) in
            do {
                try push(bytes)
            } catch let error as StarlineError {
                throw error
            } catch {
                throw (VaultErrors.classify(error, path: batch?.vault.path ?? "") as? StarlineError) ?? StarlineError(.storage, "\(error)")
            }
        }
    }

    func push(_ bytes: UnsafeRawBufferPointer) throws {
        digest.stream.update(bytes)
        guard let base = bytes.baseAddress else { return }
        var start = 0
        while let found = memchr(base + start, 0x0A, bytes.count - start) {
            let newline = base.distance(to: UnsafeRawPointer(found))
            let piece = UnsafeRawBufferPointer(start: base + start, count: newline - start)
            start = newline + 1
            if buffer.isEmpty {
                try handle(Array(piece))
            } else {
                guard buffer.count + piece.count <= MemoryExportPackage.maxLineBytes else { throw tooLong() }
                buffer += piece
                let line = buffer
                buffer = []
                try handle(line)
            }
        }
        guard buffer.count + (bytes.count - start) <= MemoryExportPackage.maxLineBytes else { throw tooLong() }
        buffer += UnsafeRawBufferPointer(start: base + start, count: bytes.count - start)
    }

    /// After the last byte: the trailer must have been read, nothing may follow it.
    func finish() throws -> MemoryExportPackage.Summary {
        guard buffer.isEmpty else { throw bad("the package does not end with a line break") }
        guard finished else { throw bad("the package ends before its trailer (truncated)") }
        return MemoryExportPackage.Summary(notes: notes, attachments: attachments, digest: digest.stream.finalize(), titles: titles)
    }

    private func bad(_ reason: String) -> StarlineError {
        StarlineError(
            .data, "the memory export is not a valid package: line \(lineNumber): \(reason)", details: .object([("line", .int(lineNumber))])
        )
    }

    private func tooLong() -> StarlineError {
        lineNumber += 1
        return bad("a line is longer than \(MemoryExportPackage.maxLineBytes) bytes")
    }

    private func handle(_ bytes: [UInt8]) throws {
        lineNumber += 1
        guard !finished else { throw bad("data after the trailer") }
        guard let json = try? JSON.parse(bytes) else { throw bad("not JSON") }
        if !sawHeader {
            guard json["format"]?.stringValue == MemoryExportPackage.format else {
                throw bad("not a Starline memory export (no format header)")
            }
            guard json["version"]?.intValue == Int64(MemoryExportPackage.version) else {
                throw bad("export version \(json["version"]?.serialized() ?? "?") is not supported (this Starline reads version 1)")
            }
            guard let n = json["notes"]?.intValue, n >= 0, n <= 10_000_000 else { throw bad("the header has no note count") }
            declaredNotes = Int(n)
            sawHeader = true
            return
        }
        if let piece = json["data"]?.stringValue {
            guard let state = try current ?? nextAttachment() else { throw bad("attachment data where none is expected") }
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
        while let state = try current ?? nextAttachment() {
            guard state.size == 0 else { throw bad("attachment '\(state.name)' ends after \(state.got) of its \(state.size) bytes") }
            current = state
            try closeAttachment()
        }
        try addPendingNote()
        if let note = json["note"] {
            try readNote(note)
        } else if let end = json["end"] {
            guard end["notes"]?.intValue == Int64(notes), end["attachments"]?.intValue == Int64(attachments), notes == declaredNotes else {
                throw bad(
                    "the trailer's counts (\(end.serialized())) differ from the package's \(notes) notes and \(attachments) attachments")
            }
            finished = true
        } else {
            throw bad("a line that is neither a note, attachment data nor the trailer")
        }
    }

    private func readNote(_ note: JSON) throws {
        guard let body = note["body"]?.stringValue, let title = note["title"]?.stringValue,
            let tags = note["tags"]?.arrayValue?.compactMap(\.stringValue),
            let created = note["createdAt"]?.stringValue.flatMap(Timestamp.init(rfc3339:)),
            let updated = note["updatedAt"]?.stringValue.flatMap(Timestamp.init(rfc3339:)),
            let files = note["attachments"]?.arrayValue
        else { throw bad("a note without its fields") }
        var names = Set<String>()
        expected = try files.map { file in
            guard let name = file["name"]?.stringValue, let size = file["size"]?.intValue, size >= 0,
                let named = file.objectValue?.filter({ AttachmentDigest.named($0.0) != nil }), named.count == 1,
                let digest = AttachmentDigest.named(named[0].0), let hash = named[0].1.stringValue
            else {
                throw bad("an attachment without name, size, or one digest (sha256 or blake2b)")
            }
            // What `attach` accepts, checked before anything is written: an import never fails half-way on a name.
            guard !name.isEmpty, name.utf8.count <= MemoryVault.maxAttachmentNameBytes,
                !name.unicodeScalars.contains(where: { $0.value < 0x20 })
            else {
                throw bad("an attachment name must be 1 to \(MemoryVault.maxAttachmentNameBytes) bytes without control characters")
            }
            guard names.insert(name).inserted else { throw bad("the note lists attachment '\(name)' twice") }
            return (name, UInt64(size), digest, hash)
        }
        nextExpected = 0
        notes += 1
        if listingTitles, titles.count < MemoryExportPackage.previewTitles { titles.append(MemoryExportPackage.preview(title)) }
        if batch != nil { pendingNote = NoteDraft(title: title, body: body, tags: tags, createdAt: created, updatedAt: updated) }
    }

    /// Adds the note read last, now that its attachments are all placed.
    private func addPendingNote() throws {
        guard let batch, let note = pendingNote else { return }
        pendingNote = nil
        try batch.add(note, attachments: placed)
        placed = []
    }

    private func nextAttachment() throws -> IncomingAttachment? {
        guard nextExpected < expected.count else { return nil }
        let next = expected[nextExpected]
        nextExpected += 1
        let incoming = IncomingAttachment(name: next.name, size: next.size, digest: next.digest, hex: next.hex)
        incoming.writer = try batch?.attachmentWriter(blobID: incoming.blobID, key: incoming.key)
        return incoming
    }

    private func closeAttachment() throws {
        guard let state = current else { return }
        current = nil
        let hash = Hex.encode(state.hasher.finalize())
        guard hash == state.hex else { throw bad("attachment '\(state.name)' does not match its \(state.hasher.digest.displayName)") }
        attachments += 1
        guard let batch, let writer = state.writer else { return }
        let written = try writer.finish()
        state.writer = nil
        try batch.place(written, blobID: state.blobID)
        placed.append(batch.entry(blobID: state.blobID, name: state.name, written: written, key: state.key))
    }
}

/// One attachment of a package as it streams in: its hash so far and, when importing, its file.
private final class IncomingAttachment {
    let name: String
    let size: UInt64
    /// The digest the package gives, hex.
    let hex: String
    var got: UInt64 = 0
    let hasher: AttachmentHasher
    var writer: AttachmentWriter?
    let blobID = Sodium.randomBytes(16)
    let key = SecretBytes(count: SecretStream.keyBytes)

    init(name: String, size: UInt64, digest: AttachmentDigest, hex: String) {
        self.name = name
        self.size = size
        self.hex = hex
        hasher = AttachmentHasher(digest, expectedBytes: Int(clamping: size))
    }
}
