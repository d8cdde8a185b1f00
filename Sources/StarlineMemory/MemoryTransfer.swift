import StarlineCore
import StarlineCrypto

/// W3: a vault's notes and attachments moved as an age file opened by a share code — exported with the code
/// generated here (and the written file read back with it when asked), imported in two passes over one
/// descriptor: everything checked, then everything written in one transaction that commits only if it reads what
/// the check read. Local operations: the platform has no redeem route, so a share code is not a server transfer.
public enum MemoryTransfer {
    /// A finished export: what it holds and the code that opens it.
    public struct Export: Sendable {
        public let summary: MemoryExportPackage.Summary
        public let shareCode: String
    }

    /// Writes every note and attachment of `vault` to `path` (a regular file appears only when complete; a
    /// device or FIFO is written in place), encrypted to a new share code. With `verify`, the written file is
    /// opened again with that code and its whole package checked before it is put in place.
    public static func export(
        _ vault: MemoryVault, to path: String, armored: Bool, verify: Bool, exportedAt: Timestamp,
        workFactor: Int = AgeEncryptor.defaultWorkFactor
    ) throws -> Export {
        let code = ShareCode.generate()
        let passphrase = SecretBytes(copying: Array(code.utf8))
        let check: ((String, MemoryExportPackage.Summary) throws -> Void)? =
            !verify
            ? nil
            : { partial, summary in
                let file = try ExportFile.open(partial)
                let checked = try MemoryExportPackage.check { try file.decrypt(AgeDecryptor(passphrase: passphrase), to: $0) }
                guard checked == summary else {
                    throw StarlineError(
                        .data, "the written export does not hold what was exported (\(checked.notes) of \(summary.notes) notes)")
                }
            }
        let summary = try CompletedFile.write(to: path, check: check) { fd in
            let encryptor = try AgeEncryptor(
                passphrase: passphrase, workFactor: workFactor, armored: armored,
                output: .fileDescriptor(fd, name: path))
            let summary = try MemoryExportPackage.write(vault, exportedAt: exportedAt) { try encryptor.write($0) }
            try encryptor.finish()
            return summary
        }
        return Export(summary: summary, shareCode: code)
    }

    /// An export checked whole (pass 1) and the key that opened it, for `importChecked`.
    public struct Checked {
        public let summary: MemoryExportPackage.Summary
        let decryptor: AgeDecryptor
    }

    /// Pass 1: the age header and every chunk, then every line of the package, each attachment's size and digest —
    /// nothing written. The code is tried as typed (an `age -p` passphrase is any text), then as a share code is
    /// written (upper case, dashes) when that differs and the first was the wrong passphrase.
    public static func check(_ file: ExportFile, shareCode typed: String, maximumWorkFactor: Int, listingTitles: Bool) throws -> Checked {
        func opened(by code: String) throws -> Checked {
            let decryptor = AgeDecryptor(passphrase: SecretBytes(copying: Array(code.utf8)), maximumWorkFactor: maximumWorkFactor)
            let summary = try MemoryExportPackage.check(listingTitles: listingTitles) { try file.decrypt(decryptor, to: $0) }
            return Checked(summary: summary, decryptor: decryptor)
        }
        do {
            return try opened(by: typed)
        } catch let error as StarlineError where error.code == .ageWrongPassphrase && ShareCode.normalize(typed) != typed {
            return try opened(by: ShareCode.normalize(typed))
        }
    }

    /// Pass 2, from the same descriptor: imported into `vault` in one transaction that commits only if it reads
    /// what pass 1 checked (a file changed in between adds nothing). Notes get new ids and keep their times.
    public static func importChecked(_ file: ExportFile, _ checked: Checked, into vault: MemoryVault) throws -> MemoryExportPackage.Summary
    {
        try MemoryExportPackage.importPackage(into: vault, expecting: checked.summary) { try file.decrypt(checked.decryptor, to: $0) }
    }
}
