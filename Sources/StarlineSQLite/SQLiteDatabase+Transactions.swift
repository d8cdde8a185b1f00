import CSQLite
import Glibc
import StarlineCore

/// Transactions and their durability (`synchronous` per transaction, the scratch database's OFF).
extension SQLiteDatabase {
    /// Runs `body` in a transaction: BEGIN (IMMEDIATE by default), then COMMIT, or ROLLBACK when `body`
    /// throws, in which case the body's error is rethrown unchanged.
    ///
    /// `durable: false` commits without waiting for the disk (`synchronous=NORMAL` for this transaction):
    /// "A transaction committed in WAL mode with synchronous=NORMAL might roll back following a power loss
    /// or system crash", but the database stays consistent — in WAL mode only, so on a connection that is
    /// not in WAL mode the transaction is durable anyway. For bookkeeping a later run can redo (a
    /// verification timestamp), not for state a user relies on (a login, a logout).
    ///
    /// The connection lock is held for the whole transaction, so other threads sharing this connection wait
    /// instead of slipping statements into it. Transactions do not nest: BEGIN inside a transaction fails
    /// ("cannot start a transaction within a transaction").
    public func transaction<T>(_ kind: TransactionKind = .immediate, durable: Bool = true, _ body: () throws -> T) throws -> T {
        try withConnectionLock { () throws -> T in
            let relaxed = !durable && isWAL
            // `synchronous` is read when COMMIT syncs, and SQLite refuses to change it inside a transaction
            // ("Safety level may not be changed inside a transaction"): set it before BEGIN, every time it
            // differs — so a durable transaction never runs with a NORMAL that was not restored.
            try setSynchronous(full: !relaxed)
            let outcome = Result { () throws -> T in
                try execute("BEGIN \(kind.rawValue)")
                let result: T
                do {
                    result = try body()
                } catch {
                    rollbackIgnoringErrors()
                    throw error
                }
                do {
                    try execute("COMMIT")
                } catch {
                    // "If COMMIT fails with SQLITE_BUSY the transaction remains active"; we do not retry (the
                    // busy timeout already waited), so undo it rather than leave the connection inside a transaction.
                    rollbackIgnoringErrors()
                    throw error
                }
                return result
            }
            // Best effort: a failure here leaves `synchronousIsFull` false, and the next durable transaction
            // sets FULL before its BEGIN (or fails) — autocommit statements meanwhile would run with NORMAL.
            if relaxed { try? setSynchronous(full: true) }
            return try outcome.get()
        }
    }

    /// Never waits for the disk again (`PRAGMA synchronous=OFF`), for a scratch database whose contents
    /// nobody needs after a crash (the dev server's store without `--db`). "With synchronous OFF (0), SQLite
    /// continues without syncing as soon as it has handed data off to the operating system. If the application
    /// running SQLite crashes, the data will be safe, but the database might become corrupted if the operating
    /// system crashes or the computer loses power" — and such a file is thrown away at the next start anyway.
    public func disableSyncing() throws(SQLiteError) {
        try withConnectionLock { () throws(SQLiteError) in
            try execute("PRAGMA synchronous=OFF")
            syncingDisabled = true
        }
    }

    func setSynchronous(full: Bool) throws(SQLiteError) {
        guard !syncingDisabled, synchronousIsFull != full else { return }
        try execute(full ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL")
        synchronousIsFull = full
    }

    func rollbackIgnoringErrors() {
        // Some errors (SQLITE_FULL, SQLITE_IOERR, SQLITE_NOMEM, …) roll the transaction back automatically;
        // then there is nothing to roll back and ROLLBACK itself would fail.
        if sqlite3_get_autocommit(handle) == 0 {
            _ = sqlite3_exec(handle, "ROLLBACK", nil, nil, nil)
        }
    }
}
