import Foundation
import Glibc
import StarlineCore
import StarlineCrypto
@testable import StarlineMemory
import StarlineSQLite
import StarlineTestSupport
import Testing

/// A header edited by someone who can write `vault.db` — and recompute its unkeyed checksum: limits that
/// would run Argon2id for hours or allocate 16 GB are refused before anything is derived, and an edited
/// salt, limit, epoch or vault id is corruption (exit 12), never a wrong passphrase (exit 13), while the
/// pin outside the vault saw the real header. A wrong passphrase on an untouched vault stays exit 13.
@Suite("Memory vault: stored Argon2id limits are capped, an edited header is not a wrong passphrase")
final class VaultHeaderLimitTests: @unchecked Sendable {
    let fixture: VaultFixture
    init() throws { fixture = try VaultFixture() }

    var wrong: SecretBytes { VaultFixture.secret("not the passphrase") }

    /// Rewrites the stored header through `change`, with its checksum recomputed: what anyone with write
    /// access to the file can do.
    static func editHeader(_ databasePath: String, _ change: (inout VaultHeader) -> Void) throws {
        let db = try SQLiteDatabase(path: databasePath)
        let bytes = try #require(try db.queryFirst("SELECT bytes FROM vault_header WHERE id = 1")?.blob("bytes"))
        var header = try VaultHeader.decode(bytes, path: databasePath)
        change(&header)
        try db.run("UPDATE vault_header SET bytes = ? WHERE id = 1", [.blob(header.encoded())])
    }

    func editHeader(_ change: (inout VaultHeader) -> Void) throws { try Self.editHeader(fixture.location.databasePath, change) }

    func openError(_ passphrase: SecretBytes? = nil) -> StarlineError? {
        starlineError { _ = try MemoryVault.open(at: fixture.location, passphrase: passphrase ?? fixture.passphrase) }
    }

    @Test(
        """
        W2 limits above the maxima (opslimit 9, memlimit 1 GiB + 1 KiB) or below libsodium's least are VAULT_CORRUPT \
        naming the field and the bound, before any derivation
        """)
    func limitsBeyondTheMaximaAreCorruption() throws {
        try fixture.create().add(NoteDraft(body: "x"))
        let db = try fixture.database()
        let original = try #require(try db.queryFirst("SELECT bytes FROM vault_header")?.value("bytes"))
        let cases: [(UInt64, Int, String, String, Int64)] = [
            (9, 8192, "opslimit", "maximum", 8),
            (1, (1 << 30) + 1024, "memlimit", "maximum", 1 << 30),
            (0, 8192, "opslimit", "minimum", 1),
            (1, 4096, "memlimit", "minimum", 8192)
        ]
        for (ops, mem, field, bound, value) in cases {
            try editHeader { $0.limits = Argon2id.Limits(opsLimit: ops, memLimit: mem) }
            for error in [openError(), openError(wrong), starlineError { _ = try MemoryVault.vaultID(at: fixture.location) }] {
                #expect(error?.code == .vaultCorrupt, "\(field) \(ops)/\(mem)")
                #expect(error?.exitStatus == .data)
                #expect(error?.details?["part"]?.stringValue == "header")
                #expect(error?.details?["field"]?.stringValue == field)
                #expect(error?.details?[bound]?.intValue == value)
            }
            try db.run("UPDATE vault_header SET bytes = ?", [original])
        }
        #expect(try fixture.open().list().count == 1)
    }

    @Test(
        """
        W2 the maxima admit every level the tool and the library offer; create and changePassphrase refuse limits \
        beyond them (USAGE, nothing written)
        """)
    func writersStayWithinTheMaxima() throws {
        for level in [Argon2id.Limits.minimum, .interactive, .moderate, .sensitive] {
            #expect(VaultHeader.limitViolation(level) == nil)
        }
        let tooCostly = Argon2id.Limits(opsLimit: 9, memLimit: 8192)
        let created = starlineError { _ = try MemoryVault.create(at: fixture.location, passphrase: fixture.passphrase, limits: tooCostly) }
        #expect(created?.code == .usage)
        #expect(created?.details?["field"]?.stringValue == "opslimit")
        #expect(starlineError { _ = try fixture.open() }?.code == .vaultNotFound)
        let vault = try fixture.create()
        let changed = starlineError {
            try vault.changePassphrase(
                current: fixture.passphrase, new: VaultFixture.secret("new"), limits: Argon2id.Limits(opsLimit: 1, memLimit: 2 << 30))
        }
        #expect(changed?.code == .usage)
        #expect(changed?.details?["field"]?.stringValue == "memlimit")
        #expect(try fixture.open().limits == .minimum)
    }

