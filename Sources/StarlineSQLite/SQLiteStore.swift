import Glibc
import StarlineCore

/// A SQLite database file as the suite's stores use it (docs/architecture.md): the session store, the chat
/// cache and outbox. It owns the connection and adds what every store needs around it:
///
/// - private files: the database's directory (and the lock file's) is created 0700 and refused when
///   another user owns it or group/others may write it; the database (created 0600) and the caller's
///   other secret files are refused when group/world-accessible (INSECURE_PERMISSIONS, exit 10), and
///   they and the lock file when they are symbolic links (STORAGE_ERROR; never followed);
/// - a lock file and `withTransaction`, which runs its body under that file's `flock` inside one
///   `BEGIN IMMEDIATE` transaction (WAL, busy timeout);
/// - numbered migrations (`SQLiteMigrator`): applied on open, a newer schema refused;
/// - storage-fault injection given by the caller (`faults`), never read from the environment here.
///
/// Durability is `SQLiteDatabase`'s: commits with `synchronous=FULL`, `withTransaction(durable: false)`
/// for bookkeeping a power cut may lose, and by default no checkpoint at close — the short-lived tools
/// leave the WAL as it is and a later open empties it once it passes 512 KB (see `SQLiteDatabase.init`).
///
/// `@unchecked Sendable`: the stored properties are immutable, `SQLiteDatabase` is thread-safe, and
/// `withTransaction` opens its own lock file description per call, so threads can share one instance or
/// use one each.
public final class SQLiteStore: @unchecked Sendable {
    /// The database file.
    public let path: String
    /// The lock file of `withTransaction` (`<path>.lock` unless the caller chose another).
    public let lockPath: String
    /// How messages name the store: "the session store" gives "cannot open the session store: …".
    public let name: String
    /// TEST-ONLY faults to inject, as the caller gave them (see `StorageFaults`).
    public let faults: StorageFaults
    /// The connection. Reads that need no lock may use it directly (a WAL reader sees the last commit);
    /// every change goes through `withTransaction`.
    public let database: SQLiteDatabase
    /// The schema version after opening: the newest migration's (an older database was migrated to it, a
    /// newer one refused).
    public let schemaVersion: Int32

    /// The knobs of the connection.
    public struct Options: Sendable {
        /// How long SQLite waits for another process's write lock before SQLITE_BUSY (STORAGE_ERROR, retryable).
        public var busyTimeoutMilliseconds: Int32
        /// False (the default) for short-lived processes: see `SQLiteDatabase.init(checkpointOnClose:)`.
        public var checkpointOnClose: Bool

        public init(busyTimeoutMilliseconds: Int32 = 5000, checkpointOnClose: Bool = false) {
            self.busyTimeoutMilliseconds = busyTimeoutMilliseconds
            self.checkpointOnClose = checkpointOnClose
        }
    }

    /// Opens (creating when missing) the database at `path`, checks its files and applies `migrations`.
    ///
    /// `privateFiles` are other files of the store that hold secrets (a key beside the database): checked
    /// with it, before anything is opened. A missing file is fine for all of them. STORAGE_ERRORs say
    /// "cannot open <name>: …" (a directory in the database's place, a file that is not a database, a
    /// newer schema); INSECURE_PERMISSIONS passes unchanged.
    public init(
        path: String, lockPath: String? = nil, name: String = "the database", migrations: [SQLiteMigration],
        privateFiles: [String] = [], faults: StorageFaults = StorageFaults(), options: Options = Options()
    )
        throws(StarlineError)
    {
        self.path = path
        self.lockPath = lockPath ?? FileLock.lockPath(for: path)
        self.name = name
        self.faults = faults
        do {
            let directory = Self.directory(of: path)
            try PrivateFiles.ensurePrivateDirectory(directory)
            let lockDirectory = Self.directory(of: self.lockPath)
            if lockDirectory != directory { try PrivateFiles.ensurePrivateDirectory(lockDirectory) }
            // The store's own files are never symbolic links; the directories above them may be (a state
            // directory kept elsewhere by a dotfile manager is the user's choice, and checked above).
            for file in [path] + privateFiles { try PrivateFiles.checkPrivate(file, followLinks: false, what: "store file") }
        } catch {
            throw Self.openFailure(name, error)
        }
        do {
            database = try SQLiteDatabase(
                path: path, busyTimeoutMilliseconds: options.busyTimeoutMilliseconds,
                checkpointOnClose: options.checkpointOnClose, followLinks: false)
        } catch {
            throw Self.openFailure(name, path: path, error)
        }
        let migrator = SQLiteMigrator(migrations)
        try migrator.migrate(database, name: name)
        schemaVersion = migrator.latestVersion
    }

