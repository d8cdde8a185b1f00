import StarlineCore
import StarlineCrypto

/// One record as the manifest knows it: the plaintext columns of its row (`records`), which are all a
/// reader can check without decrypting.
struct ManifestEntry: Equatable {
    var id: String
    var version: Int
    var epoch: UInt32
    /// The attachment files of the record (16-byte ids), sorted.
    var blobs: [[UInt8]]

    init(id: String, version: Int, epoch: UInt32, blobs: [[UInt8]]) {
        self.id = id
        self.version = version
        self.epoch = epoch
        self.blobs = blobs.sorted { $0.lexicographicallyPrecedes($1) }
    }

    /// The `blobs` column of a row: the ids concatenated.
    var blobsColumn: [UInt8] { blobs.flatMap { $0 } }

    static func blobs(fromColumn column: [UInt8]) -> [[UInt8]]? {
        guard column.count % 16 == 0 else { return nil }
        return stride(from: 0, to: column.count, by: 16).map { Array(column[$0..<$0 + 16]) }
    }
}

/// The sealed manifest (`manifest` row): a counter that only goes up (+1 with every committed change), the
/// checksum of the header it belongs with, every record's (id, version, key epoch, attachment files), and a
/// keyed-BLAKE2b MAC over that list under the epoch's manifest MAC key. All of it is sealed with
/// XChaCha20-Poly1305 under the manifest key, with the vault id and counter as additional data; the counter
/// and epoch are also clear columns, so the key to open it can be chosen and the pin compared.
///
/// Opening a vault recomputes the MAC over the rows' own columns: equal, and nothing was deleted, added,
/// rolled back or moved. Different, and the sealed list says which record differs.
struct VaultManifest: Equatable {
    static let payloadVersion: UInt8 = 1

    var counter: UInt64
    var headerChecksum: [UInt8]
    var entries: [String: ManifestEntry]

    /// The canonical encoding the MAC covers: the entries sorted by id.
    static func canonical(_ entries: some Sequence<ManifestEntry>) -> [UInt8] {
        var w = ByteWriter(capacity: 4096)
        for e in entries.sorted(by: { $0.id < $1.id }) {
            w.string(e.id)
            w.u64(UInt64(e.version))
            w.u32(e.epoch)
            w.u32(UInt32(e.blobs.count))
            for b in e.blobs.sorted(by: { $0.lexicographicallyPrecedes($1) }) { w.raw(b) }
        }
        return w.bytes
    }

    static func mac(_ entries: some Sequence<ManifestEntry>, counter: UInt64, keys: EpochKeys) -> [UInt8] {
        mac(canonical: canonical(entries), counter: counter, keys: keys)
    }

    /// The MAC of entries already in the canonical encoding.
    static func mac(canonical: [UInt8], counter: UInt64, keys: EpochKeys) -> [UInt8] {
        var w = ByteWriter(capacity: canonical.count + 48)
        w.raw(Array("starline-memory/v1 manifest-mac\u{0}".utf8))
        w.u64(counter)
        w.raw(canonical)
        return GenericHash.mac(w.bytes, key: keys.manifestMACKey)
    }

    static func additionalData(vaultID: [UInt8], counter: UInt64) -> [UInt8] {
        var w = ByteWriter()
        w.raw(Array("starline-memory/v1 manifest\u{0}".utf8))
        w.raw(vaultID)
        w.u64(counter)
        return w.bytes
    }

    func sealed(keys: EpochKeys, vaultID: [UInt8]) -> [UInt8] {
        var w = ByteWriter(capacity: 64 + entries.count * 64)
        w.u8(Self.payloadVersion)
        w.u64(counter)
        w.raw(headerChecksum)
        // The list is stored in the canonical encoding the MAC covers: encoded once, and `open` can check
        // the MAC over the stored bytes.
        let list = Self.canonical(entries.values)
        w.raw(Self.mac(canonical: list, counter: counter, keys: keys))
        w.u32(UInt32(entries.count))
        w.raw(list)
        return XChaCha20Poly1305.seal(
            w.bytes, additionalData: Self.additionalData(vaultID: vaultID, counter: counter), key: keys.manifestKey)
    }

