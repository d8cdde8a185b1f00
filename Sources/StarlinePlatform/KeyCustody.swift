import StarlineCore
import StarlineSQLite

/// Where a store key's sealing key lives (S3: the file custodian or the desktop keyring). Everything else — the SQLite rows, the sealed records —
/// is the same for both; only the key that seals them is kept elsewhere.
///
/// - `file`: `device.key` (0600) mixed with the machine id (`DeviceKey`). The default: it needs no desktop
///   session, so cron jobs and servers use it. It protects against a copied store on another machine only as
///   far as the machine id is secret, which it is not (`/etc/machine-id` is world-readable).
/// - `keyring`: 32 random bytes in the desktop keyring (Secret Service: GNOME Keyring, KWallet, KeePassXC).
///   Readable only while the keyring is unlocked ("locked" of S3/S17 is real), never in a copied state
///   directory, and gone with the keyring item.
public enum KeyCustodian: String, Sendable, CaseIterable {
    case file, keyring

    /// `STARLINE_KEYRING` and the config key `keyring`: a yes/no word, as a user writes it.
    public static func parse(yesNo text: String) -> KeyCustodian? {
        switch text.lowercased() {
        case "1", "true", "yes", "on", "keyring": .keyring
        case "0", "false", "no", "off", "file": .file
        default: nil
        }
    }
}

/// The custody row of one store key (`custody` table, migration 2). No row is the file custodian.
struct CustodyRecord: Equatable {
    var custodian: KeyCustodian
    /// The keyring item holding the key (its `item` attribute); nil for the file custodian, or for the
    /// keyring custodian before the first seal (and after the key was released with the last sealed record).
    var keyringItem: String?
    /// Keyring items whose delete failed (S13): the records they sealed are gone, the items are not. Stored as
    /// one space-separated column (item ids are hex).
    var orphanItems: [String]

    static let file = CustodyRecord(custodian: .file, keyringItem: nil, orphanItems: [])

    static func read(_ database: SQLiteDatabase, keyId: String, damaged: StarlineError) throws -> CustodyRecord {
        guard
            let row = try database.queryFirst(
                "SELECT custodian, keyring_item, orphan_item FROM custody WHERE store_key = ?", [.text(keyId)])
        else { return .file }
        guard let name = row.string("custodian"), let custodian = KeyCustodian(rawValue: name) else { throw damaged }
        let orphans = row.string("orphan_item").map { $0.split(separator: " ").map(String.init) } ?? []
        return CustodyRecord(custodian: custodian, keyringItem: row.string("keyring_item"), orphanItems: orphans)
    }

    func write(_ database: SQLiteDatabase, keyId: String, now: Int64) throws {
        try database.run(
            """
            INSERT INTO custody (store_key, custodian, keyring_item, orphan_item, updated_at) VALUES (?, ?, ?, ?, ?)
            ON CONFLICT (store_key) DO UPDATE SET custodian = excluded.custodian, keyring_item = excluded.keyring_item,
                orphan_item = excluded.orphan_item, updated_at = excluded.updated_at
            """,
            [
                .text(keyId), .text(custodian.rawValue), keyringItem.map { .text($0) } ?? .null,
                orphanItems.isEmpty ? .null : .text(orphanItems.joined(separator: " ")), .integer(now)
            ])
    }

    /// `sl-login status`: which custodian, and for the keyring which item (ids only, never a secret).
    var json: JSON {
        .object([
            ("custodian", .string(custodian.rawValue)), ("keyringItem", .optional(keyringItem)),
            ("orphanItems", .array(orphanItems.map(JSON.string)))
        ])
    }
}
