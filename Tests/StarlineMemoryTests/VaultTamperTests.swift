import Foundation
import StarlineCore
import StarlineCrypto
import StarlineMemory
import StarlineSQLite
import StarlineTestSupport
import Testing

/// Damage and tampering from outside: every kind is exit 12 naming what failed, never a wrong passphrase
/// and never an empty vault.
@Suite("Memory vault: corruption, tampering and rollback")
final class VaultTamperTests: @unchecked Sendable {
    let fixture: VaultFixture
    init() throws { fixture = try VaultFixture() }

    func sealed(_ db: SQLiteDatabase, _ id: String) throws -> [UInt8] {
        try db.queryFirst("SELECT sealed FROM records WHERE id = ?", [.text(id)])!.blob("sealed")!
    }

    @Test("W2 a flipped byte in the header is VAULT_CORRUPT (12) naming the header, not WRONG_PASSPHRASE (13)")
    func testW2DamagedHeaderIsCorruptionNotWrongPassphrase() throws {
        try fixture.create().add(NoteDraft(body: "x"))
        let db = try fixture.database()
        var header = try db.queryFirst("SELECT bytes FROM vault_header")!.blob("bytes")!
        // Every byte: magic, salt, limits, wrapped key, checksum — all read as corruption.
        for offset in [0, 12, 40, header.count / 2, header.count - 1] {
            header[offset] ^= 0x40
            try db.run("UPDATE vault_header SET bytes = ?", [.blob(header)])
            let error = starlineError { _ = try fixture.open() }
            #expect(error?.code == .vaultCorrupt, "offset \(offset)")
            #expect(error?.exitStatus == .data)
            #expect(error?.details?["part"]?.stringValue == "header")
            header[offset] ^= 0x40
        }
        try db.run("UPDATE vault_header SET bytes = ?", [.blob(Array(header.prefix(30)))])
        #expect(starlineError { _ = try fixture.open() }?.code == .vaultCorrupt)
        try db.run("UPDATE vault_header SET bytes = ?", [.blob(header)])
        #expect(try fixture.open().list().count == 1)
    }

    @Test("W2 a flipped or truncated record is VAULT_CORRUPT naming the record; verify lists it")
    func testW2DamagedRecordNamed() throws {
        let vault = try fixture.create()
        let good = try vault.add(NoteDraft(body: "good"))
        let bad = try vault.add(NoteDraft(title: "bad", body: "will be damaged"))
        let db = try fixture.database()
        var bytes = try sealed(db, bad.id)
        bytes[bytes.count / 2] ^= 1
        try db.run("UPDATE records SET sealed = ? WHERE id = ?", [.blob(bytes), .text(bad.id)])
        // The manifest covers ids and versions, so the vault opens; the record itself fails to authenticate.
        let reopened = try fixture.open()
        #expect(try reopened.show(good.id).body == "good")
        let error = starlineError { _ = try reopened.show(bad.id) }
        #expect(error?.code == .vaultCorrupt)
        #expect(error?.details?["record"]?.stringValue == bad.id)
        #expect(error?.message.contains(bad.id) == true)
        // A listing never silently drops it.
        #expect(starlineError { _ = try reopened.list() }?.details?["record"]?.stringValue == bad.id)
        try db.run("UPDATE records SET sealed = ? WHERE id = ?", [.blob(Array(bytes.prefix(10))), .text(bad.id)])
        #expect(starlineError { _ = try reopened.show(bad.id) }?.code == .vaultCorrupt)
        let report = try reopened.verify()
        #expect(report.problems.map(\.kind) == [.recordCorrupt])
        #expect(report.problems.first?.subject == bad.id)
    }

    @Test("W2 ciphertexts swapped between two rows, or an old version's ciphertext put back, do not authenticate")
    func testW2SwappedCiphertextsFail() throws {
        let vault = try fixture.create()
        let a = try vault.add(NoteDraft(body: "alpha"))
        let b = try vault.add(NoteDraft(body: "bravo"))
        let db = try fixture.database()
        let (sa, sb) = (try sealed(db, a.id), try sealed(db, b.id))
        try db.run("UPDATE records SET sealed = ? WHERE id = ?", [.blob(sb), .text(a.id)])
        try db.run("UPDATE records SET sealed = ? WHERE id = ?", [.blob(sa), .text(b.id)])
        let reopened = try fixture.open()
        #expect(starlineError { _ = try reopened.show(a.id) }?.details?["record"]?.stringValue == a.id)
        #expect(starlineError { _ = try reopened.show(b.id) }?.details?["record"]?.stringValue == b.id)
        // Put the right ones back, edit a, then restore its version-1 ciphertext under version 2.
        try db.run("UPDATE records SET sealed = ? WHERE id = ?", [.blob(sa), .text(a.id)])
        try db.run("UPDATE records SET sealed = ? WHERE id = ?", [.blob(sb), .text(b.id)])
        try fixture.open().edit(a.id, body: "alpha 2")
        try db.run("UPDATE records SET sealed = ? WHERE id = ?", [.blob(sa), .text(a.id)])
        #expect(starlineError { _ = try fixture.open().show(a.id) }?.code == .vaultCorrupt)
    }

