import StarlineCore
import StarlineSQLite

/// The items of a bulk run keyed by (user, id), on disk: which input line named each one
/// first (later lines naming it are duplicates, reported exactly — the ids themselves are compared, not a
/// hash of them) and which ones an earlier run's journal finished. A private temporary SQLite database
/// (removed when closed) with a 16 MB page cache, so memory stays bounded however many items a run has;
/// the operating system's page cache, not this process, holds the rest.
public final class BulkItemIndex: @unchecked Sendable {
    // @unchecked: used from one thread at a time (the run's source lock, or the audit's one thread).
    let database: SQLiteDatabase
    private let see: SQLiteStatement
    private let finish: SQLiteStatement
    private let count: SQLiteStatement
    private let tally: SQLiteStatement
    private let revoked: SQLiteStatement
    private let isRevoked: SQLiteStatement

    public init() throws {
        do {
            // "" opens a private, temporary on-disk database: "it will be automatically deleted as soon as the
            // database connection is closed" (sqlite3_open, "Temporary databases").
            database = try SQLiteDatabase(path: "")
            try database.execute("""
                PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA cache_size=-16000; PRAGMA temp_store=FILE;
                CREATE TABLE item(user TEXT NOT NULL, id TEXT NOT NULL, line INTEGER, done TEXT, revoked INTEGER NOT NULL DEFAULT 0,
                                  finals INTEGER NOT NULL DEFAULT 0,
                                  failed INTEGER NOT NULL DEFAULT 0, PRIMARY KEY(user, id)) WITHOUT ROWID;
                BEGIN;
                """)
            see = try database.prepare("""
                INSERT INTO item(user, id, line) VALUES(?, ?, ?)
                ON CONFLICT(user, id) DO UPDATE SET line = coalesce(item.line, excluded.line) RETURNING line, done
                """)
            finish = try database.prepare("INSERT INTO item(user, id, done) VALUES(?, ?, ?) ON CONFLICT(user, id) DO UPDATE SET done = excluded.done")
            count = try database.prepare("SELECT count(*) FROM item WHERE line IS NOT NULL")
            tally = try database.prepare("""
                INSERT INTO item(user, id, finals, failed) VALUES(?, ?, ?, ?)
                ON CONFLICT(user, id) DO UPDATE SET finals = finals + excluded.finals, failed = failed + excluded.failed
                """)
            revoked = try database.prepare("UPDATE item SET revoked = 1 WHERE user = ? AND id = ?")
            isRevoked = try database.prepare("SELECT 1 FROM item WHERE user = ? AND id = ? AND revoked = 1")
        } catch {
            throw StarlineError(.storage, "cannot create the run's temporary item index: \(error.message)")
        }
    }

    public enum Seen: Sendable, Equatable {
        /// The first line naming this item; `finished` when an earlier run's journal has its final status.
        case first(finished: BulkItemStatus?)
        /// Named before, on `firstLine`.
        case duplicate(firstLine: Int)
    }

    /// Records that `line` names (user, id).
    public func see(id: String, user: String?, line: Int) throws -> Seen {
        try storage {
            try see.bind([.text(user ?? ""), .text(id), .integer(Int64(line))])
            defer { see.reset() }
            guard try see.step() else { throw StarlineError(.internalError, "the item index answered no row") }
            let first = see.column(0).int64Value.map(Int.init) ?? line
            if first != line { return .duplicate(firstLine: first) }
            return .first(finished: see.column(1).stringValue.flatMap(BulkItemStatus.init))
        }
    }

    /// Records that an earlier run finished (user, id) with `status` (the last record wins, as in the journal).
    public func finished(id: String, user: String?, status: BulkItemStatus) throws {
        try storage { try finish.run([.text(user ?? ""), .text(id), .text(status.rawValue)]) }
    }

    /// Marks (user, id) revoked by this run (`--verify` lists them again).
    public func markRevoked(id: String, user: String?) throws {
        try storage { try revoked.run([.text(user ?? ""), .text(id)]) }
    }

    public func wasRevoked(id: String, user: String?) throws -> Bool {
        try storage { try !isRevoked.query([.text(user ?? ""), .text(id)]).isEmpty }
    }

    /// Distinct items seen (`see`).
    public var distinctItems: Int {
        get throws { try storage { try count.query().first?[0].int64Value.map(Int.init) ?? 0 } }
    }

    // MARK: Audits (`journal verify`)

    /// Counts one journal record of (user, id): `finals` final records, `failed` failed ones.
    public func tally(id: String, user: String?, finals: Int, failed: Int) throws {
        try storage { try tally.run([.text(user ?? ""), .text(id), .integer(Int64(finals)), .integer(Int64(failed))]) }
    }

    /// Every item with its first planned line (nil: not planned) and its tallies, in (user, id) order.
    public func forEachItem(_ body: (_ id: String, _ user: String?, _ line: Int?, _ finals: Int, _ failed: Int) throws -> Void) throws {
        let all = try storage { try database.prepare("SELECT user, id, line, finals, failed FROM item ORDER BY user, id") }
        while try storage({ try all.step() }) {
            let user = all.column(0).stringValue ?? ""
            try body(all.column(1).stringValue ?? "", user.isEmpty ? nil : user, all.column(2).int64Value.map(Int.init),
                     Int(all.column(3).int64Value ?? 0), Int(all.column(4).int64Value ?? 0))
        }
    }

    private func storage<T>(_ body: () throws -> T) throws -> T {
        do { return try body() } catch let error as SQLiteError {
            throw StarlineError(.storage, "the run's temporary item index failed: \(error.message)")
        }
    }
}
