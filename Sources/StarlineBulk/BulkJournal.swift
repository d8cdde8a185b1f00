#if canImport(Glibc)
import Glibc
#endif
import StarlineCore

/// `--journal FILE`: the crash-safe record of a bulk run and its audit trail.
///
/// JSON Lines, appended: a `{"run":{…}}` header when a run starts (who ran it, against which API, when, why,
/// with what input), then one record per finished item, written with a single write(2) *before* its result
/// line is printed. A write to a regular file is not interrupted by `kill -9` part-way (the signal is taken
/// when the call returns), so after a crash the journal holds exactly the items whose results were printed;
/// a torn last line (power loss) is ignored. `--resume` reads it back as a stream (any size, bounded memory):
/// items with a final status are handed to the caller, which does not request them again.
///
/// A journal decides what is skipped, so it must be ours: a regular file (not a FIFO, a device or a link),
/// owned by the caller's uid and writable by nobody else — a journal planted in a shared directory could
/// otherwise mark sessions "revoked" that never were. The file is locked (flock) for the run: two runs never
/// append to one journal at once (`JOURNAL_IN_USE`).
public final class BulkJournal: @unchecked Sendable {
    // @unchecked: `record` is only called under the reporter's lock; the rest is set in init.
    public let path: String
    private let fd: Int32
    /// Runs recorded before this one.
    public let earlierRuns: Int
    /// The first run's header (`{"run":{…}}`'s object), which a resumed run must match.
    public let header: JSON?
    public static let maxRecordBytes = 64 << 10

    /// Opens (creating 0600), checks and locks the journal; a journal that already has records needs `resume`.
    /// `checkHeader` sees the first run's header (throw to refuse the journal); `finished` gets every item record
    /// with a final status, in file order; `run` is the header written for this run.
    public init(
        path: String, resume: Bool, run: () -> JSON, checkHeader: (JSON) throws -> Void,
        finished: (_ id: String, _ user: String?, _ status: BulkItemStatus) throws -> Void
    ) throws {
        let fd = try Self.openPrivate(path)
        // Everything is read into locals and stored at the end: a throw before that closes the descriptor here,
        // and `deinit` (which runs only for a fully initialised object) never closes it a second time.
        var header: JSON?
        var earlierRuns = 0
        do {
            let reader = LineReader(fd: fd, name: path, maxLineBytes: Self.maxRecordBytes)
            while let line = try reader.next() {
                if line.number == 1, !resume {
                    throw StarlineError(
                        .usage, "the journal \(path) already records a run: pass --resume to continue it, or name a new journal",
                        details: .object([("path", .string(path))]))
                }
                // A torn line (the very end after a power cut) or a foreign one is skipped, never trusted.
                guard let bytes = line.bytes, let record = try? JSON.parse(bytes) else { continue }
                if let run = record["run"] {
                    if header == nil {
                        header = run
                        try checkHeader(run)
                    }
                    earlierRuns += 1
                    continue
                }
                guard let item = Self.item(record), item.status.isFinal else { continue }
                try finished(item.id, item.user, item.status)
            }
            if let failure = Self.append(fd, path, .object([("run", run())])) { throw failure }
        } catch {
            close(fd)
            throw error
        }
        self.path = path
        self.fd = fd
        self.header = header
        self.earlierRuns = earlierRuns
    }

    /// The planned records of the journal (`{"planned":…}`, every run's), as a stream from its start: what a
    /// resumed run owes besides its new input. Read through a descriptor of its own on the same file (the one
    /// this run appends to, already checked and locked), never by path again.
    public func plannedRecords() throws -> @Sendable () throws -> (line: Int, target: RevocationTarget)? {
        let reading = open("/proc/self/fd/\(fd)", O_RDONLY | O_CLOEXEC)
        guard reading >= 0 else { throw FileBytes.posixError("cannot read the journal \(path)", path: path) }
        // The reader is used under its lock only (the run's source lock serialises the calls anyway); nil once
        // the end was read and the descriptor closed.
        let reader = Locked(PlanReading(lines: LineReader(fd: reading, name: path, maxLineBytes: Self.maxRecordBytes)))
        return {
            try reader.withLock { current in
                guard let lines = current.lines else { return nil }
                while let line = try lines.next() {
                    guard let bytes = line.bytes, let record = try? JSON.parse(bytes), let planned = Self.planned(record) else { continue }
                    return planned
                }
                current.lines = nil
                close(reading)
                return nil
            }
        }
    }