    @Test("W2 a deleted record is detected on open, naming it")
    func testW2DeletedRecordDetected() throws {
        let vault = try fixture.create()
        let keep = try vault.add(NoteDraft(body: "keep"))
        let gone = try vault.add(NoteDraft(body: "gone"))
        let db = try fixture.database()
        try db.run("DELETE FROM records WHERE id = ?", [.text(gone.id)])
        let error = starlineError { _ = try fixture.open() }
        #expect(error?.code == .vaultCorrupt)
        #expect(error?.details?["record"]?.stringValue == gone.id)
        #expect(error?.details?["problem"]?.stringValue == "recordMissing")
        let report = try MemoryVault.verify(at: fixture.location, with: .passphrase(fixture.passphrase))
        // The deleted record, named; and the search tokens it left behind.
        #expect(report.problems.map(\.kind) == [.recordMissing, .indexMismatch])
        #expect(report.problems.first?.subject == gone.id)
        #expect(report.records == 1)
        _ = keep
    }

    @Test("W2 an older version of a record put back (row and all) is detected on open, naming it")
    func testW2OlderRecordDetected() throws {
        let vault = try fixture.create()
        let note = try vault.add(NoteDraft(body: "v1"))
        let db = try fixture.database()
        let old = try db.queryFirst("SELECT version, key_epoch, blobs, sealed FROM records WHERE id = ?", [.text(note.id)])!
        try vault.edit(note.id, body: "v2")
        try db.run("UPDATE records SET version = ?, sealed = ? WHERE id = ?", [old.value("version"), old.value("sealed"), .text(note.id)])
        let error = starlineError { _ = try fixture.open() }
        #expect(error?.code == .vaultCorrupt)
        #expect(error?.details?["record"]?.stringValue == note.id)
        #expect(error?.message.contains("older") == true)
        // A row added behind the manifest's back is named too.
        try db.run("UPDATE records SET version = 2 WHERE id = ?", [.text(note.id)])
        try db.run(
            """
            INSERT INTO records (id, kind, version, key_epoch, blobs, sealed) VALUES \
            ('00000000-0000-4000-8000-000000000000', 'note', 1, 1, x'', x'00')
            """)
        #expect(starlineError { _ = try fixture.open() }?.details?["problem"]?.stringValue == "recordUnexpected")
    }

