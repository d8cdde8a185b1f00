import CSQLite
import Glibc
import StarlineCore

/// An open SQLite connection, closed when the object goes away.
///
/// Every connection is set up for the suite's multi-process use: WAL journal, `synchronous=FULL`,
/// foreign keys on, and a busy timeout so a second process waits for a writer instead of failing at once.
/// Write transactions should use `transaction(.immediate)` (the default), which takes the write lock up
/// front: a DEFERRED transaction that reads first and writes later can fail with SQLITE_BUSY without the
/// busy handler being of any help, because upgrading a read snapshot that another writer has moved past
/// is impossible.
///
/// Sharing one connection between threads is safe: it is opened with SQLITE_OPEN_FULLMUTEX ("serialized"
/// mode), and every method below holds the connection's own recursive mutex (`sqlite3_db_mutex`) across the
/// whole operation — a `transaction` body included — so error codes and messages are read before another
/// thread can make a call, and statements of two threads never interleave inside one transaction. That
/// is why the class can be `@unchecked Sendable`. `SQLiteStatement`s are not Sendable: use each on one thread.
public final class SQLiteDatabase: @unchecked Sendable {
    /// The `sqlite3*` handle. Non-nil for the whole life of the object.
    let handle: OpaquePointer
    public let path: String
    public let isReadOnly: Bool

    /// SQLITE_CANTOPEN_SYMLINK, `(SQLITE_CANTOPEN | (6<<8))` in sqlite3.h: a database path that is a symbolic
    /// link, refused.
    public static let cantOpenSymlink: Int32 = SQLITE_CANTOPEN | (6 << 8)

    /// Installed once, before the process's first connection (a `static let` runs once, thread-safely):
    /// SQLite's no-op fchown of the -wal and -shm files under root only when the owner differs, so that
    /// opening a database does not move its WAL's ctime (see `starline_fchown_if_needed` in CSQLite).
    private static let quietFchown: Int32 = starline_sqlite3_install_quiet_fchown()

    public enum TransactionKind: String, Sendable {
        case deferred = "DEFERRED"
        case immediate = "IMMEDIATE"
        case exclusive = "EXCLUSIVE"
    }

    /// Opens (and for read-write connections creates) the database at `path`; `":memory:"` opens a private
    /// in-memory database.
    ///
    /// A new database file is created with mode 0600 before SQLite sees it, so it never exists with wider
    /// permissions; SQLite creates the `-wal` and `-shm` files with the permissions of the main file.
    ///
    /// `checkpointOnClose: false` leaves the WAL as it is when the connection closes. By default the last
    /// connection to close checkpoints the WAL into the database and syncs both — for a short-lived command
    /// that is two or three more `fsync`s on every run. Without it, opening checkpoints and empties a WAL
    /// over 512 KB (see `truncateLargeWAL`), which keeps it bounded, and nothing is less durable: a
    /// committed transaction is in the WAL either way.
    ///
    /// `followLinks: false` refuses a symbolic link in the file's place (SQLITE_CANTOPEN_SYMLINK), for a
    /// read-write connection; links in the directories above it are followed.
    public init(
        path: String, readOnly: Bool = false, busyTimeoutMilliseconds: Int32 = 5000,
        checkpointOnClose: Bool = true, followLinks: Bool = true
    ) throws(SQLiteError) {
        self.path = path
        self.isReadOnly = readOnly
        let isFile = path != ":memory:" && !path.isEmpty
        if isFile && !readOnly {
            // O_CREAT without O_EXCL: an existing file is opened and left as it is.
            let fd = Glibc.open(path, O_CREAT | O_RDWR | O_CLOEXEC | (followLinks ? 0 : O_NOFOLLOW), 0o600)
            if fd < 0 {
                let e = errno
                let symlink = e == ELOOP && !followLinks
                throw SQLiteError(
                    extendedResultCode: symlink ? Self.cantOpenSymlink : SQLITE_CANTOPEN,
                    message: symlink
                        ? "database file \(path) is a symbolic link, which it never is; it was not followed: remove it"
                        : "cannot create database file \(path): \(String(cString: strerror(e)))")
            }
            Glibc.close(fd)
        }

        _ = Self.quietFchown
        var connection: OpaquePointer?
        // Not SQLITE_OPEN_NOFOLLOW ("the database filename is not allowed to contain a symbolic link", 3.31): it
        // refuses links in the directories too, which are the user's to choose, and with it 8 threads creating
        // one database at once intermittently got SQLITE_BUSY from the journal-mode switch (3 runs in 24 of
        // DeviceKeyTests' race, none in 16 without). The O_NOFOLLOW open above refuses a link in the file's
        // place; what is left is a race inside a directory the caller has checked to be the user's alone.
        let flags = SQLITE_OPEN_FULLMUTEX | (readOnly ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE))
        let rc = sqlite3_open_v2(path, &connection, flags, nil)
        guard rc == SQLITE_OK, let connection else {
            let error = SQLiteError(connection: connection, code: rc)
            // "Whether or not an error occurs when it is opened, resources associated with the database
            // connection handle should be released by passing it to sqlite3_close() when it is no longer
            // required." (sqlite3_open docs; closing a NULL handle is a harmless no-op.)
            sqlite3_close_v2(connection)
            throw error
        }
        self.handle = connection

