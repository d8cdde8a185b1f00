import Foundation
import Glibc
import StarlineCore
import StarlineCrypto
@testable import StarlineMemory
import StarlineSQLite
import StarlineTestSupport
import Testing

/// The open fingerprint (W2): an unchanged vault opens without the O(records) check, and nothing the
/// full check catches gets past it — whatever an attacker does to the files' mtimes or to the fingerprint.
/// Which path an open took is `openCheck`; no test looks at a clock's reading of how long it took.
@Suite("Memory vault: open fingerprint")
final class VaultFingerprintTests: @unchecked Sendable {
    let fixture: VaultFixture
    init() throws { fixture = try VaultFixture() }

    var location: VaultLocation { fixture.location }

    /// Waits until the files' ctimes are older than the coarse clock by more than their granularity, so a
    /// full check may write a fingerprint (within the same tick as a write it never does).
    func settle() {
        for _ in 0..<2_500 where !VaultFiles.of(location).isSettled(before: VaultFiles.coarseNow()) { usleep(2_000) }
    }

    /// A vault with notes whose next open writes a fingerprint, and whose open after that is the fast one.
    func fastVault(_ notes: [String] = ["alpha", "bravo", "charlie"]) throws -> (MemoryVault, [MemoryNote]) {
        let vault = try fixture.create()
        let added = try vault.add(contentsOf: notes.map { NoteDraft(title: $0, body: "body of \($0)") })
        settle()
        #expect(try fixture.open().openCheck == .full)
        #expect(try fixture.open().openCheck == .fingerprint)
        return (vault, added)
    }

    /// A raw connection that leaves the WAL as it is when it closes, like the suite's own.
    func rawDatabase() throws -> SQLiteDatabase {
        try SQLiteDatabase(path: location.databasePath, checkpointOnClose: false)
    }

    /// Sets the mtime (and atime) of `path` back to `mtimeNS`, as `touch -d` would.
    func restoreMtime(_ path: String, _ mtimeNS: Int64) {
        let t = timespec(tv_sec: Int(mtimeNS / 1_000_000_000), tv_nsec: Int(mtimeNS % 1_000_000_000))
        let times = [t, t]
        #expect(utimensat(AT_FDCWD, path, times, 0) == 0)
    }

    @Test(
        """
        W2 an unchanged vault opens through the fingerprint, with the passphrase and with the agent's key; a change \
        makes the next open full
        """)
    func unchangedVaultOpensThroughTheFingerprint() throws {
        let (vault, notes) = try fastVault()
        #expect(permissionBits(location.fingerprintPath) == 0o600)
        let fast = try MemoryVault.open(at: location, dataKey: vault.dataKey)
        #expect(fast.openCheck == .fingerprint)
        #expect(fast.counter == vault.counter)
        #expect(try fast.show(notes[1].id).body == "body of bravo")
        #expect(try fast.list().map(\.title).sorted() == ["alpha", "bravo", "charlie"])
        #expect(try fast.search("charlie").map(\.id) == [notes[2].id])
        // A change through the vault: the files moved, so the next open checks in full (and then writes a new one).
        try fast.edit(notes[0].id, body: "edited")
        #expect(try fixture.open().openCheck == .full)
        // That open wrote a fingerprint if the edit was a clock tick old by then; this one does if not.
        settle()
        _ = try fixture.open()
        let again = try fixture.open()
        #expect(again.openCheck == .fingerprint)
        #expect(try again.show(notes[0].id).body == "edited")
    }

    @Test(
        """
        W2 a record rolled back in place (same inode, same size, mtimes put back) after a fast open is still \
        VAULT_CORRUPT naming it
        """)
    func recordRolledBackWithMtimesRestoredIsDetected() throws {
        let vault = try fixture.create()
        let note = try vault.add(NoteDraft(body: "v1"))
        try vault.add(NoteDraft(body: "another"))
        let raw = try rawDatabase()
        let old = try raw.queryFirst("SELECT version, sealed FROM records WHERE id = ?", [.text(note.id)])!
        try vault.edit(note.id, body: "v2")
        // Everything in vault.db and an empty WAL: the tampering below then keeps both sizes.
        try raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        settle()
        #expect(try fixture.open().openCheck == .full)
        #expect(try fixture.open().openCheck == .fingerprint)
        let before = VaultFiles.of(location)

        try raw.run("UPDATE records SET version = ?, sealed = ? WHERE id = ?", [old.value("version"), old.value("sealed"), .text(note.id)])
        try raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        restoreMtime(location.databasePath, before.database!.mtimeNS)
        restoreMtime(location.databasePath + "-wal", before.wal!.mtimeNS)
        let after = VaultFiles.of(location)
        // Only the ctimes tell: the attack is the one the fingerprint has to withstand.
        #expect(after.database?.inode == before.database?.inode && after.database?.size == before.database?.size)
        #expect(after.database?.mtimeNS == before.database?.mtimeNS && after.wal?.mtimeNS == before.wal?.mtimeNS)
        #expect(after.wal?.size == before.wal?.size)

        let error = starlineError { _ = try fixture.open() }
        #expect(error?.code == .vaultCorrupt)
        #expect(error?.exitStatus == .data)
        #expect(error?.details?["record"]?.stringValue == note.id)
        #expect(error?.details?["problem"]?.stringValue == "recordVersion")
        #expect(try MemoryVault.verify(at: location, with: .passphrase(fixture.passphrase)).problems.first?.subject == note.id)
    }

