import Foundation
import StarlineCore
import StarlineCrypto
import StarlineMemory
import StarlineTestSupport
import Testing

@Suite("Memory vault: notes, search, keys")
final class VaultRoundTripTests: @unchecked Sendable {
    let fixture: VaultFixture
    init() throws { fixture = try VaultFixture() }

    @Test("W2 notes round-trip: add, list, show, edit (version +1), remove; reopened from disk")
    func testW2NotesRoundTrip() throws {
        let vault = try fixture.create()
        let a = try vault.add(NoteDraft(title: "Groceries", body: "milk and bread", tags: ["home", " home ", "shop"]))
        let b = try vault.add(NoteDraft(title: "Server", body: "rotate the TLS keys", tags: ["work"]))
        #expect(a.version == 1)
        #expect(a.tags == ["home", "shop"])

        let reopened = try fixture.open()
        #expect(try reopened.list().map(\.id).sorted() == [a.id, b.id].sorted())
        #expect(try reopened.show(a.id) == a)

        let edited = try reopened.edit(a.id, body: "milk, bread and eggs")
        #expect(edited.version == 2)
        #expect(edited.title == "Groceries")
        #expect(try fixture.open().show(a.id).body == "milk, bread and eggs")
        // An edit that changes nothing is no change: same version, same counter.
        let counter = reopened.counter
        #expect(try reopened.edit(a.id, title: "Groceries").version == 2)
        #expect(reopened.counter == counter)

        #expect(try reopened.remove(String(b.id.prefix(8))) == b.id)
        #expect(try fixture.open().list().map(\.id) == [a.id])
        #expect(starlineError { _ = try reopened.show(b.id) }?.code == .notFound)
    }

    @Test("ids resolve by unique prefix; an ambiguous prefix lists candidates; garbage is NOT_FOUND")
    func idPrefixes() throws {
        let vault = try fixture.create()
        let notes = try vault.add(contentsOf: (0..<40).map { NoteDraft(body: "note \($0)") })
        let first = notes[0]
        #expect(try vault.resolve(first.id.uppercased()) == first.id)
        // 40 random ids: some one-character prefix is shared by two of them.
        let shared = Dictionary(grouping: notes, by: { $0.id.prefix(1) }).first { $0.value.count > 1 }!.key
        let error = starlineError { _ = try vault.resolve(String(shared)) }
        #expect(error?.code == .ambiguousID)
        #expect((error?.details?["candidates"]?.arrayValue?.count ?? 0) >= 2)
        #expect(starlineError { _ = try vault.resolve("zz%") }?.code == .notFound)
        #expect(starlineError { _ = try vault.resolve("") }?.code == .notFound)
    }

    @Test("W2 titles, bodies, tags and attachment names are never stored in the clear")
    func testW2NothingInTheClear() throws {
        let vault = try fixture.create()
        let note = try vault.add(NoteDraft(title: "SecretTitleXYZ", body: "SecretBodyXYZ", tags: ["SecretTagXYZ"]))
        try vault.attach(note.id, from: try fixture.input(Array("SecretContentXYZ".utf8)), name: "SecretNameXYZ.txt")
        var everything: [UInt8] = []
        for name in ["vault.db", "vault.db-wal"] {
            everything += (try AtomicFile.read(fixture.location.directory + "/" + name)) ?? []
        }
        for file in try fixture.attachmentFiles() { everything += try AtomicFile.read(fixture.location.attachmentsPath + "/" + file)! }
        let text = String(decoding: everything.map { $0 == 0 ? 32 : $0 }, as: UTF8.self).lowercased()
        #expect(!everything.isEmpty)
        for secret in ["secrettitlexyz", "secretbodyxyz", "secrettagxyz", "secretnamexyz", "secretcontentxyz"] {
            #expect(!text.contains(secret), "\(secret) found in the clear")
        }
    }

