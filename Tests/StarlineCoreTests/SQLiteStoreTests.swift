import Foundation
import Glibc
import StarlineCore
import StarlineSQLite
import StarlineTestSupport
import Testing

/// The shared store type against real files in a private temporary directory: migrations, the newer-schema
/// refusal, rows by column name, private files, faults, and transactions under the lock file.
@Suite("SQLiteStore")
final class SQLiteStoreTests: Sendable {
    /// A fresh private directory per test (Swift Testing makes a new suite instance for each test).
    let dir: String
    init() throws { dir = try makeStorageTempDir(prefix: "starline-sqlite-store") }
    deinit { removeStorageTempDir(dir) }

    var path: String { dir + "/state/test.db" }

    func openStore(_ migrations: [SQLiteMigration], privateFiles: [String] = [], faults: StorageFaults = StorageFaults())
        throws(StarlineError) -> SQLiteStore
    {
        try SQLiteStore(path: path, name: "the test store", migrations: migrations, privateFiles: privateFiles, faults: faults)
    }

    /// A plain connection, for looking at the file from outside the store.
    func inspect() throws -> SQLiteDatabase { try SQLiteDatabase(path: path, readOnly: true) }

    func tables(_ db: SQLiteDatabase) throws -> [String] {
        try db.query("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").compactMap { $0.string("name") }
    }

    // MARK: - Migrations

    @Test("migrations run in order, each in its own transaction that also bumps user_version")
    func migrationsInOrder() throws {
        let log = Locked<[String]>([])
        let path = self.path
        func step(_ version: Int32, _ table: String) -> SQLiteMigration {
            SQLiteMigration(version: version, name: "create \(table)") { db in
                // Inside a transaction, and the previous migrations are committed: another connection sees
                // the previous version, not this one.
                let outside = try SQLiteDatabase(path: path, readOnly: true).userVersion
                let inside = try db.userVersion
                log.withLock { $0.append("\(version):\(db.isInTransaction):\(inside):\(outside)") }
                try db.execute("CREATE TABLE \(table) (x INTEGER)")
            }
        }
        let store = try openStore([step(1, "a"), step(2, "b"), step(5, "c")])
        #expect(log.withLock { $0 } == ["1:true:0:0", "2:true:1:1", "5:true:2:2"])
        #expect(store.schemaVersion == 5)
        #expect(try store.database.userVersion == 5)
        #expect(try tables(inspect()) == ["a", "b", "c"])

        // An older database gets only the migrations above its version.
        log.withLock { $0 = [] }
        _ = try openStore([step(1, "a"), step(2, "b"), step(5, "c"), step(6, "d")])
        #expect(log.withLock { $0 } == ["6:true:5:5"])
        #expect(try inspect().userVersion == 6)
    }

    @Test("SQL migrations run their statements; a failing one leaves the previous version and none of its schema")
    func failingMigration() throws {
        let first = SQLiteMigration(version: 1, name: "first", sql: "CREATE TABLE a (x INTEGER); CREATE INDEX a_x ON a (x)")
        let broken = SQLiteMigration(
            version: 2, name: "add b", sql: "CREATE TABLE b (y INTEGER); INSERT INTO a VALUES (1); CREATE TABLE c (")
        let error = #expect(throws: StarlineError.self) { _ = try self.openStore([first, broken]) }
        #expect(error?.code == .storage)
        #expect(error?.exitStatus == .storage)
        #expect(
            error?.message.hasPrefix("cannot open the test store: \(path): migration 2 (add b) failed: ") == true, "\(error?.message ?? "")"
        )
        #expect(error?.details?["migration"]?.intValue == 2)
        #expect(error?.retryable == false)

        let db = try inspect()
        #expect(try db.userVersion == 1)
        #expect(try tables(db) == ["a"])
        #expect(try db.queryFirst("SELECT count(*) AS n FROM a")?.int("n") == 0)
        #expect(try db.queryFirst("SELECT count(*) AS n FROM sqlite_master WHERE name = 'a_x'")?.int("n") == 1)