    @Test(
        """
        W2 salt, limits, epoch or key check edited within the maxima, with the pin present: VAULT_CORRUPT \
        headerMismatch (12), with the right passphrase, a wrong one and the agent's key — not 13
        """)
    func editedHeaderIsNotAWrongPassphrase() throws {
        let vault = try fixture.create()
        try vault.add(NoteDraft(body: "x"))
        let dataKey = SecretBytes(copying: vault.dataKey.copyBytes())
        let db = try fixture.database()
        let original = try #require(try db.queryFirst("SELECT bytes FROM vault_header")?.value("bytes"))
        let edits: [(String, (inout VaultHeader) -> Void)] = [
            ("salt", { $0.salt = Sodium.randomBytes(Argon2id.saltBytes) }),
            ("opslimit", { $0.limits.opsLimit = 2 }),
            ("memlimit", { $0.limits.memLimit = 16 << 10 }),
            ("epoch", { $0.epoch = 2 }),
            ("key check", { $0.keyCheck = Sodium.randomBytes(32) })
        ]
        for (label, edit) in edits {
            try editHeader(edit)
            for error in [openError(), openError(wrong), starlineError { _ = try MemoryVault.open(at: fixture.location, dataKey: dataKey) }]
            {
                #expect(error?.code == .vaultCorrupt, "\(label)")
                #expect(error?.exitStatus == .data, "\(label)")
                #expect(error?.details?["problem"]?.stringValue == "headerMismatch", "\(label)")
            }
            try db.run("UPDATE vault_header SET bytes = ?", [original])
        }
        #expect(openError(wrong)?.code == .wrongPassphrase)
        #expect(try fixture.open().list().count == 1)
    }

    @Test(
        """
        W2 an edited header with the manifest's clear counter moved on (so the pin cannot vouch before derivation) is \
        still 12 once the key does not unwrap
        """)
    func editedHeaderWithCounterMovedOn() throws {
        try fixture.create().add(NoteDraft(body: "x"))
        let db = try fixture.database()
        try editHeader { $0.salt = Sodium.randomBytes(Argon2id.saltBytes) }
        try db.run("UPDATE manifest SET counter = counter + 1")
        for passphrase in [fixture.passphrase, wrong] {
            let error = openError(passphrase)
            #expect(error?.code == .vaultCorrupt)
            #expect(error?.details?["problem"]?.stringValue == "headerMismatch")
            #expect(error?.message.contains("does not open it") == true)
        }
        try db.run("UPDATE manifest SET counter = counter - 2")
        #expect(openError(wrong)?.exitStatus == .data, "a lowered counter too")
    }

    @Test("W2 an edited vault id is 12 (not the pinned vault), whatever the passphrase")
    func editedVaultIDIsNotAWrongPassphrase() throws {
        try fixture.create()
        try editHeader { $0.vaultID = Sodium.randomBytes(16) }
        #expect(openError()?.code == .rollbackDetected)
        #expect(openError(wrong)?.code == .rollbackDetected)
    }

    @Test(
        """
        W2 an untouched vault with a wrong passphrase is WRONG_PASSPHRASE (13) — also right after a passphrase change \
        and a rekey, and with no pin at all
        """)
    func wrongPassphraseIsStillThirteen() throws {
        let vault = try fixture.create()
        try vault.add(NoteDraft(body: "x"))
        #expect(openError(wrong)?.code == .wrongPassphrase)
        let new = VaultFixture.secret("new passphrase")
        try vault.changePassphrase(current: fixture.passphrase, new: new, limits: .minimum)
        #expect(openError(wrong)?.code == .wrongPassphrase)
        #expect(openError(fixture.passphrase)?.code == .wrongPassphrase, "the old passphrase is just wrong now")
        try vault.rekey(passphrase: new)
        #expect(openError(wrong)?.code == .wrongPassphrase)
        #expect(try MemoryVault.open(at: fixture.location, passphrase: new).list().count == 1)
        unlink(fixture.location.pinPath)
        #expect(openError(wrong)?.code == .wrongPassphrase)
    }