    @Test("W2 a record deleted after a fast-path-eligible open is detected on the next open, with mtimes put back")
    func deletedRecordDetected() throws {
        let (_, notes) = try fastVault()
        let before = VaultFiles.of(location)
        let raw = try rawDatabase()
        try raw.run("DELETE FROM records WHERE id = ?", [.text(notes[1].id)])
        restoreMtime(location.databasePath, before.database!.mtimeNS)
        if let wal = before.wal { restoreMtime(location.databasePath + "-wal", wal.mtimeNS) }
        let error = starlineError { _ = try fixture.open() }
        #expect(error?.details?["record"]?.stringValue == notes[1].id)
        #expect(error?.details?["problem"]?.stringValue == "recordMissing")
    }

    @Test("W2 ciphertexts swapped between two records after a fast-path-eligible open do not authenticate, named")
    func swappedRecordsDetected() throws {
        let (_, notes) = try fastVault()
        let before = VaultFiles.of(location)
        let raw = try rawDatabase()
        let (a, b) = (notes[0].id, notes[2].id)
        let sa = try raw.queryFirst("SELECT sealed FROM records WHERE id = ?", [.text(a)])!.value("sealed")
        let sb = try raw.queryFirst("SELECT sealed FROM records WHERE id = ?", [.text(b)])!.value("sealed")
        try raw.run("UPDATE records SET sealed = ? WHERE id = ?", [sb, .text(a)])
        try raw.run("UPDATE records SET sealed = ? WHERE id = ?", [sa, .text(b)])
        restoreMtime(location.databasePath, before.database!.mtimeNS)
        if let wal = before.wal { restoreMtime(location.databasePath + "-wal", wal.mtimeNS) }
        let vault = try fixture.open()
        // The manifest lists ids and versions, which did not change: the full check passes, the seals do not.
        #expect(vault.openCheck == .full)
        #expect(starlineError { _ = try vault.show(a) }?.details?["record"]?.stringValue == a)
        #expect(starlineError { _ = try vault.show(b) }?.details?["record"]?.stringValue == b)
    }

    @Test("W2 tampering between a fast open and a read is caught by the read (the files are looked at again)")
    func tamperingAfterAFastOpenIsCaughtByTheRead() throws {
        let vault = try fixture.create()
        let note = try vault.add(NoteDraft(body: "v1"))
        let raw = try rawDatabase()
        let old = try raw.queryFirst("SELECT version, sealed FROM records WHERE id = ?", [.text(note.id)])!
        try vault.edit(note.id, body: "v2")
        settle()
        _ = try fixture.open()
        let fast = try fixture.open()
        #expect(fast.openCheck == .fingerprint)
        try raw.run("UPDATE records SET version = ?, sealed = ? WHERE id = ?", [old.value("version"), old.value("sealed"), .text(note.id)])
        let error = starlineError { _ = try fast.show(note.id) }
        #expect(error?.code == .vaultCorrupt)
        #expect(error?.details?["problem"]?.stringValue == "recordVersion")
    }

    @Test(
        """
        W2 a whole vault put back from an older copy is ROLLBACK_DETECTED after fast opens, even with its old \
        fingerprint and mtimes
        """)
    func wholeVaultRollbackAfterFastOpens() throws {
        // No connection stays open: the files are put back as they would be between two commands.
        let dataKey = try { () throws -> SecretBytes in
            let vault = try fixture.create()
            try vault.add(NoteDraft(body: "first"))
            return vault.dataKey
        }()
        settle()
        _ = try fixture.open()
        #expect(try fixture.open().openCheck == .fingerprint)
        let files = ["vault.db", "vault.db-wal"]
        let copies = try files.map { try AtomicFile.read(location.directory + "/" + $0) ?? [] }
        let states = VaultFiles.of(location)
        let oldFingerprint = try AtomicFile.read(location.fingerprintPath)!

        try fixture.open().add(NoteDraft(body: "second"))
        settle()
        _ = try fixture.open()
        #expect(try fixture.open().openCheck == .fingerprint)
        // The older copy written back into the same files, their mtimes restored, and the old fingerprint too.
        for (name, bytes) in zip(files, copies) {
            let fd = Glibc.open(location.directory + "/" + name, O_WRONLY | O_TRUNC | O_CLOEXEC)
            #expect(fd >= 0)
            _ = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            close(fd)
        }
        restoreMtime(location.databasePath, states.database!.mtimeNS)
        restoreMtime(location.databasePath + "-wal", states.wal!.mtimeNS)
        try AtomicFile.write(oldFingerprint, to: location.fingerprintPath)
        let error = starlineError { _ = try fixture.open() }
        #expect(error?.code == .rollbackDetected)
        #expect(error?.exitStatus == .data)
        #expect(starlineError { _ = try MemoryVault.open(at: location, dataKey: dataKey) }?.code == .rollbackDetected)
    }

