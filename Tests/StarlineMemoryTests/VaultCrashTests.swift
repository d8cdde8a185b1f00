import Foundation
import Glibc
import StarlineCore
import StarlineMemory
import StarlineTestSupport
import Testing

/// Interrupted writes (storage faults and simulated kill -9 at each step) leave the old or the new content,
/// and what a killed writer left behind is removed by the next change.
@Suite("Memory vault: crash safety")
final class VaultCrashTests: @unchecked Sendable {
    let fixture: VaultFixture
    init() throws { fixture = try VaultFixture() }

    func faulty(_ faults: VaultFaults) throws -> MemoryVault { try fixture.open(faults: faults) }

    /// `make torture` saw ROLLBACK_DETECTED for 1 of 676 concurrent `sl-memory add`s: an open read the pin after
    /// its snapshot began, and a commit in between had raised the pin above the counter the snapshot holds.
    /// Here the open check is held (a test gate) after its snapshot began while another vault object commits.
    @Test("W2 an open whose snapshot predates a commit and its pin raise is not a rollback")
    func testW2OpenDuringACommitIsNotARollback() throws {
        let writer = try fixture.create()
        _ = try writer.add(NoteDraft(title: "first", body: "x"))
        let gate = fixture.dir + "/gate"
        let opened = Locked<Result<UInt64, StarlineError>?>(nil)
        let opener = Thread { [fixture] in
            var faults = VaultFaults()
            faults.openCheckGate = gate
            let result: Result<UInt64, StarlineError>
            do { result = .success(try fixture.open(faults: faults).counter) } catch {
                result = .failure((error as? StarlineError) ?? StarlineError(.internalError, "\(error)"))
            }
            opened.withLock { $0 = result }
        }
        opener.start()
        var reached = false
        for _ in 0..<1_000 where !reached { reached = access(gate + ".reached", F_OK) == 0; if !reached { usleep(10_000) } }
        #expect(reached, "the open check reached its gate")
        let before = writer.counter
        _ = try writer.add(NoteDraft(title: "second", body: "y"))
        #expect(writer.counter == before + 1)
        #expect(FileManager.default.createFile(atPath: gate + ".go", contents: Data()))
        var result: Result<UInt64, StarlineError>?
        for _ in 0..<1_000 where result == nil { result = opened.withLock { $0 }; if result == nil { usleep(10_000) } }
        #expect(try result?.get() == before, "the open saw its snapshot's counter and no rollback")
        #expect(try fixture.open().counter == before + 1)
    }

    @Test("W2 a commit that fails changes nothing: add, edit, remove and attach keep the old content")
    func testW2FailedCommitKeepsOldContent() throws {
        let vault = try fixture.create()
        let note = try vault.add(NoteDraft(title: "old", body: "old body"))
        try vault.attach(note.id, from: try fixture.input([1, 2, 3]), name: "kept")
        let counter = vault.counter
        let files = try fixture.attachmentFiles()
        let broken = try faulty(VaultFaults(storage: StorageFaults([.commit])))
        for attempt in [
            { _ = try broken.add(NoteDraft(body: "new")) },
            { _ = try broken.edit(note.id, body: "new body") },
            { _ = try broken.remove(note.id) },
            { _ = try broken.attach(note.id, from: try self.fixture.input(patternBytes(100_000)), name: "new") }
        ] as [() throws -> Void] {
            #expect(starlineError(attempt)?.code == .storage)
        }
        let reopened = try fixture.open()
        #expect(reopened.counter == counter)
        #expect(try reopened.list().count == 1)
        #expect(try reopened.show(note.id) == (try vault.show(note.id)))
        #expect(try fixture.attachmentFiles() == files, "a failed attach leaves no file")
        #expect(try reopened.verify().isClean)
        #expect(starlineError { _ = try self.faulty(VaultFaults(storage: StorageFaults([.read]))).list() }?.code == .storage)
    }

