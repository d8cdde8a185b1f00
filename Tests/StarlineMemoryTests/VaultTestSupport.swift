import Foundation
import Glibc
import StarlineCore
import StarlineCrypto
import StarlineMemory
import StarlineSQLite
import StarlineTestSupport

/// A vault in a private temporary directory, with the cheapest Argon2id limits (tests only).
final class VaultFixture: @unchecked Sendable {
    let dir: String
    let location: VaultLocation

    init() throws {
        dir = try makeStorageTempDir(prefix: "starline-memory")
        location = VaultLocation(directory: dir + "/data/memory", pinPath: dir + "/state/memory/pin")
    }

    deinit { try? FileManager.default.removeItem(atPath: dir) }

    /// A copy of the vault's files as they are now (a backup a user may restore later).
    func backUp() throws -> String {
        let backup = dir + "/backup"
        try FileManager.default.copyItem(atPath: location.directory, toPath: backup)
        return backup
    }

    /// The vault's files replaced by those at `source` (a restored backup, another vault's files).
    func replaceFiles(with source: String) throws {
        try FileManager.default.removeItem(atPath: location.directory)
        try FileManager.default.copyItem(atPath: source, toPath: location.directory)
    }

    static func secret(_ text: String) -> SecretBytes { SecretBytes(copying: Array(text.utf8)) }
    var passphrase: SecretBytes { Self.secret("correct horse battery staple") }

    @discardableResult
    func create(faults: VaultFaults = VaultFaults()) throws -> MemoryVault {
        try MemoryVault.create(
            at: location, passphrase: passphrase, limits: .minimum, faults: faults, now: { Timestamp(seconds: 1_800_000_000) })
    }

    func open(faults: VaultFaults = VaultFaults()) throws -> MemoryVault {
        try MemoryVault.open(at: location, passphrase: passphrase, faults: faults)
    }

    /// A raw connection to `vault.db`, for tampering from outside.
    func database() throws -> SQLiteDatabase { try SQLiteDatabase(path: location.databasePath) }

    /// A readable descriptor holding `bytes` (a file, so any size works without a thread).
    func input(_ bytes: [UInt8]) throws -> Int32 {
        let path = dir + "/input-\(UUID().uuidString)"
        try AtomicFile.write(bytes, to: path)
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        precondition(fd >= 0)
        return fd
    }

    /// Runs `body` with a writable descriptor and returns what was written to it.
    func output(_ body: (Int32) throws -> Void) throws -> [UInt8] {
        let path = dir + "/output-\(UUID().uuidString)"
        let fd = Glibc.open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        precondition(fd >= 0)
        defer { close(fd) }
        try body(fd)
        return try AtomicFile.read(path) ?? []
    }

    func attachmentFiles() throws -> [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: location.attachmentsPath).sorted()) ?? []
    }

    /// Flips one bit of the file at `path`, `offset` bytes from its start (negative: from its end).
    func flipByte(_ path: String, at offset: Int) throws {
        var bytes = try AtomicFile.read(path)!
        let i = offset >= 0 ? offset : bytes.count + offset
        bytes[i] ^= 0x01
        try AtomicFile.write(bytes, to: path)
    }
}

/// Deterministic pseudo-random bytes (xorshift), so large attachments need no fixture files.
func patternBytes(_ count: Int, seed: UInt64 = 0x9E37_79B9_7F4A_7C15) -> [UInt8] {
    var x = seed
    return (0..<count).map { _ in
        x ^= x << 13; x ^= x >> 7; x ^= x << 17
        return UInt8(truncatingIfNeeded: x)
    }
}

/// The StarlineError a throwing expression threw, or nil.
func starlineError(_ body: () throws -> Void) -> StarlineError? {
    do { try body() } catch let error as StarlineError { return error } catch { return nil }
    return nil
}
