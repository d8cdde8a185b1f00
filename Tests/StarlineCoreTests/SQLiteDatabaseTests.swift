import Foundation
import Glibc
import StarlineCore
import Synchronization
import StarlineTestSupport
import Testing
import StarlineSQLite

// Result codes from sqlite3.h, spelled out so the tests need not import the C module.
private let SQLITE_BUSY: Int32 = 5
private let SQLITE_RANGE: Int32 = 25
private let SQLITE_MISUSE: Int32 = 21
private let SQLITE_CONSTRAINT: Int32 = 19
private let SQLITE_CANTOPEN: Int32 = 14
private let SQLITE_CONSTRAINT_FOREIGNKEY: Int32 = 787
private let SQLITE_CONSTRAINT_UNIQUE: Int32 = 2067

@Suite("SQLiteDatabase")
final class SQLiteDatabaseTests: Sendable {
    /// A fresh private directory per test (Swift Testing makes a new suite instance for each test).
    let dir: String
    init() throws { dir = try makeStorageTempDir() }

    @Test("cached statements give fresh results, survive schema changes, and are released with the database")
    func statementCacheReuse() throws {
        let path = dir + "/cache.db"
        var db: SQLiteDatabase? = try SQLiteDatabase(path: path)
        try db!.execute("CREATE TABLE t(k INTEGER PRIMARY KEY, v TEXT)")
        for k in 0..<200 { try db!.run("INSERT INTO t(k, v) VALUES(?, ?)", [.integer(Int64(k)), .text("v\(k)")]) }
        for k in [5, 150, 5, 199] {
            #expect(try db!.queryFirst("SELECT v FROM t WHERE k = ?", [.integer(Int64(k))])?.string("v") == "v\(k)")
        }
        // A cached statement compiled before a schema change is recompiled by SQLite (prepare_v2).
        try db!.execute("ALTER TABLE t ADD COLUMN w TEXT DEFAULT 'x'")
        #expect(try db!.queryFirst("SELECT * FROM t WHERE k = ?", [.integer(7)])?.string("w") == "x")
        // Releasing the database finalizes the cached statements and closes the file: a second
        // connection can then take an exclusive lock at once.
        weak let weakDB = db
        db = nil
        #expect(weakDB == nil)
        let other = try SQLiteDatabase(path: path, busyTimeoutMilliseconds: 0)
        try other.execute("BEGIN EXCLUSIVE; COMMIT")
    }
    deinit { removeStorageTempDir(dir) }

    @Test("a new database file is created 0600, in WAL mode, with foreign keys on; side files are 0600 too")
    func createsPrivateWALDatabase() throws {
        let path = dir + "/sessions.db"
        let db = try SQLiteDatabase(path: path)
        #expect(permissionBits(path) == 0o600)
        #expect(try db.query("PRAGMA journal_mode").first?.string(0) == "wal")
        #expect(try db.query("PRAGMA foreign_keys").first?.int64(0) == 1)
        #expect(try db.query("PRAGMA synchronous").first?.int64(0) == 2)  // FULL
        try db.execute("CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1)")
        #expect(permissionBits(path + "-wal") == 0o600)
        #expect(permissionBits(path + "-shm") == 0o600)
    }

    @Test("an existing database keeps its mode; WAL persists for a read-only connection")
    func reopenAndReadOnly() throws {
        let path = dir + "/chat.db"
        do {
            let db = try SQLiteDatabase(path: path)
            try db.execute("CREATE TABLE t (x TEXT)")
            try db.run("INSERT INTO t VALUES (?)", ["hello"])
        }
        let reader = try SQLiteDatabase(path: path, readOnly: true)
        #expect(try reader.query("SELECT x FROM t").first?.string("x") == "hello")
        #expect(try reader.query("PRAGMA journal_mode").first?.string(0) == "wal")
        let error = #expect(throws: SQLiteError.self) { try reader.run("INSERT INTO t VALUES ('no')") }
        #expect(error?.resultCode == 8)  // SQLITE_READONLY
    }