    @Test(
        """
        W2 killed before COMMIT with the attachment renamed into place: old content, and the next change removes the \
        file
        """)
    func testW2CrashBeforeCommit() throws {
        let vault = try fixture.create()
        let note = try vault.add(NoteDraft(body: "x"))
        let crashing = try faulty(VaultFaults(crash: .beforeCommit))
        #expect(
            starlineError { try crashing.attach(note.id, from: try fixture.input(patternBytes(70_000)), name: "lost") }?.details?["crash"]
                != nil)
        #expect(try fixture.attachmentFiles().count == 1, "the killed writer left its renamed file")
        let reopened = try fixture.open()
        #expect(try reopened.show(note.id).attachments.isEmpty)
        #expect(try reopened.show(note.id).version == 1)
        try reopened.add(NoteDraft(body: "any change"))
        #expect(try fixture.attachmentFiles().isEmpty, "the leftover was removed under the lock")
        #expect(try reopened.verify().isClean)
    }

    @Test("W2 killed after writing the attachment, before its transaction: a temporary file of a dead writer is removed")
    func testW2CrashAfterAttachmentWrite() throws {
        let vault = try fixture.create()
        let note = try vault.add(NoteDraft(body: "x"))
        #expect(
            starlineError {
                try self.faulty(VaultFaults(crash: .afterAttachmentWrite)).attach(note.id, from: try fixture.input([9]), name: "t")
            } != nil)
        let left = try fixture.attachmentFiles()
        #expect(left.count == 1 && left[0].hasPrefix(".tmp-\(getpid())-"))
        // A live writer's temporary file (this process) is left alone; a dead one's is removed.
        let dead = fixture.location.attachmentsPath + "/.tmp-2147483646-00000000"
        try AtomicFile.write([0], to: dead)
        try vault.add(NoteDraft(body: "change"))
        #expect(try fixture.attachmentFiles() == left)
        #expect(try fixture.open().show(note.id).attachments.isEmpty)
    }

    @Test("W2 killed after COMMIT: the new content is there; the replaced file left behind is removed by the next change")
    func testW2CrashAfterCommit() throws {
        let vault = try fixture.create()
        let note = try vault.add(NoteDraft(body: "x"))
        try vault.attach(note.id, from: try fixture.input([1]), name: "a")
        #expect(
            starlineError {
                try self.faulty(VaultFaults(crash: .afterCommit)).attach(note.id, from: try fixture.input([2]), name: "a", replace: true)
            } != nil)
        #expect(try fixture.attachmentFiles().count == 2)
        let reopened = try fixture.open()
        #expect(try fixture.output { try reopened.getAttachment(note.id, name: "a", to: $0) } == [2])
        try reopened.edit(note.id, title: "touch")
        #expect(try fixture.attachmentFiles().count == 1)
        // The pin was not raised by the killed run; the next open raised it, so nothing is reported.
        #expect(try reopened.verify().isClean)
    }

    @Test("W2 a vault that cannot be read is an error, never an empty list")
    func testW2UnreadableVaultNeverEmpty() throws {
        let vault = try fixture.create()
        try vault.add(NoteDraft(body: "x"))
        #expect(starlineError { _ = try self.faulty(VaultFaults(storage: StorageFaults([.read]))) }?.code == .storage)
        // The database replaced by a directory: STORAGE_ERROR (10), not zero notes.
        for suffix in ["", "-wal", "-shm"] { unlink(fixture.location.databasePath + suffix) }
        mkdir(fixture.location.databasePath, 0o700)
        let error = starlineError { _ = try fixture.open() }
        #expect(error != nil)
        #expect(error?.code != .vaultNotFound)
    }

    @Test("VaultFaults parses the test environment and refuses unknown values")
    func faultsFromEnvironment() throws {
        #expect(try VaultFaults(environment: [:]) == VaultFaults())
        #expect(try VaultFaults(environment: ["STARLINE_TEST_VAULT_CRASH": "before-commit"]).crash == .beforeCommit)
        #expect(try VaultFaults(environment: ["STARLINE_TEST_VAULT_CRASH": "rekey-after:3"]).rekeyCrashAfter == 3)
        #expect(try VaultFaults(environment: ["STARLINE_TEST_STORAGE_FAULT": "commit"]).storage.contains(.commit))
        #expect(starlineError { _ = try VaultFaults(environment: ["STARLINE_TEST_VAULT_CRASH": "sometimes"]) }?.code == .usage)
    }
}