    @Test("W2 a whole vault rolled back to an older copy is ROLLBACK_DETECTED (12) until accepted")
    func testW2WholeVaultRollbackDetected() throws {
        let vault = try fixture.create()
        try vault.add(NoteDraft(body: "first"))
        let backup = try fixture.backUp()
        try vault.add(NoteDraft(body: "second"))
        try fixture.replaceFiles(with: backup)

        let error = starlineError { _ = try fixture.open() }
        #expect(error?.code == .rollbackDetected)
        #expect(error?.exitStatus == .data)
        // Also by the agent's key, and again on every try until accepted.
        #expect(starlineError { _ = try MemoryVault.open(at: fixture.location, dataKey: vault.dataKey) }?.code == .rollbackDetected)
        #expect(try MemoryVault.verify(at: fixture.location, with: .dataKey(vault.dataKey)).problems.map(\.kind) == [.rollback])
        #expect(
            starlineError { _ = try MemoryVault.acceptRollback(at: fixture.location, passphrase: VaultFixture.secret("no")) }?.code
                == .wrongPassphrase)
        let accepted = try MemoryVault.acceptRollback(at: fixture.location, passphrase: fixture.passphrase)
        #expect(try accepted.list().map(\.title).count == 1)
        #expect(try fixture.open().list().count == 1)
    }

    @Test("W2 another vault put in the place of the pinned one is ROLLBACK_DETECTED")
    func testW2ReplacedVaultDetected() throws {
        try fixture.create()
        let other = try VaultFixture()
        try other.create().add(NoteDraft(body: "someone else's"))
        try fixture.replaceFiles(with: other.location.directory)
        #expect(starlineError { _ = try fixture.open() }?.code == .rollbackDetected)
    }

    @Test("W2 an older header put back after a passphrase change is detected (the old passphrase does not come back)")
    func testW2OldHeaderPutBackDetected() throws {
        let vault = try fixture.create()
        try vault.add(NoteDraft(body: "x"))
        let db = try fixture.database()
        let oldHeader = try db.queryFirst("SELECT bytes FROM vault_header")!.value("bytes")
        try vault.changePassphrase(current: fixture.passphrase, new: VaultFixture.secret("new"), limits: .minimum)
        try db.run("UPDATE vault_header SET bytes = ?", [oldHeader])
        let error = starlineError { _ = try fixture.open() }
        #expect(error?.code == .vaultCorrupt)
        #expect(error?.details?["problem"]?.stringValue == "headerMismatch")
    }

    @Test("W2 a damaged manifest is VAULT_CORRUPT naming the manifest")
    func testW2DamagedManifest() throws {
        try fixture.create().add(NoteDraft(body: "x"))
        let db = try fixture.database()
        var sealed = try db.queryFirst("SELECT sealed FROM manifest")!.blob("sealed")!
        sealed[30] ^= 1
        try db.run("UPDATE manifest SET sealed = ?", [.blob(sealed)])
        let error = starlineError { _ = try fixture.open() }
        #expect(error?.code == .vaultCorrupt)
        #expect(error?.details?["part"]?.stringValue == "manifest")
        sealed[30] ^= 1
        // The counter column alone changed (to dodge the pin): the seal binds it.
        try db.run("UPDATE manifest SET sealed = ?, counter = counter + 5", [.blob(sealed)])
        #expect(starlineError { _ = try fixture.open() }?.details?["part"]?.stringValue == "manifest")
    }

    @Test("W2 a database file that is not SQLite any more is VAULT_CORRUPT, never an empty vault")
    func testW2GarbageDatabaseIsCorrupt() throws {
        let vault = try fixture.create()
        try vault.add(NoteDraft(body: "x"))
        for suffix in ["-wal", "-shm"] { unlink(fixture.location.databasePath + suffix) }
        try AtomicFile.write(patternBytes(8192), to: fixture.location.databasePath)
        let error = starlineError { _ = try fixture.open() }
        #expect(error?.code == .vaultCorrupt)
        #expect(error?.exitStatus == .data)
    }

    @Test("W2 attachment files: flipped, truncated, extended, swapped or missing → VAULT_CORRUPT naming the attachment")
    func testW2DamagedAttachmentNamed() throws {
        let vault = try fixture.create()
        let note = try vault.add(NoteDraft(body: "with files"))
        let content = patternBytes(200_000)
        try vault.attach(note.id, from: try fixture.input(content), name: "photo.jpg")
        try vault.attach(note.id, from: try fixture.input(patternBytes(200_000, seed: 7)), name: "other.jpg")
        let files = try fixture.attachmentFiles()
        #expect(files.count == 2)
        // Which file is photo.jpg: the one that decrypts as it, found by trying.
        #expect(try fixture.output { try vault.getAttachment(note.id, name: "photo.jpg", to: $0) } == content)
        let paths = files.map { fixture.location.attachmentsPath + "/" + $0 }
        let originals = try paths.map { try AtomicFile.read($0)! }

        func expectCorrupt(_ label: String) {
            let error = starlineError { _ = try fixture.output { try fixture.open().getAttachment(note.id, name: "photo.jpg", to: $0) } }
            let other = starlineError { _ = try fixture.output { try fixture.open().getAttachment(note.id, name: "other.jpg", to: $0) } }
            let failed = [error, other].compactMap { $0 }
            #expect(failed.count >= 1, "\(label)")
            for e in failed {
                #expect(e.code == .vaultCorrupt, "\(label)")
                #expect(["photo.jpg", "other.jpg"].contains(e.details?["attachment"]?.stringValue ?? ""), "\(label)")
                #expect(e.details?["record"]?.stringValue == note.id)
            }
        }
        func restore() throws { for (p, b) in zip(paths, originals) { try AtomicFile.write(b, to: p) } }

        try fixture.flipByte(paths[0], at: 100_000); expectCorrupt("flipped"); try restore()
        try fixture.flipByte(paths[0], at: 5); expectCorrupt("prefix flipped"); try restore()
        try AtomicFile.write(Array(originals[0].dropLast(17)), to: paths[0]); expectCorrupt("final chunk cut"); try restore()
        try AtomicFile.write(Array(originals[0].prefix(70_000)), to: paths[0]); expectCorrupt("truncated"); try restore()
        try AtomicFile.write(originals[0] + [0], to: paths[0]); expectCorrupt("extended"); try restore()
        try AtomicFile.write(originals[1], to: paths[0]); try AtomicFile.write(originals[0], to: paths[1]); expectCorrupt("swapped");
        try restore()
        unlink(paths[0]); expectCorrupt("missing"); try restore()

        #expect(try fixture.open().verify().isClean)
        try fixture.flipByte(paths[1], at: -3)
        let report = try fixture.open().verify()
        #expect(report.problems.map(\.kind) == [.attachmentCorrupt])
        #expect(report.attachments == 2)
    }

    @Test("verify reports a search index changed from outside; a clean vault verifies clean")
    func verifyIndex() throws {
        let vault = try fixture.create()
        let note = try vault.add(NoteDraft(title: "indexed words", body: "alpha beta"))
        #expect(try vault.verify().isClean)
        let db = try fixture.database()
        try db.run("DELETE FROM search_tokens WHERE token = (SELECT token FROM search_tokens LIMIT 1)")
        let report = try vault.verify()
        #expect(report.problems.map(\.kind) == [.indexMismatch])
        #expect(report.problems.first?.subject == note.id)
    }
}
