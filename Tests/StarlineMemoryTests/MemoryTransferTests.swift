import Foundation
import Glibc
import StarlineCore
import StarlineCrypto
import StarlineMemory
import Testing

/// W3 in the domain (MemoryTransfer), in-process on real vaults: export with the generated share code and the
/// written file read back, import in two passes over one descriptor, the code as a person types it.
@Suite("W3 export and import in the domain") struct MemoryTransferTests {
    static let titles = ["groceries", "旅行の計画", "door code"]

    func filled() throws -> (VaultFixture, MemoryVault) {
        let fixture = try VaultFixture()
        let vault = try fixture.create()
        _ = try vault.add(contentsOf: Self.titles.map { NoteDraft(title: $0, body: "body of \($0)", tags: ["w3"]) })
        return (fixture, vault)
    }

    @Test("W3 an export verified after writing imports as new notes, the share code typed lower case without dashes")
    func w3ExportVerifiedThenImportedFromATypedCode() throws {
        let (source, vault) = try filled()
        let path = source.dir + "/memory.age"
        let export = try MemoryTransfer.export(
            vault, to: path, armored: false, verify: true, exportedAt: Timestamp(seconds: 1_800_000_100), workFactor: 10)
        #expect(export.summary.notes == 3)
        // 24 Crockford base32 characters in groups of four.
        #expect(export.shareCode.count == 29 && export.shareCode.split(separator: "-").map(\.count) == [4, 4, 4, 4, 4, 4])
        #expect(!FileManager.default.fileExists(atPath: path + ".partial-\(getpid())"))

        let target = try VaultFixture()
        let into = try target.create()
        let typed = export.shareCode.lowercased().replacingOccurrences(of: "-", with: " ")
        let file = try ExportFile.open(path)
        let checked = try MemoryTransfer.check(file, shareCode: typed, maximumWorkFactor: 20, listingTitles: true)
        #expect(checked.summary.titles.sorted() == Self.titles.sorted())
        #expect(try into.list().isEmpty)  // pass 1 wrote nothing
        let imported = try MemoryTransfer.importChecked(file, checked, into: into)
        #expect(imported.notes == 3)
        #expect(try into.list().map(\.title).sorted() == Self.titles.sorted())
    }

    @Test("W3 a wrong share code opens nothing and imports nothing; a file changed between the passes adds nothing")
    func w3WrongCodeAndChangedFileImportNothing() throws {
        let (source, vault) = try filled()
        let path = source.dir + "/memory.age"
        let first = try MemoryTransfer.export(
            vault, to: path, armored: true, verify: false, exportedAt: Timestamp(seconds: 1_800_000_100), workFactor: 10)
        let file = try ExportFile.open(path)
        let wrong = starlineError {
            _ = try MemoryTransfer.check(file, shareCode: "0000-0000-0000-0000-0000-0000", maximumWorkFactor: 20, listingTitles: false)
        }
        #expect(wrong?.code == .ageWrongPassphrase)

        let checked = try MemoryTransfer.check(file, shareCode: first.shareCode, maximumWorkFactor: 20, listingTitles: false)
        // Another export written into the same file (same inode, so the open descriptor sees it) after the check.
        let other = source.dir + "/other.age"
        _ = try MemoryTransfer.export(
            vault, to: other, armored: false, verify: false, exportedAt: Timestamp(seconds: 1_800_000_200), workFactor: 10)
        let replacement = try Data(contentsOf: URL(fileURLWithPath: other))
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        try handle.truncate(atOffset: 0)
        try handle.write(contentsOf: replacement)
        try handle.close()

        let target = try VaultFixture()
        let into = try target.create()
        #expect(starlineError { _ = try MemoryTransfer.importChecked(file, checked, into: into) } != nil)
        #expect(try into.list().isEmpty)
    }
}
