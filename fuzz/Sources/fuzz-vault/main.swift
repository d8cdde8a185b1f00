import FuzzSupport
import StarlineCore
import StarlineCrypto
@testable import StarlineMemory

// The memory vault's parsers (docs/formats.md, "Memory vault"), past their checksums and seals: the first
// byte picks the parser, the rest is what it parses. A header gets its checksum appended, a record or manifest
// payload is sealed under fixed keys, so the fuzzer reaches the field parsing behind them.
let vaultID = [UInt8](repeating: 7, count: 16)
let keys = EpochKeys(epoch: 1, dataKey: SecretBytes(copying: [UInt8](repeating: 9, count: 32)), vaultID: vaultID)

Fuzz.run { bytes in
    var input = FuzzInput(bytes)
    let mode = input.byte() % 5
    let body = input.remaining
    switch mode {
    case 0:
        _ = try? VaultHeader.decode(body + GenericHash.hash(body, length: VaultHeader.checksumBytes), path: "fuzz")
        _ = try? VaultHeader.decode(body, path: "fuzz")
    case 1:
        let sealed = XChaCha20Poly1305.seal(body, additionalData: NotePayload.additionalData(vaultID: vaultID, id: "n", version: 1),
                                            key: keys.recordKey)
        // What `show` and `list` print of it, too.
        if let payload = try? NotePayload.open(sealed, id: "n", version: 1, keys: keys, vaultID: vaultID, path: "fuzz") {
            _ = payload.createdAt.rfc3339 + payload.updatedAt.rfc3339
            for a in payload.attachments { _ = a.addedAt.rfc3339 }
        }
    case 2:
        let counter = UInt64(body.first ?? 0)
        let sealed = XChaCha20Poly1305.seal(body, additionalData: VaultManifest.additionalData(vaultID: vaultID, counter: counter),
                                            key: keys.manifestKey)
        _ = try? VaultManifest.open(sealed, counter: counter, keys: keys, vaultID: vaultID, path: "fuzz")
    case 3:
        // An export package (`sl-memory import --check`), pushed in two pieces.
        let reader = MemoryExportReader(into: nil)
        let cut = body.isEmpty ? 0 : Int(body[0]) % body.count
        do {
            try body[..<cut].withUnsafeBytes { try reader.push($0) }
            try body[cut...].withUnsafeBytes { try reader.push($0) }
            _ = try reader.finish()
        } catch {}
    default:
        _ = ManifestEntry.blobs(fromColumn: body)
        let text = String(fuzz: body)
        _ = NoteID.bytes(text)
        _ = Hex.decode(text)
        _ = AgentWire.parse(body[...])
        _ = AgentWire.decodeKey(body[...])
    }
}
