import Glibc
import StarlineCore
import StarlineCrypto

/// The last manifest counter seen on this machine, and the header the vault had at that counter, kept
/// outside the vault (`<state>/memory/pin`, 0600): a whole vault put back from an older copy has a lower
/// counter than the pin, and opening it is ROLLBACK_DETECTED until `MemoryVault.acceptRollback` lowers the
/// pin; a header edited in `vault.db` (its checksum is unkeyed, so it can be recomputed) is not the one
/// the pin saw, which is how it is told from a wrong passphrase before — or instead of — deriving a key
/// from it (`headerProblem`, `failedUnlockProblem`).
///
/// The file is one line, `starline-memory-pin v2 <vault id hex> <counter> <header checksum hex>`, written
/// atomically under `<pin>.lock`, and only ever raised — except by `acceptRollback` and `create`. A pin of
/// another vault id means the vault at the path was replaced by a different one: reported the same way.
/// A `v1` pin (`starline-memory-pin v1 <vault id hex> <counter>`, before pins recorded the header) is read
/// as one without a header and rewritten as v2 by the next open or change, even at the same counter.
struct RollbackPin: Equatable {
    var vaultID: String
    var counter: UInt64
    /// `VaultHeader.checksum` of the header the vault had at `counter`; nil for a v1 pin.
    var headerChecksum: [UInt8]?

    init(vaultID: String, counter: UInt64, headerChecksum: [UInt8]?) {
        self.vaultID = vaultID
        self.counter = counter
        self.headerChecksum = headerChecksum
    }

    var line: String {
        guard let headerChecksum else { return "starline-memory-pin v1 \(vaultID) \(counter)\n" }
        return "starline-memory-pin v2 \(vaultID) \(counter) \(Hex.encode(headerChecksum))\n"
    }

    static func read(_ path: String) throws(StarlineError) -> RollbackPin? {
        guard let bytes = try AtomicFile.read(path, followLinks: false, what: "memory vault pin") else { return nil }
        let words = String(decoding: bytes, as: UTF8.self).split(whereSeparator: { $0 == " " || $0 == "\n" })
        if words.count == 4, words[0] == "starline-memory-pin", words[1] == "v1", let counter = UInt64(words[3]) {
            return RollbackPin(vaultID: String(words[2]), counter: counter, headerChecksum: nil)
        }
        guard words.count == 5, words[0] == "starline-memory-pin", words[1] == "v2", let counter = UInt64(words[3]),
            let checksum = Hex.decode(String(words[4])), checksum.count == VaultHeader.checksumBytes
        else {
            throw StarlineError(
                .corruptFile, "the memory vault pin \(path) is damaged; remove it to pin the vault again on its next open",
                details: .object([("path", .string(path))]))
        }
        return RollbackPin(vaultID: String(words[2]), counter: counter, headerChecksum: checksum)
    }

    /// Raises the pin to `pin` (or sets it, when `force`), under the pin's lock so two processes never write
    /// a lower counter over a higher one. At the same counter, only a pin without a header is rewritten (the
    /// upgrade of a v1 pin): the header at one counter is one header.
    static func raise(_ path: String, to pin: RollbackPin, force: Bool = false) throws(StarlineError) {
        let directory = AtomicFileDirectory.of(path)
        try PrivateFiles.ensurePrivateDirectory(directory)
        do {
            try FileLock.withLock(FileLock.lockPath(for: path)) { () throws in
                if !force, let old = try? read(path), old.vaultID == pin.vaultID,
                    old.counter > pin.counter || (old.counter == pin.counter && (old.headerChecksum != nil || pin.headerChecksum == nil))
                {
                    return
                }
                try AtomicFile.write(Array(pin.line.utf8), to: path, mode: 0o600)
            }
        } catch let error as StarlineError {
            throw error
        } catch {
            throw StarlineError(
                .storage, "cannot write the memory vault pin \(path): \(error)", details: .object([("path", .string(path))]))
        }
    }