    /// Runs `body` holding the exclusive `flock` on `lockPath` inside one SQLite `BEGIN IMMEDIATE`
    /// transaction. Everything the body changes commits together (durably unless `durable: false`, see
    /// `SQLiteDatabase.transaction`), or — when it throws — not at all; the body's error comes through
    /// unchanged, and SQLite failures of the transaction itself become STORAGE_ERROR.
    ///
    /// The flock waits as long as another holder keeps it: keep bodies short (no network I/O). Writers that
    /// use other lock files on the same database wait for each other through SQLite's write lock, up to the
    /// busy timeout. Calls do not nest: a transaction inside another on the same thread and database file
    /// (any instance, any lock file) would wait for itself, so it throws INTERNAL instead.
    public func withTransaction<T>(durable: Bool = true, _ body: (SQLiteDatabase) throws -> T) throws -> T {
        let entry = ActiveTransaction(thread: pthread_self(), path: path)
        guard Self.active.withLock({ $0.insert(entry).inserted }) else {
            throw StarlineError(
                .internalError, "transactions on \(path) cannot be nested",
                details: .object([("path", .string(path))]))
        }
        defer { Self.active.withLock { _ = $0.remove(entry) } }
        let lock = try FileLock(path: lockPath)
        try lock.lock()
        defer { lock.unlock() }
        do {
            return try database.transaction(.immediate, durable: durable) { try body(database) }
        } catch let error as SQLiteError {
            throw error.starlineError
        }
    }

    /// True while this thread is inside a `withTransaction` body of any store on this database file.
    public var isInTransactionOnCurrentThread: Bool {
        Self.active.withLock { $0.contains(ActiveTransaction(thread: pthread_self(), path: path)) }
    }

    /// Throws the injected STORAGE_ERROR "cannot <what>: injected storage fault (…)" when the caller asked
    /// for a `kind` fault; call it before the operation changes anything.
    public func checkFault(_ kind: StorageFaults.Kind, _ what: String) throws(StarlineError) {
        try faults.check(kind, what)
    }

    // MARK: - Errors

    /// A STORAGE_ERROR prefixed "cannot open <name>: " (the store cannot be read: the "locked" state of a
    /// session store, S17). Other codes (INSECURE_PERMISSIONS) and errors already prefixed pass unchanged.
    public static func openFailure(_ name: String, _ error: StarlineError) -> StarlineError {
        let prefix = "cannot open \(name)"
        guard error.code == .storage, !error.message.hasPrefix(prefix) else { return error }
        var wrapped = error
        wrapped.message = prefix + ": " + error.message
        return wrapped
    }

    /// STORAGE_ERROR "cannot open <name>: <path>: <SQLite message>", retryable when the database was busy.
    public static func openFailure(_ name: String, path: String, _ error: SQLiteError) -> StarlineError {
        StarlineError(
            .storage, "cannot open \(name): \(path): \(error.message)", retryable: error.isBusy,
            details: .object([
                ("path", .string(path)),
                ("sqliteCode", .int(Int64(error.extendedResultCode))),
                ("sqliteMessage", .string(error.message))
            ]))
    }

    // MARK: - Helpers

    /// Which threads of this process are inside a `withTransaction` body, per database file.
    private struct ActiveTransaction: Hashable {
        var thread: pthread_t
        var path: String
    }

    private static let active = Locked<Set<ActiveTransaction>>([])

    /// The directory part of `path` ("." for a bare file name, "/" for a file in the root).
    public static func directory(of path: String) -> String {
        guard let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) else { return "." }
        if slash == path.utf8.startIndex { return "/" }
        return String(path[..<slash])
    }
}
