#if canImport(Glibc)
import Glibc
#endif
import StarlineCore
import StarlineSQLite

/// The items of a bulk run keyed by (user, id), on disk: which input line named each one
/// first (later lines naming it are duplicates, reported exactly — the ids themselves are compared, not a
/// hash of them) and which ones an earlier run's journal finished. A private temporary SQLite database
/// (removed when closed) with a 16 MB page cache, so memory stays bounded however many items a run has;
/// the operating system's page cache, not this process, holds the rest.
///
/// Random ids inserted one by one would each touch a random page of a tree larger than the cache. So new
/// items wait in memory (`batchLimit` of them) and go to the database sorted, a batch at a time; a Bloom
/// filter over what the database holds answers "never seen" for almost every new item without a query.
/// The filter only ever sends a lookup to the database; a "seen" is always decided by the stored ids.
public final class BulkItemIndex: @unchecked Sendable {
    // @unchecked: `see`, `finished`, `tally` and the reads run on one thread at a time (the run's source
    // lock, or the audit's one thread); `markRevoked` (the report lock) touches only its own table, and
    // SQLite serialises the connection.
    let database: SQLiteDatabase
    private let upsert: SQLiteStatement
    private let lookUp: SQLiteStatement
    private let count: SQLiteStatement
    private let revoked: SQLiteStatement
    private let isRevoked: SQLiteStatement
    private var pending: [Key: Pending] = [:]
    private let filter = BloomFilter(bits: 1 << 26)
    static let batchLimit = 65_536

    /// `user ␟ id` in one string: U+001F sorts below every character an id or user may hold, so the order of
    /// keys is the order of (user, id), the table's.
    struct Key: Hashable, Comparable {
        var text: String

        init(user: String, id: String) { text = user + "\u{1F}" + id }

        var parts: (user: String, id: String) {
            let utf8 = text.utf8
            let separator = utf8.firstIndex(of: 0x1F)!
            return (String(text[..<separator]), String(text[text.index(after: separator)...]))
        }

        static func < (a: Key, b: Key) -> Bool { a.text < b.text }
    }

    struct Pending {
        var line: Int?
        var done: BulkItemStatus?
        var finals = 0
        var failed = 0
    }

