import StarlineCore
import StarlineCrypto
import Testing
@testable import StarlineMemory

/// The record payload parser on payloads a vault could hold (found by fuzz/Sources/fuzz-vault).
@Suite struct RecordPayloadTests {
    let vaultID = [UInt8](repeating: 7, count: 16)

    @Test("A record whose times are outside years 0001–9999 opens, and its note prints (no trap in rfc3339)")
    func recordTimesOutsideTheRangePrint() throws {
        let keys = EpochKeys(epoch: 1, dataKey: SecretBytes(copying: [UInt8](repeating: 9, count: 32)), vaultID: vaultID)
        let payload = NotePayload(
            createdAt: Timestamp(seconds: -70_000_000_000), updatedAt: Timestamp(seconds: .max),
            title: "t", body: "b", tags: [], attachments: [])
        let sealed = payload.sealed(id: "n", version: 1, keys: keys, vaultID: vaultID)
        let opened = try NotePayload.open(sealed, id: "n", version: 1, keys: keys, vaultID: vaultID, path: "vault.db")
        let note = opened.note(id: "n", version: 1)
        #expect(note.createdAt.rfc3339 == "0001-01-01T00:00:00Z")
        #expect(note.updatedAt.rfc3339 == "9999-12-31T23:59:59Z")
    }
}