    /// The problem with opening a vault of `vaultID` at `counter` given the pin, or nil when there is none.
    static func problem(_ pin: RollbackPin?, vaultID: String, counter: UInt64, path: String) -> VaultProblem? {
        guard let pin else { return nil }
        if pin.vaultID != vaultID {
            return VaultProblem(
                .rollback, subject: "pin",
                "the memory vault \(path) is not the one last opened on this machine (pinned vault \(pin.vaultID)): it was replaced; accept it explicitly if that was intended"
            )
        }
        if counter < pin.counter {
            return VaultProblem(
                .rollback, subject: "pin",
                "the memory vault \(path) was rolled back: its manifest counter is \(counter), but \(pin.counter) was seen on this machine; accept the rollback explicitly if you restored an older copy"
            )
        }
        return nil
    }

    // MARK: - The header against the pin

    /// Before any key is derived: the problem with `header` when the vault's manifest is still at the pinned
    /// counter (`counter`, its clear column) and the header is not the one the pin saw there. A header only
    /// changes in a change, and every change raises the counter, so at the same counter another header was
    /// edited into `vault.db` (or an older one put back) — VAULT_CORRUPT, never an Argon2id run with its
    /// parameters. The pin must be read before the snapshot the header and counter come from: it is raised
    /// after a commit, so a pin read later could be of a change the snapshot does not hold yet.
    ///
    /// Nil (the unlock decides, then `failedUnlockProblem`) when there is no pin, a v1 pin, a pin of another
    /// vault, or another counter: a higher one may carry a header changed by a change this machine has not
    /// pinned yet, a lower one is an older copy that `acceptRollback` may be about to accept.
    static func headerProblem(_ pin: RollbackPin?, header: VaultHeader, counter: UInt64?, path: String) -> VaultProblem? {
        guard let pin, pin.vaultID == header.vaultIDText, let seen = pin.headerChecksum, let counter, counter == pin.counter,
            !Sodium.constantTimeEquals(seen, header.checksum)
        else { return nil }
        return VaultProblem(
            .headerMismatch, subject: "header",
            "the memory vault header in \(path) is not the one this machine saw at counter \(pin.counter), where the vault still is: it was edited (or an older header put back)"
        )
    }

    /// After the passphrase (or the agent's key) did not unlock `header`: the problem to report instead of
    /// WRONG_PASSPHRASE / WRONG_KEY when the header is not the one the pin saw — another vault's id, or
    /// another header checksum. Then the failure cannot be told from an edited header (a changed salt or
    /// limit derives another key, exactly as a wrong passphrase does), and an edited header must not read
    /// as a wrong passphrase: exit 12, saying what else it may be. Nil when the header is the pinned one (or
    /// nothing was pinned, or only by a v1 pin): then it was the passphrase.
    static func failedUnlockProblem(_ pin: RollbackPin?, header: VaultHeader, counter: UInt64?, path: String, credential: String)
        -> VaultProblem?
    {
        guard let pin else { return nil }
        if pin.vaultID != header.vaultIDText {
            return VaultProblem(
                .rollback, subject: "pin",
                "the memory vault \(path) is not the one last opened on this machine (pinned vault \(pin.vaultID)), and the \(credential) does not open it: it was replaced, or its header edited"
            )
        }
        guard let seen = pin.headerChecksum, !Sodium.constantTimeEquals(seen, header.checksum) else { return nil }
        let now = counter.map { "counter \($0)" } ?? "an unreadable counter"
        return VaultProblem(
            .headerMismatch, subject: "header",
            "the memory vault header in \(path) is not the one this machine saw at counter \(pin.counter) (the vault is at \(now)), and the \(credential) does not open it: the header was edited or put back from another copy — or, if the passphrase was changed on another machine, give the new one"
        )
    }
}

enum AtomicFileDirectory {
    /// The directory part of `path` ("." for a bare name).
    static func of(_ path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        let directory = String(path[..<slash])
        return directory.isEmpty ? "/" : directory
    }
}
