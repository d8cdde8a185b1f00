import Glibc
import StarlineCore

/// The last manifest counter seen on this machine, kept outside the vault (`<state>/memory/pin`, 0600):
/// a whole vault put back from an older copy has a lower counter than the pin, and opening it is
/// ROLLBACK_DETECTED until `MemoryVault.acceptRollback` lowers the pin.
///
/// The file is one line, `starline-memory-pin v1 <vault id hex> <counter>`, written atomically under
/// `<pin>.lock`, and only ever raised — except by `acceptRollback` and `create`. A pin of another vault id
/// means the vault at the path was replaced by a different one: reported the same way.
struct RollbackPin: Equatable {
    var vaultID: String
    var counter: UInt64

    static func read(_ path: String) throws(StarlineError) -> RollbackPin? {
        guard let bytes = try AtomicFile.read(path, followLinks: false, what: "memory vault pin") else { return nil }
        let words = String(decoding: bytes, as: UTF8.self).split(whereSeparator: { $0 == " " || $0 == "\n" })
        guard words.count == 4, words[0] == "starline-memory-pin", words[1] == "v1", let counter = UInt64(words[3]) else {
            throw StarlineError(.corruptFile, "the memory vault pin \(path) is damaged; remove it to pin the vault again on its next open",
                                details: .object([("path", .string(path))]))
        }
        return RollbackPin(vaultID: String(words[2]), counter: counter)
    }

    /// Raises the pin to `pin` (or sets it, when `force`), under the pin's lock so two processes never write
    /// a lower counter over a higher one.
    static func raise(_ path: String, to pin: RollbackPin, force: Bool = false) throws(StarlineError) {
        let directory = AtomicFileDirectory.of(path)
        try PrivateFiles.ensurePrivateDirectory(directory)
        do {
            try FileLock.withLock(FileLock.lockPath(for: path)) { () throws in
                if !force, let old = try? read(path), old.vaultID == pin.vaultID, old.counter >= pin.counter { return }
                try AtomicFile.write(Array("starline-memory-pin v1 \(pin.vaultID) \(pin.counter)\n".utf8), to: path, mode: 0o600)
            }
        } catch let error as StarlineError {
            throw error
        } catch {
            throw StarlineError(.storage, "cannot write the memory vault pin \(path): \(error)", details: .object([("path", .string(path))]))
        }
    }

    /// The problem with opening a vault of `vaultID` at `counter` given the pin, or nil when there is none.
    static func problem(_ pin: RollbackPin?, vaultID: String, counter: UInt64, path: String) -> VaultProblem? {
        guard let pin else { return nil }
        if pin.vaultID != vaultID {
            return VaultProblem(.rollback, subject: "pin",
                                "the memory vault \(path) is not the one last opened on this machine (pinned vault \(pin.vaultID)): it was replaced; accept it explicitly if that was intended")
        }
        if counter < pin.counter {
            return VaultProblem(.rollback, subject: "pin",
                                "the memory vault \(path) was rolled back: its manifest counter is \(counter), but \(pin.counter) was seen on this machine; accept the rollback explicitly if you restored an older copy")
        }
        return nil
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
