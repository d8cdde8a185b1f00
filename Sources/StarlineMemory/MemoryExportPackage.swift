import Glibc
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
/// name, size and BLAKE2b, the counts in the trailer — so `import` can check a whole package before it writes,
/// and then imports it in one change of the vault that commits only after the last byte checked again.
public enum MemoryExportPackage {
    public static let format = "starline-memory-export"
    public static let version = 1
    static let pieceBytes = 48 * 1024
    /// A line of the package is at most this long (a base64 piece is 64 KiB; a note's text at most 16 MiB).
    static let maxLineBytes = 24 * 1024 * 1024
    /// What a check keeps of the titles for a preview (`import --dry-run`): at most this many, each cut to
    /// `previewTitleScalars` — memory stays bounded whatever the package holds.
    public static let previewTitles = 10_000
    public static let previewTitleScalars = 200

    public struct Summary: Sendable, Equatable {
        public var notes: Int
        public var attachments: Int
        /// BLAKE2b-256 of the whole plaintext: two reads of a package agree on it only when they read the same bytes.
        public var digest: [UInt8]
        /// The first `previewTitles` titles, each cut to `previewTitleScalars` Unicode scalars ("…" marks a cut
        /// one); only when asked for (`check(listingTitles: true)`).
        public var titles: [String] = []
    }

    /// Writes every note of `vault` with its attachments, one line at a time, to `emit`.
    public static func write(_ vault: MemoryVault, exportedAt: Timestamp, to emit: ([UInt8]) throws -> Void) throws -> Summary {
        let summaries = try vault.list()
        let digest = PackageDigest()
        func line(_ json: JSON) throws {
            let bytes = Array((json.serialized() + "\n").utf8)
            digest.stream.update(bytes)
            try emit(bytes)
        }
        try line(
            .object([
                ("format", .string(format)), ("version", .int(version)), ("exportedAt", .string(exportedAt.rfc3339)),
                ("notes", .int(summaries.count))
            ]))
        var attachments = 0
        for summary in summaries {
            let note = try vault.show(summary.id)
            let files = JSON.array(
                note.attachments.map {
                    .object([("name", .string($0.name)), ("size", .int(Int64(clamping: $0.size))), ($0.digestName, .string($0.digest))])
                })
            try line(
                .object([
                    (
                        "note",
                        .object([
                            ("id", .string(note.id)), ("title", .string(note.title)), ("body", .string(note.body)),
                            ("tags", .array(note.tags.map(JSON.string))), ("createdAt", .string(note.createdAt.rfc3339)),
                            ("updatedAt", .string(note.updatedAt.rfc3339)), ("attachments", files)
                        ])
                    )
                ]))
            for attachment in note.attachments {
                var pending: [UInt8] = []
                var failure: Error?
                _ = try vault.getAttachment(note.id, name: attachment.name) { (chunk) throws(StarlineError) in
                    pending += chunk
                    while pending.count >= pieceBytes, failure == nil {
                        do { try line(.object([("data", .string(Base64.encode(Array(pending[..<pieceBytes]))))])) } catch {
                            failure = error
                        }
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
        return Summary(notes: summaries.count, attachments: attachments, digest: digest.stream.finalize())
    }

    /// Checks a whole package and keeps nothing of it (but a bounded preview of the titles when asked).
    /// `feed` pushes the plaintext, in any pieces, into the writer it gets (an `AgeDecryptor` does).
    public static func check(listingTitles: Bool = false, _ feed: (AgeWriter) throws -> Void) throws -> Summary {
        let reader = MemoryExportReader(into: nil, listingTitles: listingTitles)
        try feed(reader.writer)
        return try reader.finish()
    }

    /// Imports a package into `vault` in one change: every note with a new id and its own times, its
    /// attachments streamed into files of the vault. The change commits only after the last byte was pushed
    /// and checked — and, with `expecting`, only when the bytes are those a check read before (same digest) —
    /// so a package that is damaged, truncated or changed anywhere adds nothing.
    public static func importPackage(into vault: MemoryVault, expecting: Summary?, _ feed: (AgeWriter) throws -> Void) throws -> Summary {
        try vault.importing { batch in
            let reader = MemoryExportReader(into: batch)
            try feed(reader.writer)
            let summary = try reader.finish()
            if let expecting,
                (summary.notes, summary.attachments, summary.digest) != (expecting.notes, expecting.attachments, expecting.digest)
            {
                throw StarlineError(
                    .data,
                    "the export changed after it was checked (\(summary.notes) notes read now, \(expecting.notes) before); nothing was imported"
                )
            }
            return summary
        }
    }

    /// A title as a preview lists it: at most `previewTitleScalars` Unicode scalars.
    static func preview(_ title: String) -> String {
        let scalars = title.unicodeScalars
        guard let cut = scalars.index(scalars.startIndex, offsetBy: previewTitleScalars, limitedBy: scalars.endIndex),
            cut != scalars.endIndex
        else { return title }
        return String(scalars[..<cut]) + "…"
    }
}

/// The running BLAKE2b of a package's plaintext (a class: the stream is not copyable, and closures share it).
final class PackageDigest {
    var stream = GenericHashStream(length: 32)
}