    @Test("\":memory:\" databases work")
    func inMemory() throws {
        let db = try SQLiteDatabase(path: ":memory:")
        try db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT NOT NULL)")
        try db.run("INSERT INTO t (name) VALUES (?)", ["a"])
        #expect(db.lastInsertRowID == 1)
        try db.run("INSERT INTO t (name) VALUES (?), (?)", ["b", "c"])
        #expect(db.changes == 2)
        #expect(try db.query("SELECT name FROM t ORDER BY id").map { $0.string("name") } == ["a", "b", "c"])
    }

    @Test("typed values round-trip: integers, reals, Unicode text and blobs with NULs, empty values, NULL")
    func valuesRoundTrip() throws {
        let db = try SQLiteDatabase(path: ":memory:")
        try db.execute("CREATE TABLE v (i INTEGER, r REAL, s TEXT, b BLOB, n)")
        let text = "héllo ✓ 🌟 中文\u{0}after-nul"
        let blob: [UInt8] = [0, 1, 0, 255, 0, 127, 128, 0]
        let rows: [[SQLiteValue]] = [
            [.integer(.min), .real(3.25), .text(text), .blob(blob), .null],
            [.integer(.max), .real(-0.5e-300), .text(""), .blob([]), .integer(7)]
        ]
        for row in rows { try db.run("INSERT INTO v VALUES (?, ?, ?, ?, ?)", row) }
        let read = try db.query("SELECT i, r, s, b, n FROM v ORDER BY rowid")
        #expect(read.map(\.values) == rows)
        #expect(read[0].columnNames == ["i", "r", "s", "b", "n"])
        // An empty string and an empty blob are not NULL.
        #expect(try db.query("SELECT count(*) FROM v WHERE s IS NULL OR b IS NULL").first?.int64(0) == 0)
        #expect(try db.query("SELECT length(b) FROM v ORDER BY rowid").map { $0.int64(0) } == [8, 0])
        // Text with an embedded NUL keeps its full length inside SQLite too.
        #expect(
            try db.query("SELECT length(CAST(s AS BLOB)) FROM v ORDER BY rowid").first?.int64(0)
                == Int64(text.utf8.count))
    }

    @Test("rows are addressable by name (case-insensitive fallback) and index, with typed getters")
    func rowAccess() throws {
        let db = try SQLiteDatabase(path: ":memory:")
        let row = try #require(try db.queryFirst("SELECT 42 AS Answer, 2.5 AS ratio, 'x' AS name, NULL AS gone, 1 AS flag"))
        #expect(row.int64("Answer") == 42)
        #expect(row.int("answer") == 42)
        #expect(row.double("ratio") == 2.5)
        #expect(row.double("Answer") == 42.0)
        #expect(row.string(2) == "x")
        #expect(row.string("Answer") == nil)  // wrong type
        #expect(row.isNull("gone"))
        #expect(row["missing"] == nil)
        #expect(row.bool("flag") == true)
        #expect(row[0] == .integer(42))
        #expect(try db.queryFirst("SELECT 1 WHERE 0") == nil)
    }

    @Test("prepared statements can be re-run with new parameters; bad parameter counts and scripts are rejected")
    func preparedStatements() throws {
        let db = try SQLiteDatabase(path: ":memory:")
        try db.execute("CREATE TABLE t (k TEXT PRIMARY KEY, v INTEGER)")
        let insert = try db.prepare("INSERT INTO t VALUES (?, ?)")
        #expect(insert.parameterCount == 2)
        for i in 0..<5 { try insert.run([.text("k\(i)"), .integer(Int64(i * i))]) }
        let select = try db.prepare("SELECT v FROM t WHERE k = ?")
        #expect(try select.query(["k3"]).first?.int64("v") == 9)
        #expect(try select.query(["k4"]).first?.int64("v") == 16)

        let count = #expect(throws: SQLiteError.self) { try insert.run(["only one"]) }
        #expect(count?.resultCode == SQLITE_RANGE)
        let two = #expect(throws: SQLiteError.self) { try db.prepare("SELECT 1; SELECT 2") }
        #expect(two?.resultCode == SQLITE_MISUSE)
        // Trailing semicolons and comments are not a second statement.
        #expect(try db.prepare("SELECT 1; -- done\n").query().first?.int64(0) == 1)
        let syntax = #expect(throws: SQLiteError.self) { try db.prepare("SELEKT 1") }
        #expect(syntax?.message.contains("syntax error") == true)
        #expect(syntax?.sql == "SELEKT 1")
    }

    @Test("a UNIQUE violation raises SQLiteError with the constraint codes, mapped to STORAGE_ERROR")
    func constraintViolation() throws {
        let db = try SQLiteDatabase(path: ":memory:")
        try db.execute("CREATE TABLE t (k TEXT UNIQUE)")
        try db.run("INSERT INTO t VALUES (?)", ["dup"])
        let thrown = #expect(throws: SQLiteError.self) {
            try db.run("INSERT INTO t VALUES (?)", ["dup"])
        }
        let error = try #require(thrown)
        #expect(error.isConstraint)
        #expect(!error.isBusy)
        #expect(error.resultCode == SQLITE_CONSTRAINT)
        #expect(error.extendedResultCode == SQLITE_CONSTRAINT_UNIQUE)
        #expect(error.message.contains("UNIQUE constraint failed: t.k"))

        let mapped = error.starlineError
        #expect(mapped.code == .storage)
        #expect(mapped.code.rawValue == "STORAGE_ERROR")
        #expect(mapped.details?["sqliteCode"]?.intValue == Int64(SQLITE_CONSTRAINT_UNIQUE))
        #expect(mapped.details?["sqliteMessage"]?.stringValue == error.message)
        #expect(!mapped.message.contains("dup"))
    }

    @Test("foreign keys are enforced")
    func foreignKeys() throws {
        let db = try SQLiteDatabase(path: ":memory:")
        try db.execute(
            """
            CREATE TABLE parent (id INTEGER PRIMARY KEY);
            CREATE TABLE child (parent INTEGER NOT NULL REFERENCES parent(id));
            """)
        let error = #expect(throws: SQLiteError.self) { try db.run("INSERT INTO child VALUES (1)") }
        #expect(error?.extendedResultCode == SQLITE_CONSTRAINT_FOREIGNKEY)
    }

    @Test(
        """
        checkpointOnClose: false leaves committed rows in the WAL at close; they are read back, and a default \
        connection checkpoints them
        """)
    func noCheckpointOnClose() throws {
        let path = dir + "/wal.db"
        let marker = "row-kept-in-the-wal"
        do {
            let db = try SQLiteDatabase(path: path, checkpointOnClose: false)
            try db.execute("CREATE TABLE t (x TEXT)")
            try db.run("INSERT INTO t VALUES (?)", [.text(marker)])
        }
        func fileContains(_ file: String) throws -> Bool {
            let bytes = try AtomicFile.read(file) ?? []
            return bytes.count >= marker.utf8.count && String(decoding: bytes, as: UTF8.self).contains(marker)
        }
        #expect(try fileContains(path + "-wal"), "the row is in the WAL after close")
        #expect(try !fileContains(path), "not yet in the main file")
        do {
            let db = try SQLiteDatabase(path: path)
            #expect(try db.query("SELECT x FROM t").first?.string(0) == marker)
        }
        // The default connection was the last to close: it checkpointed.
        #expect(try fileContains(path))

        // Many commits without a checkpoint at close: the automatic checkpoint keeps the WAL small.
        for round in 0..<300 {
            let db = try SQLiteDatabase(path: path, checkpointOnClose: false)
            try db.run("INSERT INTO t VALUES (?)", [.text(String(repeating: "w", count: 2000) + "\(round)")])
        }
        var info = stat()
        #expect(stat(path + "-wal", &info) == 0)
        #expect(info.st_size <= 1_000_000, "WAL of \(info.st_size) bytes after 300 commits")
    }

    @Test("durable: false commits with synchronous=NORMAL and restores FULL afterwards, also when the body throws")
    func nonDurableTransaction() throws {
        let db = try SQLiteDatabase(path: dir + "/sync.db")
        try db.execute("CREATE TABLE t (x INTEGER)")
        let inside = try db.transaction(durable: false) {
            try db.run("INSERT INTO t VALUES (1)")
            return try db.query("PRAGMA synchronous").first?.int64(0)
        }
        #expect(inside == 1)  // NORMAL
        #expect(try db.query("PRAGMA synchronous").first?.int64(0) == 2)  // FULL
        struct Abort: Error {}
        #expect(throws: Abort.self) { try db.transaction(durable: false) { throw Abort() } }
        #expect(try db.query("PRAGMA synchronous").first?.int64(0) == 2)
        #expect(try db.query("SELECT count(*) FROM t").first?.int64(0) == 1)

        // Outside WAL mode NORMAL could corrupt the file in a power cut: such a connection stays FULL.
        let memory = try SQLiteDatabase(path: ":memory:")
        #expect(try memory.transaction(durable: false) { try memory.query("PRAGMA synchronous").first?.int64(0) } == 2)
    }

    @Test(
        """
        transaction commits the body's work and returns its value; a throwing body rolls back and its error comes \
        through
        """)
    func transactions() throws {
        let db = try SQLiteDatabase(path: ":memory:")
        try db.execute("CREATE TABLE t (x INTEGER)")
        let value = try db.transaction {
            try db.run("INSERT INTO t VALUES (1)")
            return "done"
        }
        #expect(value == "done")

        struct Abort: Error, Equatable { let reason: String }
        let error = #expect(throws: Abort.self) {
            try db.transaction(.deferred) {
                try db.run("INSERT INTO t VALUES (2)")
                try db.run("INSERT INTO t VALUES (3)")
                throw Abort(reason: "changed my mind")
            }
        }
        #expect(error == Abort(reason: "changed my mind"))
        #expect(!db.isInTransaction)
        #expect(try db.query("SELECT x FROM t").map { $0.int64(0) } == [1])

        // An SQL error inside the body rolls back as well.
        #expect(throws: SQLiteError.self) {
            try db.transaction(.exclusive) {
                try db.run("INSERT INTO t VALUES (4)")
                try db.run("INSERT INTO nope VALUES (5)")
            }
        }
        #expect(try db.query("SELECT count(*) FROM t").first?.int64(0) == 1)
    }

    @Test(
        """
        BEGIN IMMEDIATE on a second connection fails busy after the busy timeout while the first holds it, then \
        succeeds
        """)
    func busyBetweenConnections() throws {
        let path = dir + "/shared.db"
        let first = try SQLiteDatabase(path: path)
        try first.execute("CREATE TABLE t (x INTEGER)")
        let second = try SQLiteDatabase(path: path, busyTimeoutMilliseconds: 100)

        try first.execute("BEGIN IMMEDIATE")
        try first.run("INSERT INTO t VALUES (1)")
        let start = ContinuousClock.now
        let thrown = #expect(throws: SQLiteError.self) {
            try second.transaction { try second.run("INSERT INTO t VALUES (2)") }
        }
        let error = try #require(thrown)
        let waited = ContinuousClock.now - start
        #expect(error.isBusy)
        #expect(error.resultCode == SQLITE_BUSY)
        #expect(error.starlineError.code == .storage)
        #expect(error.starlineError.retryable)
        #expect(waited >= .milliseconds(90))
        #expect(waited < .seconds(5))
        // Readers are not blocked by the writer in WAL mode, and see the last committed state.
        #expect(try second.query("SELECT count(*) FROM t").first?.int64(0) == 0)

        try first.execute("COMMIT")
        try second.transaction { try second.run("INSERT INTO t VALUES (2)") }
        #expect(try first.query("SELECT x FROM t ORDER BY x").map { $0.int64(0) } == [1, 2])
    }

    @Test("a writer on another thread waits for the lock within its busy timeout")
    func busyWaitSucceedsOnThread() throws {
        let path = dir + "/shared.db"
        let first = try SQLiteDatabase(path: path)
        try first.execute("CREATE TABLE t (x INTEGER)")
        try first.execute("BEGIN IMMEDIATE")

        let outcome = Locked<String?>(nil)
        let writing = Locked(false)
        let writer = startThread {
            do {
                let second = try SQLiteDatabase(path: path, busyTimeoutMilliseconds: 10_000)
                writing.withLock { $0 = true }
                let start = ContinuousClock.now
                try second.transaction { try second.run("INSERT INTO t VALUES (2)") }
                let waited = ContinuousClock.now - start
                outcome.withLock { $0 = waited >= .milliseconds(50) ? "waited" : "too fast: \(waited)" }
            } catch {
                outcome.withLock { $0 = "failed: \(error)" }
            }
        }
        // The lock is held 100 ms past the moment the writer starts to wait for it.
        while !writing.withLock({ $0 }) { usleep(1_000) }
        usleep(100_000)
        try first.run("INSERT INTO t VALUES (1)")
        try first.execute("COMMIT")
        writer.wait()
        #expect(outcome.withLock { $0 } == "waited")
        #expect(try first.query("SELECT x FROM t ORDER BY x").map { $0.int64(0) } == [1, 2])
    }

    @Test("one connection shared by threads: transactions do not interleave")
    func sharedConnection() throws {
        let db = try SQLiteDatabase(path: dir + "/counter.db")
        try db.execute("CREATE TABLE c (n INTEGER); INSERT INTO c VALUES (0)")
        let failures = Locked<[String]>([])
        let threads = (0..<4).map { _ in
            startThread {
                for _ in 0..<25 {
                    do {
                        try db.transaction {
                            let n = try db.query("SELECT n FROM c").first?.int64("n") ?? -1000
                            try db.run("UPDATE c SET n = ?", [.integer(n + 1)])
                        }
                    } catch {
                        failures.withLock { $0.append("\(error)") }
                    }
                }
            }
        }
        for thread in threads { thread.wait() }
        #expect(failures.withLock { $0 } == [])
        #expect(try db.query("SELECT n FROM c").first?.int64(0) == 100)
    }

    @Test("userVersion persists across reopening")
    func userVersion() throws {
        let path = dir + "/versioned.db"
        do {
            let db = try SQLiteDatabase(path: path)
            #expect(try db.userVersion == 0)
            try db.setUserVersion(3)
            #expect(try db.userVersion == 3)
        }
        let reopened = try SQLiteDatabase(path: path)
        #expect(try reopened.userVersion == 3)
    }

    @Test("opening inside a missing directory or at a directory path fails with SQLiteError → STORAGE_ERROR")
    func openFailures() throws {
        let missing = #expect(throws: SQLiteError.self) {
            try SQLiteDatabase(path: dir + "/no-such-dir/x.db")
        }
        #expect(missing?.resultCode == SQLITE_CANTOPEN)
        #expect(missing?.starlineError.code == .storage)
        #expect(missing?.starlineError.details?["sqliteCode"] != nil)

        let directory = #expect(throws: SQLiteError.self) { try SQLiteDatabase(path: dir) }
        #expect(directory?.starlineError.code == .storage)
        #expect(try directoryEntries(dir) == [])

        let readOnlyMissing = #expect(throws: SQLiteError.self) {
            try SQLiteDatabase(path: dir + "/absent.db", readOnly: true)
        }
        #expect(readOnlyMissing?.resultCode == SQLITE_CANTOPEN)
        #expect(try directoryEntries(dir) == [])
    }

    @Test("a file that is not a database is rejected at open")
    func notADatabase() throws {
        let path = dir + "/garbage.db"
        try createFile(path, String(repeating: "this is not an sqlite database ", count: 40), mode: 0o600)
        let error = #expect(throws: SQLiteError.self) { try SQLiteDatabase(path: path) }
        #expect(error?.resultCode == 26)  // SQLITE_NOTADB
    }
}