    @Test("search: exact words, AND, case-insensitive, over title, body, tags and attachment names; CJK characters")
    func search() throws {
        let vault = try fixture.create()
        let a = try vault.add(NoteDraft(title: "Trip to Kyoto", body: "Book the Ryokan early.", tags: ["travel"]))
        let b = try vault.add(NoteDraft(title: "Kyoto restaurants", body: "Ask Bob.", tags: ["food"]))
        let c = try vault.add(NoteDraft(title: "会议纪要", body: "明天讨论预算", tags: []))
        try vault.attach(b.id, from: try fixture.input([1, 2, 3]), name: "menu-scan.png")
        #expect(Set(try vault.search("kyoto").map(\.id)) == [a.id, b.id])
        #expect(try vault.search("KYOTO ryokan").map(\.id) == [a.id])
        #expect(try vault.search("travel").map(\.id) == [a.id])
        #expect(try vault.search("menu").map(\.id) == [b.id])
        #expect(try vault.search("kyo").isEmpty, "whole words only")
        #expect(try vault.search("kyoto bob travel").isEmpty)
        #expect(try vault.search("预算").map(\.id) == [c.id])
        // The index follows edits and removals.
        try vault.edit(a.id, body: "Book the hostel.")
        #expect(try vault.search("ryokan").isEmpty)
        #expect(try vault.search("hostel").map(\.id) == [a.id])
        try vault.remove(b.id)
        #expect(try vault.search("kyoto").map(\.id) == [a.id])
        #expect(starlineError { _ = try vault.search(" ,. ") }?.code == .usage)
        #expect(try vault.verify().isClean)
    }

    @Test("W2 a wrong passphrase is WRONG_PASSPHRASE (exit 13), not corruption")
    func testW2WrongPassphraseIsNotCorruption() throws {
        try fixture.create().add(NoteDraft(body: "x"))
        let error = starlineError { _ = try MemoryVault.open(at: fixture.location, passphrase: VaultFixture.secret("wrong")) }
        #expect(error?.code == .wrongPassphrase)
        #expect(error?.exitStatus == .locked)
    }

    @Test("W2 the data key opens the vault without the passphrase (the agent's way); another key is WRONG_KEY (13)")
    func testW2DataKeyUnlock() throws {
        let vault = try fixture.create()
        let note = try vault.add(NoteDraft(body: "agent"))
        let byKey = try MemoryVault.open(at: fixture.location, dataKey: vault.dataKey)
        #expect(try byKey.show(note.id).body == "agent")
        let error = starlineError { _ = try MemoryVault.open(at: fixture.location, dataKey: XChaCha20Poly1305.generateKey()) }
        #expect(error?.code == .wrongKey)
        #expect(error?.exitStatus == .locked)
    }

    @Test("W2 changePassphrase re-wraps only: the new passphrase opens, the old one does not, the data key stays")
    func testW2ChangePassphrase() throws {
        let vault = try fixture.create()
        let note = try vault.add(NoteDraft(body: "kept"))
        let key = vault.dataKey.copyBytes()
        #expect(
            starlineError { try vault.changePassphrase(current: VaultFixture.secret("nope"), new: VaultFixture.secret("new")) }?.code
                == .wrongPassphrase)
        try vault.changePassphrase(current: fixture.passphrase, new: VaultFixture.secret("new pass"), limits: .minimum)
        #expect(starlineError { _ = try fixture.open() }?.code == .wrongPassphrase)
        let reopened = try MemoryVault.open(at: fixture.location, passphrase: VaultFixture.secret("new pass"))
        #expect(try reopened.show(note.id).body == "kept")
        #expect(reopened.dataKey.copyBytes() == key)
    }

    @Test("W2 no vault is VAULT_NOT_FOUND, never an empty vault; init never overwrites one")
    func testW2MissingVaultIsNotEmpty() throws {
        let error = starlineError { _ = try fixture.open() }
        #expect(error?.code == .vaultNotFound)
        #expect(!MemoryVault.exists(at: fixture.location))
        let vault = try fixture.create()
        try vault.add(NoteDraft(body: "precious"))
        #expect(starlineError { try fixture.create() }?.code == .vaultExists)
        #expect(try fixture.open().list().count == 1)
        // The database gone while the pin remembers it: still not found, and the message says a vault was here.
        try FileManager.default.removeItem(atPath: fixture.location.databasePath)
        let gone = starlineError { _ = try fixture.open() }
        #expect(gone?.code == .vaultNotFound)
        #expect(gone?.message.contains("last seen") == true)
    }

    @Test("vault files are private: directories 0700, database and pin 0600")
    func privateFiles() throws {
        try fixture.create().add(NoteDraft(body: "x"))
        #expect(permissionBits(fixture.location.directory) == 0o700)
        #expect(permissionBits(fixture.location.attachmentsPath) == 0o700)
        #expect(permissionBits(fixture.location.databasePath) == 0o600)
        #expect(permissionBits(fixture.location.pinPath) == 0o600)
    }
}