        // From here on `deinit` runs if we throw, and closes the handle.
        sqlite3_busy_timeout(connection, busyTimeoutMilliseconds)
        if !checkpointOnClose {
            var applied: Int32 = 0
            _ = starline_sqlite3_db_config_int(connection, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, &applied)
        }
        // Acted on below, once the journal mode is known.
        let smallWAL = !checkpointOnClose
        // Reports "cannot open" errors with the extended codes (SQLITE_CANTOPEN_ISDIR, …) too.
        sqlite3_extended_result_codes(connection, 1)
        if isFile && !readOnly {
            // WAL is a property of the file and persists; readers of a WAL database need not set it.
            // A directory path or non-database file fails here, at the first real read. The pragma answers
            // the mode in effect: a file system without shared memory (some network mounts) stays in
            // another one, and then `transaction(durable: false)` must not relax syncing (see there).
            isWAL = try switchToWAL(busyTimeoutMilliseconds: busyTimeoutMilliseconds)
        }
        try execute("PRAGMA foreign_keys=ON; PRAGMA synchronous=FULL")
        if smallWAL && isWAL {
            truncateLargeWAL()
        }
    }

    /// `PRAGMA journal_mode=WAL`, retried while another connection holds the lock it needs. sqlite3_busy_handler:
    /// "If SQLite determines that invoking the busy handler could result in a deadlock, it will go ahead and
    /// return SQLITE_BUSY to the application instead of invoking the busy handler" — which the switch does
    /// when several connections open a new database at once (8 threads creating one store: 2 runs in 5).
    /// Retried every millisecond up to the busy timeout, as the handler would have waited; the answer is the
    /// mode in effect.
    private func switchToWAL(busyTimeoutMilliseconds: Int32) throws(SQLiteError) -> Bool {
        let deadline = MonotonicClock.nanoseconds() + UInt64(max(0, busyTimeoutMilliseconds)) * 1_000_000
        while true {
            do {
                return try query("PRAGMA journal_mode=WAL").first?.string(0)?.lowercased() == "wal"
            } catch  where error.isBusy && MonotonicClock.nanoseconds() < deadline {
                var pause = timespec(tv_sec: 0, tv_nsec: 1_000_000)
                nanosleep(&pause, nil)
            }
        }
    }

    /// Without checkpoints at close the WAL of short-lived processes only grows. Measured: one write per
    /// connection, closed without a checkpoint, gave a 2.4 MB WAL after 300 one-row commits even with
    /// wal_autocheckpoint=100 and journal_size_limit set (connections kept open stayed at ~420 KB: SQLite
    /// rewinds the log only at a later write of a connection). So once it passes 512 KB, opening runs a
    /// TRUNCATE checkpoint, which copies it back and empties it — one run in a few dozen pays its fsyncs.
    /// Best-effort: when another connection is busy (SQLITE_BUSY after the busy timeout) a later run does it.
    private func truncateLargeWAL() {
        var info = stat()
        guard stat(path + "-wal", &info) == 0, info.st_size > 512 * 1024 else { return }
        _ = sqlite3_exec(handle, "PRAGMA wal_checkpoint(TRUNCATE)", nil, nil, nil)
    }

    /// Compiled statements of `run`/`query`, by SQL text: preparing is a large part of a small query's
    /// cost. Raw handles (not `SQLiteStatement`s, which retain the database) so there is no cycle;
    /// used only under the connection lock, finalized in `deinit`.
    private var statementCache: [String: OpaquePointer] = [:]

    /// Whether the database is in WAL mode (read-write file connections; see `init`).
    var isWAL = false
    /// The connection's `synchronous` setting: FULL unless a non-durable transaction left NORMAL behind.
    /// Changed only under the connection lock.
    var synchronousIsFull = true
    /// Set by `disableSyncing`: `synchronous` stays OFF, whatever a transaction asks for.
    var syncingDisabled = false
    private static let statementCacheLimit = 128

    /// A statement for `sql` from the cache (compiled on first use); call with the connection lock held
    /// and do not let it escape the lock.
    private func cachedStatement(_ sql: String) throws(SQLiteError) -> SQLiteStatement {
        if let handle = statementCache[sql] { return SQLiteStatement(database: self, sql: sql, cachedHandle: handle) }
        guard statementCache.count < Self.statementCacheLimit else { return try prepare(sql) }
        let handle = try SQLiteStatement.compile(database: self, sql: sql)
        statementCache[sql] = handle
        return SQLiteStatement(database: self, sql: sql, cachedHandle: handle)
    }

    deinit {
        for handle in statementCache.values { sqlite3_finalize(handle) }
        // "If sqlite3_close_v2() is called with unfinalized prepared statements ... then the database
        // connection becomes an unusable 'zombie' which will automatically be deallocated when the last
        // prepared statement is finalized". Statements retain their database, so none is left here anyway.
        sqlite3_close_v2(handle)
    }

    /// Runs `body` holding the connection's recursive mutex.
    ///
    /// "The sqlite3_db_mutex() interface returns a pointer to the mutex object that serializes access to
    /// the database connection ... when the threading mode is Serialized." The mutex is recursive, so SQLite
    /// calls (which take it themselves) and nested wrapper calls inside `body` are fine.
    func withConnectionLock<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        let mutex = sqlite3_db_mutex(handle)
        sqlite3_mutex_enter(mutex)
        defer { sqlite3_mutex_leave(mutex) }
        return try body()
    }

    /// The error for a call that returned `code`; call with the connection lock held.
    func error(_ code: Int32, sql: String? = nil) -> SQLiteError {
        SQLiteError(connection: handle, code: code, sql: sql)
    }

    /// Runs one or more `;`-separated statements without parameters, discarding any rows.
    public func execute(_ sql: String) throws(SQLiteError) {
        try withConnectionLock { () throws(SQLiteError) in
            // With a NULL 5th argument sqlite3_exec allocates no message; we read sqlite3_errmsg instead,
            // under the lock.
            let rc = sqlite3_exec(handle, sql, nil, nil, nil)
            if rc != SQLITE_OK { throw error(rc, sql: sql) }
        }
    }

    /// Compiles one statement. Trailing text after the first statement (other than whitespace and
    /// comments) is an error: use `execute` for scripts.
    public func prepare(_ sql: String) throws(SQLiteError) -> SQLiteStatement {
        try SQLiteStatement(database: self, sql: sql)
    }

    /// Runs one statement with parameters, discarding any rows.
    public func run(_ sql: String, _ params: [SQLiteValue] = []) throws(SQLiteError) {
        try withConnectionLock { () throws(SQLiteError) in
            try cachedStatement(sql).run(params)
        }
    }

    /// Runs one statement with parameters and returns all its rows.
    public func query(_ sql: String, _ params: [SQLiteValue] = []) throws(SQLiteError) -> [SQLiteRow] {
        try withConnectionLock { () throws(SQLiteError) in
            try cachedStatement(sql).query(params)
        }
    }

    /// The first row, or nil when there is none.
    public func queryFirst(_ sql: String, _ params: [SQLiteValue] = []) throws(SQLiteError) -> SQLiteRow? {
        try query(sql, params).first
    }

    /// Rows changed by the most recent INSERT, UPDATE or DELETE on this connection.
    ///
    /// Only meaningful on the thread that ran the statement while no other thread uses the connection;
    /// prefer reading it inside a `transaction` body.
    public var changes: Int {
        withConnectionLock { Int(sqlite3_changes64(handle)) }
    }

    /// The rowid of the most recent successful INSERT on this connection (same caveat as `changes`).
    public var lastInsertRowID: Int64 {
        withConnectionLock { sqlite3_last_insert_rowid(handle) }
    }

    /// True while a transaction is open on this connection.
    public var isInTransaction: Bool {
        withConnectionLock { sqlite3_get_autocommit(handle) == 0 }
    }

    /// `PRAGMA user_version`: a 32-bit integer in the database header that SQLite itself never uses,
    /// kept for schema migrations. It persists in the file.
    public var userVersion: Int32 {
        get throws(SQLiteError) {
            let rows = try query("PRAGMA user_version")
            return Int32(truncatingIfNeeded: rows.first?.int64(0) ?? 0)
        }
    }

    public func setUserVersion(_ version: Int32) throws(SQLiteError) {
        // PRAGMA takes no bound parameters; the value is an integer we format ourselves.
        try execute("PRAGMA user_version = \(version)")
    }
}
