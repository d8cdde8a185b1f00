#if canImport(Glibc)
import Glibc
#endif
import StarlineCore

/// `--journal FILE` (issue 11 item 3): the crash-safe record of a bulk run and its audit trail.
///
/// JSON Lines, appended: a `{"run":{…}}` record when a run starts (who ran it, when, why, with what), then one
/// record per finished item, written with a single write(2) *before* its result line is printed. A write to a
/// regular file is not interrupted by `kill -9` part-way (the signal is taken when the call returns), so
/// after a crash the journal holds exactly the items whose results were printed; a torn last line (power
/// loss) is ignored. `--resume` reads it back: items with a final status are not requested again.
/// The file is locked (flock) for the run: two runs never append to one journal at once.
public final class BulkJournal: @unchecked Sendable {
    // @unchecked: `record` is only called under the bulk engine's lock; the rest is set in init.
    public let path: String
    private let fd: Int32
    /// Items already finished in earlier runs (key: `BulkJournal.key`), with their records.
    public private(set) var finished: [String: JSON] = [:]
    /// Runs recorded before this one.
    public private(set) var earlierRuns = 0

    public static func key(id: String, user: String?) -> String { (user ?? "") + "\u{1F}" + id }

    /// Opens (creating 0600) and locks the journal; a journal that already has records needs `resume`.
    public init(path: String, resume: Bool, run: JSON) throws {
        self.path = path
        fd = open(path, O_RDWR | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw FileBytes.posixError("cannot open the journal \(path)", path: path) }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let e = errno
            close(fd)
            if e == EWOULDBLOCK {
                throw StarlineError(.locked, "the journal \(path) is in use by another run", details: .object([("path", .string(path))]))
            }
            throw FileBytes.posixError("cannot lock the journal \(path)", path: path)
        }
        let existing: [UInt8]
        do { existing = try FileBytes.read(fd: fd, name: path) } catch { close(fd); throw error }
        if !existing.isEmpty && !resume {
            close(fd)
            throw StarlineError(.usage, "the journal \(path) already records a run: pass --resume to continue it, or name a new journal",
                                details: .object([("path", .string(path))]))
        }
        for line in existing.split(separator: 0x0A) {
            // A torn line (the very end after a power cut) or a foreign one is skipped, never trusted.
            guard let record = try? JSON.parse(Array(line)) else { continue }
            if record["run"] != nil { earlierRuns += 1; continue }
            guard let id = record["id"]?.stringValue, let status = record["status"]?.stringValue.flatMap(BulkItemStatus.init),
                  status.isFinal else { continue }
            finished[Self.key(id: id, user: record["user"]?.stringValue)] = record
        }
        if let failure = append(.object([("run", run)])) { close(fd); throw failure }
    }

    deinit { close(fd) }

    /// Appends one record; nil when it was written whole.
    public func record(_ record: JSON) -> StarlineError? { append(record) }

    /// Flushes the journal to disk (the end of a run): kill -9 never loses a record, a power cut after this neither.
    public func sync() -> StarlineError? {
        fdatasync(fd) == 0 ? nil : FileBytes.posixError("cannot sync the journal \(path)", path: path)
    }

    private func append(_ record: JSON) -> StarlineError? {
        let line = Array((record.serialized() + "\n").utf8)
        let ok = line.withUnsafeBytes { FileBytes.write(fd: fd, $0) }
        return ok ? nil : FileBytes.posixError("cannot write the journal \(path)", path: path)
    }
}