    @Test("W2 an altered, forged, racy or copied fingerprint is ignored (the full check runs and writes a good one)")
    func badFingerprintsAreIgnored() throws {
        let (vault, _) = try fastVault()
        let good = try AtomicFile.read(location.fingerprintPath)!
        let line = String(decoding: good, as: UTF8.self)
        var words = line.dropLast().split(separator: " ").map(String.init)

        // Altered: a higher counter, a different ctime, the MAC kept.
        for (index, value) in [(3, "\(vault.counter + 1)"), (7, words[7].replacingOccurrences(of: ":", with: ":1", options: .backwards))] {
            var altered = words
            altered[index] = value
            try AtomicFile.write(Array((altered.joined(separator: " ") + "\n").utf8), to: location.fingerprintPath)
            #expect(try fixture.open().openCheck == .full, "field \(index)")
        }
        // The full check put a good one back.
        #expect(try fixture.open().openCheck == .fingerprint)

        // Forged: the right fields under a key that is not the vault's.
        words.removeLast()
        let body = words.joined(separator: " ")
        let wrongKey = VaultFingerprint.macKey(
            EpochKeys(epoch: 1, dataKey: SecretBytes(copying: Sodium.randomBytes(32)), vaultID: vault.header.vaultID),
            vaultID: vault.header.vaultID)
        let forged = body + " " + Hex.encode(VaultFingerprint.mac(body, databasePath: location.databasePath, key: wrongKey)) + "\n"
        try AtomicFile.write(Array(forged.utf8), to: location.fingerprintPath)
        #expect(try fixture.open().openCheck == .full)

        // Racy: correctly MACed, but recorded at a time not later than the files' ctimes.
        var racy = try #require(
            VaultFingerprint.read(location.fingerprintPath, databasePath: location.databasePath, key: vault.fingerprintKey))
        racy.checkedAt = racy.files.database!.ctimeNS
        try racy.write(location.fingerprintPath, databasePath: location.databasePath, key: vault.fingerprintKey)
        #expect(try fixture.open().openCheck == .full)

        // Copied from another vault (its own, valid there): not this vault's key or files.
        let other = try VaultFixture()
        try other.create().add(NoteDraft(body: "elsewhere"))
        for _ in 0..<2_500 where !VaultFiles.of(other.location).isSettled(before: VaultFiles.coarseNow()) { usleep(2_000) }
        _ = try other.open()
        #expect(try other.open().openCheck == .fingerprint)
        try AtomicFile.write(try AtomicFile.read(other.location.fingerprintPath)!, to: location.fingerprintPath)
        #expect(try fixture.open().openCheck == .full)
        // And one that is not a fingerprint at all.
        try AtomicFile.write(Array("garbage\n".utf8), to: location.fingerprintPath)
        #expect(try fixture.open().openCheck == .full)
        #expect(try fixture.open().openCheck == .fingerprint)
    }

    @Test("W2 verify never takes the fingerprint's word; a clean verify writes one")
    func verifyAlwaysChecksInFull() throws {
        let (vault, notes) = try fastVault()
        let before = VaultFiles.of(location)
        let raw = try rawDatabase()
        var sealed = try raw.queryFirst("SELECT sealed FROM records WHERE id = ?", [.text(notes[0].id)])!.blob("sealed")!
        sealed[sealed.count / 2] ^= 1
        try raw.run("UPDATE records SET sealed = ? WHERE id = ?", [.blob(sealed), .text(notes[0].id)])
        restoreMtime(location.databasePath, before.database!.mtimeNS)
        if let wal = before.wal { restoreMtime(location.databasePath + "-wal", wal.mtimeNS) }
        #expect(try vault.verify().problems.map(\.subject) == [notes[0].id])

        sealed[sealed.count / 2] ^= 1
        try raw.run("UPDATE records SET sealed = ? WHERE id = ?", [.blob(sealed), .text(notes[0].id)])
        unlink(location.fingerprintPath)
        settle()
        #expect(try MemoryVault.verify(at: location, with: .dataKey(vault.dataKey)).isClean)
        #expect(try fixture.open().openCheck == .fingerprint)
    }
}
