import Foundation
import StarlineCore
import StarlineCrypto
import StarlineMemory
import StarlineTestSupport
import Testing

@Suite("Memory vault: rekey")
final class VaultRekeyTests: @unchecked Sendable {
    let fixture: VaultFixture
    init() throws { fixture = try VaultFixture() }

    func populate(_ vault: MemoryVault) throws -> [MemoryNote] {
        let notes = try vault.add(contentsOf: (0..<5).map { NoteDraft(title: "note \($0)", body: "common word\($0)", tags: ["t\($0)"]) })
        try vault.attach(notes[1].id, from: try fixture.input(patternBytes(150_000)), name: "one.bin")
        try vault.attach(notes[3].id, from: try fixture.input(patternBytes(10, seed: 3)), name: "three.bin")
        return notes
    }

    @Test("W2 rekey re-encrypts every record and attachment under a new data key; the old key no longer opens it")
    func testW2RekeyReplacesDataKey() throws {
        let vault = try fixture.create()
        let notes = try populate(vault)
        let oldKey = SecretBytes(copying: vault.dataKey.copyBytes())
        let filesBefore = Set(try fixture.attachmentFiles())
        #expect(starlineError { _ = try vault.rekey(passphrase: VaultFixture.secret("wrong")) }?.code == .wrongPassphrase)
        let result = try vault.rekey(passphrase: fixture.passphrase, batchSize: 2)
        #expect(result == RekeyResult(epoch: 2, recordsMoved: 5, attachmentsMoved: 2, resumed: false))
        #expect(!vault.isRekeyPending)
        #expect(vault.dataKey != oldKey)
        let filesAfter = Set(try fixture.attachmentFiles())
        #expect(filesAfter.count == 2 && filesAfter.isDisjoint(with: filesBefore))
        #expect(starlineError { _ = try MemoryVault.open(at: fixture.location, dataKey: oldKey) }?.code == .wrongKey)
        let reopened = try fixture.open()
        #expect(try reopened.list().count == 5)
        #expect(try reopened.search("common").count == 5)
        #expect(try reopened.search("word3").map(\.id) == [notes[3].id])
        #expect(try fixture.output { try reopened.getAttachment(notes[1].id, name: "one.bin", to: $0) } == patternBytes(150_000))
        #expect(try reopened.verify().isClean)
        #expect(try reopened.show(notes[0].id).version == 1, "a rekey changes no content, so no version")
    }

    @Test("W2 rekey interrupted half-way: the vault reads with both keys, accepts changes, and a second rekey resumes")
    func testW2RekeyInterruptedThenResumed() throws {
        let vault = try fixture.create()
        let notes = try populate(vault)
        let oldKey = SecretBytes(copying: vault.dataKey.copyBytes())
        let crashing = try fixture.open(faults: VaultFaults(rekeyCrashAfter: 2))
        #expect(starlineError { _ = try crashing.rekey(passphrase: fixture.passphrase, batchSize: 1) }?.details?["crash"] != nil)

        // Half-way: opens with the passphrase and with the old data key (the agent's), everything readable.
        let byPassphrase = try fixture.open()
        #expect(byPassphrase.isRekeyPending)
        let byKey = try MemoryVault.open(at: fixture.location, dataKey: oldKey)
        for vault in [byPassphrase, byKey] {
            #expect(try vault.list().count == 5)
            #expect(try vault.search("common").count == 5)
            #expect(try fixture.output { try vault.getAttachment(notes[1].id, name: "one.bin", to: $0) } == patternBytes(150_000))
            #expect(try fixture.output { try vault.getAttachment(notes[3].id, name: "three.bin", to: $0) } == patternBytes(10, seed: 3))
        }
        #expect(try byPassphrase.verify().isClean)
        // Changes meanwhile use the new key.
        let added = try byKey.add(NoteDraft(body: "added mid-rekey"))

        let resumed = try byPassphrase.rekey(passphrase: fixture.passphrase)
        #expect(resumed.resumed)
        #expect(resumed.recordsMoved == 3)
        #expect(!byPassphrase.isRekeyPending)
        let done = try fixture.open()
        #expect(try done.list().count == 6)
        #expect(try done.show(added.id).body == "added mid-rekey")
        #expect(try done.verify().isClean)
        #expect(try fixture.attachmentFiles().count == 2)
        #expect(starlineError { _ = try MemoryVault.open(at: fixture.location, dataKey: oldKey) }?.code == .wrongKey)
        // The object opened with the old key while the rekey was pending had unwrapped the new key then, so it
        // follows the rekey another object finished; only a new open with the old key is refused.
        #expect(try byKey.list().count == 6)
        #expect(byKey.dataKey != oldKey)
    }

    @Test("W2 passphrase change during an unfinished rekey re-wraps both keys")
    func testW2PassphraseChangeDuringRekey() throws {
        let vault = try fixture.create()
        _ = try populate(vault)
        let crashing = try fixture.open(faults: VaultFaults(rekeyCrashAfter: 1))
        _ = starlineError { _ = try crashing.rekey(passphrase: fixture.passphrase, batchSize: 1) }
        let halfway = try fixture.open()
        try halfway.changePassphrase(current: fixture.passphrase, new: VaultFixture.secret("next"), limits: .minimum)
        let next = try MemoryVault.open(at: fixture.location, passphrase: VaultFixture.secret("next"))
        #expect(next.isRekeyPending)
        try next.rekey(passphrase: VaultFixture.secret("next"))
        #expect(try MemoryVault.open(at: fixture.location, passphrase: VaultFixture.secret("next")).verify().isClean)
    }

    @Test("W2 a rekey whose first commit fails leaves no trace: no pending key in memory or on disk")
    func testW2FailedRekeyStartLeavesNoTrace() throws {
        let vault = try fixture.create()
        let note = try vault.add(NoteDraft(body: "x"))
        let broken = try fixture.open(faults: VaultFaults(storage: StorageFaults([.commit])))
        #expect(starlineError { _ = try broken.rekey(passphrase: fixture.passphrase) }?.code == .storage)
        #expect(!broken.isRekeyPending)
        #expect(try broken.show(note.id).body == "x")
        let reopened = try fixture.open()
        #expect(!reopened.isRekeyPending)
        #expect(try reopened.verify().isClean)
    }
}
