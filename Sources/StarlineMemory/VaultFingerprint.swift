import Glibc
import StarlineCore
import StarlineCrypto

/// What `stat` says about one of the vault's database files: enough to tell that it was not written since.
/// `ctime` is the part that matters: every write, rename, `chmod` or `utimensat` sets it to the current
/// time, and no user can set it back (mtime and size are kept as well, as git's index keeps them).
struct VaultFileState: Equatable {
    var device: UInt64
    var inode: UInt64
    var size: Int64
    var mtimeNS: Int64
    var ctimeNS: Int64

    /// The file at `path` (not followed when a link), or nil when there is none.
    static func of(_ path: String) -> VaultFileState? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        return VaultFileState(
            device: UInt64(info.st_dev), inode: UInt64(info.st_ino), size: Int64(info.st_size),
            mtimeNS: Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec),
            ctimeNS: Int64(info.st_ctim.tv_sec) * 1_000_000_000 + Int64(info.st_ctim.tv_nsec))
    }

    /// True when a later write is sure to give the file another ctime than this one: its ctime is older
    /// than `time` (CLOCK_REALTIME_COARSE, the clock file times come from, read before the `stat`) by more
    /// than the file system's timestamp granularity. A ctime within the same tick as a write that is still
    /// to come would be "racy" (git's word): that write could leave it unchanged. The granularity is not
    /// exposed, so it is judged from the value: nanoseconds that are not a multiple of 1000 mean a fine
    /// clock (1 µs is plenty, file times move a whole tick at a time); otherwise 2 s, for file systems that
    /// keep whole (or even) seconds — with them a fingerprint is only trusted once the change is 2 s old.
    func isSettled(before time: Int64) -> Bool {
        let granularity: Int64 = ctimeNS % 1000 != 0 ? 1_000 : 2_000_000_000
        return ctimeNS + granularity < time
    }

    var text: String { "\(device):\(inode):\(size):\(mtimeNS):\(ctimeNS)" }

    init(device: UInt64, inode: UInt64, size: Int64, mtimeNS: Int64, ctimeNS: Int64) {
        (self.device, self.inode, self.size, self.mtimeNS, self.ctimeNS) = (device, inode, size, mtimeNS, ctimeNS)
    }

    init?(text: Substring) {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 5, let d = UInt64(parts[0]), let i = UInt64(parts[1]), let s = Int64(parts[2]),
            let m = Int64(parts[3]), let c = Int64(parts[4])
        else { return nil }
        self.init(device: d, inode: i, size: s, mtimeNS: m, ctimeNS: c)
    }
}

/// The state of `vault.db` and `vault.db-wal` (nil when there is no WAL file), which hold every row.
struct VaultFiles: Equatable {
    var database: VaultFileState?
    var wal: VaultFileState?

    static func of(_ location: VaultLocation) -> VaultFiles {
        VaultFiles(database: .of(location.databasePath), wal: .of(location.databasePath + "-wal"))
    }

    func isSettled(before time: Int64) -> Bool {
        guard let database else { return false }
        return database.isSettled(before: time) && (wal?.isSettled(before: time) ?? true)
    }

    /// CLOCK_REALTIME_COARSE in nanoseconds: the clock the kernel stamps files with (a fine-grained stamp
    /// is never older than it).
    static func coarseNow() -> Int64 {
        var t = timespec()
        clock_gettime(CLOCK_REALTIME_COARSE, &t)
        return Int64(t.tv_sec) * 1_000_000_000 + Int64(t.tv_nsec)
    }
}

/// Proof that the full check of opening — the manifest's MAC recomputed over every row's id, version, key
/// epoch and attachment files — passed on the database files as they still are (`docs/formats.md`, "Open
/// fingerprint"). Kept beside the rollback pin (`<pin>.fingerprint`, 0600): the files' `VaultFileState`s,
/// the manifest counter and key epoch and the header checksum the check saw, and the time it began,
/// MACed with a subkey of the data key, so it cannot be made or altered without the key.
///
/// An open whose files, header and manifest columns match it skips the O(records) recomputation; anything
/// else (another write, a file put back, whatever its mtime, a fingerprint of another vault, a damaged or
/// forged one) gets the full check, which writes a new one when it passes.
struct VaultFingerprint: Equatable {
    static let magic = "starline-memory-fingerprint"