    /// Opens the manifest row. VAULT_CORRUPT naming the manifest when it does not authenticate, does not
    /// parse, or its MAC or counter disagree with what it holds.
    static func open(
        _ sealed: [UInt8], counter: UInt64, keys: EpochKeys, vaultID: [UInt8],
        path: String
    ) throws(StarlineError) -> (VaultManifest, mac: [UInt8]) {
        let plain: [UInt8]
        do {
            plain = try XChaCha20Poly1305.open(
                sealed, additionalData: additionalData(vaultID: vaultID, counter: counter), key: keys.manifestKey)
        } catch {
            throw VaultErrors.corruptManifest(path, "it does not authenticate (altered, truncated, or its counter was changed)")
        }
        var r = ByteReader(plain)
        do {
            guard try r.u8() == payloadVersion, try r.u64() == counter else { throw ByteReader.Malformed() }
            let headerChecksum = try r.raw(VaultHeader.checksumBytes)
            let mac = try r.raw(32)
            var entries: [String: ManifestEntry] = [:]
            let n = try r.count(minimumItemBytes: 4 + 36 + 16)
            entries.reserveCapacity(n)
            let listStart = r.offset
            for _ in 0..<n {
                let id = try r.string(limit: 64), version = try r.u64(), epoch = try r.u32()
                var blobs: [[UInt8]] = []
                for _ in 0..<(try r.count(minimumItemBytes: 16)) { blobs.append(try r.raw(16)) }
                guard version <= UInt64(Int.max) else { throw ByteReader.Malformed() }
                entries[id] = ManifestEntry(id: id, version: Int(version), epoch: epoch, blobs: blobs)
            }
            let list = Array(plain[listStart..<r.offset])
            try r.expectEnd()
            let manifest = VaultManifest(counter: counter, headerChecksum: headerChecksum, entries: entries)
            // `sealed` writes the list in the canonical encoding (sorted by id, blob ids sorted), so the MAC is
            // checked over the bytes as they are — sorting 10,000 ids again cost a third of a full open. A
            // list not in that order, which `sealed` never writes, fails as a MAC that does not match.
            guard Sodium.constantTimeEquals(mac, Self.mac(canonical: list, counter: counter, keys: keys)) else {
                throw VaultErrors.corruptManifest(path, "its MAC does not match its records")
            }
            return (manifest, mac)
        } catch let error as StarlineError {
            throw error
        } catch {
            throw VaultErrors.corruptManifest(path, "it does not parse")
        }
    }

    /// What differs between the manifest and the rows: one problem per record, naming it (deleted, added
    /// behind the manifest's back, older or newer, sealed under another key, other attachment files).
    func differences(from rows: [String: ManifestEntry], path: String) -> [VaultProblem] {
        Set(entries.keys).union(rows.keys).sorted().compactMap { difference(id: $0, row: rows[$0]) }
    }

    /// The problem with record `id` whose row is `row` (nil: no row), or nil when it is as the manifest says.
    func difference(id: String, row: ManifestEntry?) -> VaultProblem? {
        switch (entries[id], row) {
        case let (expected?, nil):
            return .init(
                .recordMissing, subject: id, "record \(id) (version \(expected.version)) is missing: it was deleted outside sl-memory")
        case (nil, let row?):
            return .init(
                .recordUnexpected, subject: id,
                "record \(id) (version \(row.version)) is not in the manifest: it was added or restored outside sl-memory")
        case let (expected?, row?) where expected.version != row.version:
            let which = row.version < expected.version ? "older" : "newer"
            return .init(
                .recordVersion, subject: id,
                "record \(id) is version \(row.version), \(which) than the manifest's \(expected.version): it was rolled back or replaced")
        case let (expected?, row?) where expected != row:
            return .init(
                .recordVersion, subject: id,
                "record \(id) does not match the manifest (key epoch or attachment files differ): it was replaced")
        default:
            return nil
        }
    }
}