    public init() throws {
        do {
            // "" opens a private, temporary on-disk database: "it will be automatically deleted as soon as the
            // database connection is closed" (sqlite3_open, "Temporary databases").
            database = try SQLiteDatabase(path: "")
            try database.execute(
                """
                PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA cache_size=-16000; PRAGMA temp_store=FILE;
                CREATE TABLE item(user TEXT NOT NULL, id TEXT NOT NULL, line INTEGER, done TEXT, finals INTEGER NOT NULL DEFAULT 0,
                                  failed INTEGER NOT NULL DEFAULT 0, PRIMARY KEY(user, id)) WITHOUT ROWID;
                CREATE TABLE revoked(user TEXT NOT NULL, id TEXT NOT NULL, PRIMARY KEY(user, id)) WITHOUT ROWID;
                BEGIN;
                """)
            upsert = try database.prepare(
                """
                INSERT INTO item(user, id, line, done, finals, failed) VALUES(?, ?, ?, ?, ?, ?)
                ON CONFLICT(user, id) DO UPDATE SET line = coalesce(item.line, excluded.line), done = coalesce(excluded.done, item.done),
                                                    finals = item.finals + excluded.finals, failed = item.failed + excluded.failed
                """)
            lookUp = try database.prepare("SELECT line, done FROM item WHERE user = ? AND id = ?")
            count = try database.prepare("SELECT count(*) FROM item WHERE line IS NOT NULL")
            revoked = try database.prepare("INSERT OR IGNORE INTO revoked(user, id) VALUES(?, ?)")
            isRevoked = try database.prepare("SELECT 1 FROM revoked WHERE user = ? AND id = ?")
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
        let key = Key(user: user ?? "", id: id)
        if var entry = pending[key] {
            if let first = entry.line { return .duplicate(firstLine: first) }
            // Known from the journal or a tally only: the database may still name a line for it.
            if let stored = try stored(key), let first = stored.line { return .duplicate(firstLine: first) }
            entry.line = line
            pending[key] = entry
            return .first(finished: entry.done)
        }
        var entry = Pending(line: line)
        if let stored = try stored(key) {
            if let first = stored.line { return .duplicate(firstLine: first) }
            entry.done = stored.done
        }
        try add(key, entry)
        return .first(finished: entry.done)
    }

    /// Records that an earlier run finished (user, id) with `status` (the last record wins, as in the journal).
    public func finished(id: String, user: String?, status: BulkItemStatus) throws {
        let key = Key(user: user ?? "", id: id)
        var entry = pending[key] ?? Pending()
        entry.done = status
        try add(key, entry)
    }

    /// Distinct items seen (`see`).
    public var distinctItems: Int {
        get throws {
            try flush()
            return try storage { try count.query().first?[0].int64Value.map(Int.init) ?? 0 }
        }
    }

    /// Marks (user, id) revoked by this run (`--verify` lists them again).
    public func markRevoked(id: String, user: String?) throws {
        try storage { try revoked.run([.text(user ?? ""), .text(id)]) }
    }

    public func wasRevoked(id: String, user: String?) throws -> Bool {
        try storage { try !isRevoked.query([.text(user ?? ""), .text(id)]).isEmpty }
    }

    // MARK: Audits (`journal verify`)

    /// Counts one journal record of (user, id): a final record (`status`, kept as the item's last final status)
    /// or a failed one.
    public func tally(id: String, user: String?, status: BulkItemStatus) throws {
        let key = Key(user: user ?? "", id: id)
        var entry = pending[key] ?? Pending()
        if status.isFinal {
            entry.finals += 1
            entry.done = status
        } else if status == .failed {
            entry.failed += 1
        } else {
            return
        }
        try add(key, entry)
    }

    /// Every item with its first planned line (nil: not planned), its tallies and its last final status, in
    /// (user, id) order.
    public func forEachItem(
        _ body: (_ id: String, _ user: String?, _ line: Int?, _ finals: Int, _ failed: Int, _ last: BulkItemStatus?) throws -> Void
    ) throws {
        try flush()
        let all = try storage { try database.prepare("SELECT user, id, line, finals, failed, done FROM item ORDER BY user, id") }
        while try storage({ try all.step() }) {
            let user = all.column(0).stringValue ?? ""
            try body(
                all.column(1).stringValue ?? "", user.isEmpty ? nil : user, all.column(2).int64Value.map(Int.init),
                Int(all.column(3).int64Value ?? 0), Int(all.column(4).int64Value ?? 0),
                all.column(5).stringValue.flatMap(BulkItemStatus.init))
        }
    }

    // MARK: The batch

    private func add(_ key: Key, _ entry: Pending) throws {
        pending[key] = entry
        if pending.count >= Self.batchLimit { try flush() }
    }

    /// What the database holds for `key`; asked only when the filter says it may hold it.
    private func stored(_ key: Key) throws -> (line: Int?, done: BulkItemStatus?)? {
        guard filter.mayContain(key) else { return nil }
        return try storage {
            let (user, id) = key.parts
            try lookUp.bind([.text(user), .text(id)])
            defer { lookUp.reset() }
            guard try lookUp.step() else { return nil }
            return (lookUp.column(0).int64Value.map(Int.init), lookUp.column(1).stringValue.flatMap(BulkItemStatus.init))
        }
    }

    /// Writes the waiting items in key order (neighbouring pages, each written once per batch).
    private func flush() throws {
        guard !pending.isEmpty else { return }
        for (key, entry) in pending.sorted(by: { $0.key < $1.key }) {
            let (user, id) = key.parts
            try storage {
                try upsert.run([
                    .text(user), .text(id), entry.line.map { .integer(Int64($0)) } ?? .null,
                    entry.done.map { .text($0.rawValue) } ?? .null, .integer(Int64(entry.finals)), .integer(Int64(entry.failed))
                ])
            }
            filter.insert(key)
        }
        pending.removeAll(keepingCapacity: true)
    }

    private func storage<T>(_ body: () throws -> T) throws -> T {
        do { return try body() } catch let error as SQLiteError {
            throw StarlineError(.storage, "the run's temporary item index failed: \(error.message)")
        }
    }
}

/// A Bloom filter over `BulkItemIndex.Key`s (k = 6, double hashing with this process's random hash seed):
/// "no" is certain, "maybe" is checked against the database. 64 Mbit (8 MB, calloc'd: pages are touched
/// only as bits are set) keeps false positives near 0.3 % at 5 million items; past that, more lookups, never
/// a wrong answer.
final class BloomFilter {
    private let words: UnsafeMutablePointer<UInt64>
    private let mask: UInt64

    init(bits: Int) {
        let count = max(1, bits / 64)
        words = calloc(count, 8)!.bindMemory(to: UInt64.self, capacity: count)
        mask = UInt64(count * 64 - 1)
    }

    deinit { free(words) }

    private func hashes(_ key: BulkItemIndex.Key) -> (UInt64, UInt64) {
        var a = Hasher(), b = Hasher()
        a.combine(key)
        b.combine(0x5bd1_e995 as UInt32)
        b.combine(key)
        return (UInt64(bitPattern: Int64(a.finalize())), UInt64(bitPattern: Int64(b.finalize())) | 1)
    }

    func insert(_ key: BulkItemIndex.Key) {
        let (h1, h2) = hashes(key)
        for i in 0..<6 as Range<UInt64> {
            let bit = (h1 &+ i &* h2) & mask
            words[Int(bit >> 6)] |= 1 << (bit & 63)
        }
    }

    func mayContain(_ key: BulkItemIndex.Key) -> Bool {
        let (h1, h2) = hashes(key)
        for i in 0..<6 as Range<UInt64> {
            let bit = (h1 &+ i &* h2) & mask
            if words[Int(bit >> 6)] & (1 << (bit & 63)) == 0 { return false }
        }
        return true
    }
}