    /// Opens and locks `path` if it is a regular file of ours that no one else can write; closed on failure.
    static func openPrivate(_ path: String) throws -> Int32 {
        // O_NONBLOCK: opening a FIFO or a device must not wait; the checks below refuse them. Cleared after.
        let fd = open(path, O_RDWR | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0o600)
        guard fd >= 0 else {
            let e = errno
            if e == ELOOP, PrivateFiles.isSymbolicLink(path) { throw untrusted(path, "is a symbolic link") }
            if e == ENXIO { throw untrusted(path, "is not a regular file") }
            throw FileBytes.posixError("cannot open the journal \(path)", path: path)
        }
        var info = stat()
        var problem: StarlineError?
        if fstat(fd, &info) != 0 {
            problem = FileBytes.posixError("cannot examine the journal \(path)", path: path)
        } else if (info.st_mode & S_IFMT) != S_IFREG {
            problem = untrusted(path, "is not a regular file")
        } else if info.st_uid != geteuid() {
            problem = untrusted(path, "belongs to uid \(info.st_uid), not to you (uid \(geteuid()))")
        } else if info.st_mode & 0o022 != 0, !FileTrust.groupShared(info, directory: FileTrust.directory(of: path)) {
            // Group write is allowed in a directory shared through our own group (setgid, not world-writable:
            // a Kubernetes volume with fsGroup), never otherwise.
            problem = untrusted(
                path,
                "is writable by group or others (mode \(String(info.st_mode & 0o7777, radix: 8))); run chmod go-w \(path), or keep it in a setgid directory of a group of yours that others cannot write"
            )
        } else if flock(fd, LOCK_EX | LOCK_NB) != 0 {
            problem =
                errno == EWOULDBLOCK
                ? StarlineError(.journalInUse, "the journal \(path) is in use by another run", details: .object([("path", .string(path))]))
                : FileBytes.posixError("cannot lock the journal \(path)", path: path)
        }
        if let problem {
            close(fd)
            throw problem
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        return fd
    }

    deinit { close(fd) }

    /// A planned record's line and target (`BulkJournalPlan`); nil for anything else.
    public static func planned(_ record: JSON) -> (line: Int, target: RevocationTarget)? {
        BulkJournalPlan(record).map { ($0.line, $0.target) }
    }

    /// An item record's id, user and status (`BulkJournalEntry`); nil for anything else (a header, a foreign line).
    public static func item(_ record: JSON) -> (id: String, user: String?, status: BulkItemStatus)? {
        BulkJournalEntry(record).flatMap { entry in entry.id.map { ($0, entry.user, entry.status) } }
    }

    static func untrusted(_ path: String, _ problem: String) -> StarlineError {
        StarlineError(
            .insecurePermissions,
            "the journal \(path) \(problem): a journal decides which items are skipped, so only a regular file of yours that nobody else can write is used (group write only in a setgid directory of your group)",
            details: .object([("path", .string(path))]))
    }

    /// Appends one record; nil when it was written whole.
    public func record(_ record: JSON) -> StarlineError? { Self.append(fd, path, record) }

    /// Flushes the journal to disk (the end of a run): kill -9 never loses a record, a power cut after this neither.
    public func sync() -> StarlineError? {
        fdatasync(fd) == 0 ? nil : FileBytes.posixError("cannot sync the journal \(path)", path: path)
    }

    private static func append(_ fd: Int32, _ path: String, _ record: JSON) -> StarlineError? {
        let line = Array((record.serialized() + "\n").utf8)
        let ok = line.withUnsafeBytes { FileBytes.write(fd: fd, $0) }
        return ok ? nil : FileBytes.posixError("cannot write the journal \(path)", path: path)
    }
}

/// The journal's plan being read back. @unchecked: the reader (a buffer and a descriptor) is used only inside
/// its `Locked`, never handed out.
private struct PlanReading: @unchecked Sendable {
    var lines: LineReader?
}