        // Fixed, it applies on the next open.
        let fixed = SQLiteMigration(version: 2, name: "add b", sql: "CREATE TABLE b (y INTEGER)")
        #expect(try openStore([first, fixed]).schemaVersion == 2)
        #expect(try tables(inspect()) == ["a", "b"])
    }

    @Test("reopening an up-to-date database runs no migration and writes nothing")
    func reopenIsNoOp() throws {
        let runs = Locked(0)
        let migrations = [
            SQLiteMigration(version: 1, name: "t") { db in
                runs.withLock { $0 += 1 }
                try db.execute("CREATE TABLE t (x INTEGER)")
            }
        ]
        do {
            let store = try openStore(migrations)
            try store.withTransaction { try $0.run("INSERT INTO t VALUES (1)") }
        }
        let wal = try AtomicFile.read(path + "-wal")
        let main = try AtomicFile.read(path)
        for _ in 0..<3 {
            let store = try openStore(migrations)
            #expect(store.schemaVersion == 1)
            #expect(try store.database.queryFirst("SELECT count(*) AS n FROM t")?.int("n") == 1)
        }
        #expect(runs.withLock { $0 } == 1)
        #expect(try AtomicFile.read(path) == main)
        #expect(try AtomicFile.read(path + "-wal") == wal)
    }

    @Test(
        """
        stores opened at once (threads here, processes alike) migrate once: the version is read again under the write \
        lock
        """)
    func concurrentOpen() throws {
        let runs = Locked(0)
        let migrations = [
            SQLiteMigration(version: 1, name: "t") { db in
                runs.withLock { $0 += 1 }
                try db.execute("CREATE TABLE t (x INTEGER)")
            },
            SQLiteMigration(version: 2, name: "u", sql: "CREATE TABLE u (y INTEGER)")
        ]
        let path = self.path
        // The file exists (in WAL mode) before the race: what races is the migration.
        _ = try openStore([])
        let failures = Locked<[String]>([])
        let threads = (0..<6).map { _ in
            startThread {
                do {
                    _ = try SQLiteStore(path: path, migrations: migrations)
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
        }
        for thread in threads { thread.wait() }
        #expect(failures.withLock { $0 } == [])
        #expect(runs.withLock { $0 } == 1)
        #expect(try inspect().userVersion == 2)
    }

    @Test("a database with a newer schema is refused, naming both versions, and left untouched")
    func newerSchemaRefused() throws {
        try PrivateFiles.ensureDirectory(dir + "/state")
        do {
            let db = try SQLiteDatabase(path: path)
            try db.execute("CREATE TABLE future (x INTEGER); INSERT INTO future VALUES (42)")
            try db.setUserVersion(7)
        }
        let before = try AtomicFile.read(path)
        let runs = Locked(0)
        let migrations = [1, 2].map { (version: Int32) in
            SQLiteMigration(version: version, name: "m\(version)") { _ in runs.withLock { $0 += 1 } }
        }
        let error = #expect(throws: StarlineError.self) { _ = try self.openStore(migrations) }
        #expect(error?.code == .storage)
        #expect(error?.exitStatus == .storage)
        #expect(error?.message == "cannot open the test store: \(path) was written by a newer Starline (schema 7, this one knows 2)")
        #expect(error?.details?["schemaVersion"]?.intValue == 7)
        #expect(error?.details?["knownSchemaVersion"]?.intValue == 2)
        #expect(runs.withLock { $0 } == 0)
        #expect(try AtomicFile.read(path) == before)
        let db = try inspect()
        #expect(try db.userVersion == 7)
        #expect(try tables(db) == ["future"])
    }

    @Test("migrations numbered out of order stop the program (a programming error)")
    func misnumberedMigrations() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = SQLiteMigrator([
                SQLiteMigration(version: 2, name: "second", sql: ""),
                SQLiteMigration(version: 1, name: "first", sql: "")
            ])
        }
        let stderr = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(stderr.contains("migration 1 (first) must be numbered above 2"), "\(stderr)")
    }

    // MARK: - Rows by column name

    @Test("rows are read by column name: typed getters, NULL and other types as nil, case-insensitive names")
    func rowsByName() throws {
        let store = try openStore([
            SQLiteMigration(version: 1, name: "t", sql: "CREATE TABLE t (id INTEGER, name TEXT, data BLOB, note TEXT)")
        ])
        try store.withTransaction { db in
            try db.run("INSERT INTO t (id, name, data, note) VALUES (?, ?, ?, ?)", [.integer(7), .text("seven"), .blob([0, 7]), .null])
        }
        let row = try #require(try store.database.queryFirst("SELECT note, data, name, id FROM t"))
        #expect(row.int64("id") == 7)
        #expect(row.int("ID") == 7)
        #expect(row.string("name") == "seven")
        #expect(row.blob("data") == [0, 7])
        #expect(row.string("note") == nil)
        #expect(row.isNull("note"))
        #expect(row.string("id") == nil)  // another storage class
        #expect(row.value("name") == .text("seven"))
        // The probes answer nil instead.
        #expect(row["missing"] == nil)
        #expect(row.index(of: "missing") == nil)
    }

    @Test("reading a column the row does not have stops the program, naming the column and the row's columns")
    func unknownColumnIsLoud() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let row = SQLiteRow(columnNames: ["session_id", "created_at"], values: [.text("s"), .integer(1)])
            _ = row.string("sesion_id")
        }
        let stderr = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(stderr.contains("SQLiteRow has no column named 'sesion_id' (columns: session_id, created_at)"), "\(stderr)")
    }

    // MARK: - Private files

    @Test("the directory is created 0700, the database and lock file 0600")
    func createsPrivateFiles() throws {
        let store = try openStore([])
        try store.withTransaction { _ in }
        #expect(permissionBits(dir + "/state") == 0o700)
        #expect(permissionBits(path) == 0o600)
        #expect(store.lockPath == path + ".lock")
        #expect(permissionBits(store.lockPath) == 0o600)
    }

    @Test(
        "a group- or world-readable database or private file is refused (INSECURE_PERMISSIONS, exit 10)",
        arguments: ["test.db", "test.key"])
    func groupReadableFileRefused(file: String) throws {
        let key = dir + "/state/test.key"
        _ = try openStore([], privateFiles: [key])
        try AtomicFile.write([1, 2, 3], to: key, mode: 0o600)
        let target = dir + "/state/" + file
        #expect(chmod(target, 0o640) == 0)
        let error = #expect(throws: StarlineError.self) { _ = try self.openStore([], privateFiles: [key]) }
        #expect(error?.code == .insecurePermissions)
        #expect(error?.exitStatus == .storage)
        #expect(error?.message == "\(target) is accessible by group or others (mode 0640); run chmod 600 \(target)")
        #expect(chmod(target, 0o600) == 0)
        _ = try openStore([], privateFiles: [key])
    }

    @Test("a directory writable by group or others, or owned by another user, is refused")
    func insecureDirectoryRefused() throws {
        let state = dir + "/state"
        _ = try openStore([])
        #expect(chmod(state, 0o770) == 0)
        let writable = #expect(throws: StarlineError.self) { _ = try self.openStore([]) }
        #expect(writable?.code == .insecurePermissions)
        #expect(writable?.exitStatus == .storage)
        #expect(writable?.message == "\(state) is writable by group or others (mode 0770); run chmod 700 \(state)")
        // Readable by others is fine: only who can replace the files matters.
        #expect(chmod(state, 0o755) == 0)
        _ = try openStore([])
        // Another owner: only root can make one.
        if geteuid() == 0 {
            #expect(chown(state, 65534, 65534) == 0)
            let foreign = #expect(throws: StarlineError.self) { _ = try self.openStore([]) }
            #expect(foreign?.code == .insecurePermissions)
            #expect(foreign?.message == "\(state) is owned by another user (uid 65534, not 0)")
            #expect(chown(state, 0, 0) == 0)
        }
        #expect(chmod(state, 0o700) == 0)
        _ = try openStore([])
    }

    @Test("a directory in the database's place is STORAGE_ERROR 'cannot open <name>: …'")
    func databaseIsDirectory() throws {
        try PrivateFiles.ensureDirectory(path)
        let error = #expect(throws: StarlineError.self) { _ = try self.openStore([]) }
        #expect(error?.code == .storage)
        #expect(error?.message == "cannot open the test store: \(path) is not a regular file")
    }

    // MARK: - Faults and transactions

    @Test("storage faults are what the caller passed in: checkFault throws only for those kinds")
    func faultsPassedIn() throws {
        #expect(try openStore([]).faults == StorageFaults())
        try openStore([]).checkFault(.write, "write the outbox")

        let store = try openStore([], faults: StorageFaults([.write, .marker]))
        #expect(store.faults.kinds == [.write, .marker])
        let error = #expect(throws: StarlineError.self) { try store.checkFault(.write, "write the outbox") }
        #expect(error?.code == .storage)
        #expect(error?.exitStatus == .storage)
        #expect(error?.message == "cannot write the outbox: injected storage fault (STARLINE_TEST_STORAGE_FAULT=write)")
        #expect(error?.details?["fault"]?.stringValue == "write")
        try store.checkFault(.read, "read the outbox")
        try store.checkFault(.delete, "delete the outbox")
    }

    @Test("withTransaction holds the lock file and commits, or rolls back and passes the body's error through")
    func transactions() throws {
        let store = try openStore([SQLiteMigration(version: 1, name: "t", sql: "CREATE TABLE t (x INTEGER)")])
        let other = try FileLock(path: store.lockPath)
        #expect(!store.isInTransactionOnCurrentThread)
        let seen = try store.withTransaction { db -> Bool in
            try db.run("INSERT INTO t VALUES (1)")
            #expect(store.isInTransactionOnCurrentThread)
            return try other.tryLock()
        }
        #expect(seen == false, "the lock file is held during the body")
        #expect(try other.tryLock())
        other.unlock()

        let error = #expect(throws: StarlineError.self) {
            try store.withTransaction { db in
                try db.run("INSERT INTO t VALUES (2)")
                throw StarlineError(.network, "offline")
            }
        }
        #expect(error?.code == .network)
        #expect(try store.database.query("SELECT x FROM t").compactMap { $0.int("x") } == [1])

        // Non-durable commits land too.
        try store.withTransaction(durable: false) { try $0.run("INSERT INTO t VALUES (3)") }
        #expect(try inspect().query("SELECT x FROM t ORDER BY x").compactMap { $0.int("x") } == [1, 3])
    }

    @Test("withTransaction does not nest on one thread and database (any instance), and works again afterwards")
    func noNesting() throws {
        let a = try openStore([])
        let b = try openStore([])
        let nested = #expect(throws: StarlineError.self) { try a.withTransaction { _ in try b.withTransaction { _ in } } }
        #expect(nested?.code == .internalError)
        #expect(nested?.message == "transactions on \(path) cannot be nested")
        #expect(!a.isInTransactionOnCurrentThread)
        try b.withTransaction { _ in }
        try a.withTransaction { _ in }
    }
}