    var vaultID: String
    var counter: UInt64
    var epoch: UInt32
    var headerChecksum: [UInt8]
    /// CLOCK_REALTIME_COARSE before the files were looked at: their ctimes must be older (`isSettled`).
    var checkedAt: Int64
    var files: VaultFiles

    /// The subkey of the MAC: `BLAKE2b-K(data key, "starline-memory/v1 fingerprint\0" ‖ vault id)`, like
    /// the other subkeys (derived here, not with them, as only an open that finds or writes one needs it).
    static func macKey(_ keys: EpochKeys, vaultID: [UInt8]) -> SecretBytes {
        GenericHash.deriveSecret(Array("starline-memory/v1 fingerprint\u{0}".utf8) + vaultID, key: keys.dataKey)
    }

    /// The line without its MAC.
    var body: String {
        "\(Self.magic) v1 \(vaultID) \(counter) \(epoch) \(Hex.encode(headerChecksum)) \(checkedAt) "
            + "\(files.database?.text ?? "-") \(files.wal?.text ?? "-")"
    }

    /// Bound to the database's path too, so a fingerprint is only ever one of this vault at this place.
    static func mac(_ body: String, databasePath: String, key: SecretBytes) -> [UInt8] {
        var w = ByteWriter()
        w.raw(Array("starline-memory/v1 fingerprint\u{0}".utf8))
        w.string(databasePath)
        w.string(body)
        return GenericHash.mac(w.bytes, key: key)
    }

    func encoded(databasePath: String, key: SecretBytes) -> [UInt8] {
        Array("\(body) \(Hex.encode(Self.mac(body, databasePath: databasePath, key: key)))\n".utf8)
    }

    /// The fingerprint at `path` when it parses and its MAC is right; nil otherwise (missing, damaged,
    /// forged, of another vault or key): then the full check runs, so nothing here is an error.
    static func read(_ path: String, databasePath: String, key: SecretBytes) -> VaultFingerprint? {
        guard let bytes = try? AtomicFile.read(path, followLinks: false, what: "memory vault fingerprint"), bytes.count < 1024 else {
            return nil
        }
        let line = String(decoding: bytes, as: UTF8.self)
        guard line.hasSuffix("\n") else { return nil }
        let words = line.dropLast().split(separator: " ", omittingEmptySubsequences: false)
        guard words.count == 10, words[0] == magic, words[1] == "v1", let counter = UInt64(words[3]), let epoch = UInt32(words[4]),
            let checksum = Hex.decode(String(words[5])), checksum.count == VaultHeader.checksumBytes, let checkedAt = Int64(words[6]),
            let database = VaultFileState(text: words[7]), let storedMAC = Hex.decode(String(words[9]))
        else { return nil }
        let wal = words[8] == "-" ? nil : VaultFileState(text: words[8])
        guard words[8] == "-" || wal != nil else { return nil }
        let fingerprint = VaultFingerprint(
            vaultID: String(words[2]), counter: counter, epoch: epoch, headerChecksum: checksum,
            checkedAt: checkedAt, files: VaultFiles(database: database, wal: wal))
        guard Sodium.constantTimeEquals(storedMAC, mac(fingerprint.body, databasePath: databasePath, key: key)) else { return nil }
        return fingerprint
    }

    /// Writes it atomically (temporary file, rename) and 0600. Not synced: a fingerprint lost or cut short
    /// in a power cut only costs the next open the full check, and two `fsync`s would cost every open that
    /// writes one about 2 ms.
    func write(_ path: String, databasePath: String, key: SecretBytes) throws(StarlineError) {
        try PrivateFiles.ensurePrivateDirectory(AtomicFileDirectory.of(path))
        try AtomicFile.write(encoded(databasePath: databasePath, key: key), to: path, mode: 0o600, sync: false)
    }

    /// True when a fingerprint of these files may be trusted at all (see `VaultFileState.isSettled`).
    var isSettled: Bool { files.isSettled(before: checkedAt) }
}