    @Test("W2 a v1 pin (no header) is read, rewritten as v2 by the next open; from then on an edited header is 12")
    func oldPinIsUpgraded() throws {
        let vault = try fixture.create()
        try vault.add(NoteDraft(body: "x"))
        let pin = fixture.location.pinPath
        try AtomicFile.write(Array("starline-memory-pin v1 \(vault.vaultID) \(vault.counter)\n".utf8), to: pin, mode: 0o600)
        try editHeader { $0.limits.opsLimit = 2 }
        // What a v1 pin cannot vouch for: the header it never saw (documented).
        #expect(openError(wrong)?.code == .wrongPassphrase)
        try editHeader { $0.limits.opsLimit = 1 }
        #expect(try fixture.open().list().count == 1)
        let line = String(decoding: try #require(try AtomicFile.read(pin)), as: UTF8.self)
        #expect(line.hasPrefix("starline-memory-pin v2 \(vault.vaultID) \(vault.counter) "))
        try editHeader { $0.limits.opsLimit = 2 }
        #expect(openError(wrong)?.details?["problem"]?.stringValue == "headerMismatch")
    }

    @Test(
        """
        W2 an older copy with its older header (before a passphrase change) is a rollback: it opens with its own \
        passphrase only to be refused, and acceptRollback takes it
        """)
    func olderCopyWithOlderHeaderCanStillBeAccepted() throws {
        let vault = try fixture.create()
        try vault.add(NoteDraft(body: "first"))
        let backup = try fixture.backUp()
        try vault.changePassphrase(current: fixture.passphrase, new: VaultFixture.secret("new"), limits: .minimum)
        try vault.add(NoteDraft(body: "second"))
        try fixture.replaceFiles(with: backup)
        #expect(openError()?.code == .rollbackDetected)
        #expect(openError(wrong)?.exitStatus == .data)
        #expect(try MemoryVault.acceptRollback(at: fixture.location, passphrase: fixture.passphrase).list().count == 1)
        #expect(try fixture.open().list().count == 1)
        #expect(openError(wrong)?.code == .wrongPassphrase)
    }

    @Test(
        """
        W2 sl-memory: opslimit 2^32-1 and memlimit 16 GiB with a recomputed checksum end by themselves, at once, with \
        exit 12 and a JSON error naming the field; a salt edit is 12, a wrong passphrase 13
        """)
    func builtToolRefusesCostlyHeader() throws {
        let home = TemporaryDirectory("memory-limits")
        let environment = ["STARLINE_MEMORY_PASSPHRASE": "correct horse battery staple", "XDG_RUNTIME_DIR": home.path]
        chmod(home.path, 0o700)
        func run(_ arguments: [String], passphrase: String? = nil) throws -> ToolRun {
            var env = environment
            if let passphrase { env["STARLINE_MEMORY_PASSPHRASE"] = passphrase }
            // Old code ran Argon2id for hours here: a deadline, and the process must have ended by itself.
            let tool = try Tools.spawn("sl-memory", arguments, home: home.path, environment: env)
            return tool.waitOrKill(seconds: 60)
        }
        let created = try run(["init"])
        #expect(created.status == 0, "\(created.stderrText)")
        #expect(try run(["add", "a note"]).status == 0)
        let database = home.path + "/starline/data/memory/vault.db"
        let original = try #require(try SQLiteDatabase(path: database).queryFirst("SELECT bytes FROM vault_header")?.value("bytes"))

        try Self.editHeader(database) { $0.limits = Argon2id.Limits(opsLimit: UInt64(UInt32.max), memLimit: 16 << 30) }
        let costly = try run(["list"])
        #expect(costly.killedBy == nil, "killed at the deadline: it was deriving")
        #expect(costly.status == 12)
        let error = try costly.error()
        #expect(error["error"]?["code"]?.stringValue == "VAULT_CORRUPT")
        #expect(error["error"]?["details"]?["field"]?.stringValue == "opslimit")
        #expect(error["error"]?["details"]?["maximum"]?.intValue == 8)
        #expect(costly.stdout.isEmpty)

        try SQLiteDatabase(path: database).run("UPDATE vault_header SET bytes = ?", [original])
        try Self.editHeader(database) { $0.salt = Sodium.randomBytes(Argon2id.saltBytes) }
        let salted = try run(["list"])
        #expect(salted.status == 12)
        #expect(salted.errorCode == "VAULT_CORRUPT")

        try SQLiteDatabase(path: database).run("UPDATE vault_header SET bytes = ?", [original])
        let wrongRun = try run(["list"], passphrase: "not it")
        #expect(wrongRun.status == 13)
        #expect(wrongRun.errorCode == "WRONG_PASSPHRASE")
        #expect(try run(["list"]).status == 0)
    }
}
