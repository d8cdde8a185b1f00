import Glibc
import StarlineCore
import StarlineCrypto

/// The device key of the session store: 32 random bytes in `<state>/device.key` (0600), created once on
/// first use. Together with the machine id it derives the key that seals tokens (S3 "this device only").
///
/// Creation is serialised by an `flock` on a lock file and re-checks under the lock, and the file appears
/// through `AtomicFile` (temp file + fsync + rename), so processes racing to create it end up with one key
/// and a reader never sees a partial file.
public enum DeviceKey {
    public static let byteCount = 32

    /// The key at `path`, or nil when the file does not exist.
    ///
    /// Throws `INSECURE_PERMISSIONS` when the file is group/world-accessible, and STORAGE_ERROR "cannot open
    /// the session store: …" when it cannot be read (a directory in its place, no permission, I/O error), is a
    /// symbolic link (never followed: the key would be whatever file the link names) or does not hold
    /// exactly 32 bytes.
    public static func load(path: String) throws(StarlineError) -> SecretBytes? {
        let fd: Int32
        do {
            guard try PrivateFiles.checkPrivate(path, followLinks: false, what: "device key") else { return nil }
            fd = try PrivateFiles.openNoFollow(path, O_RDONLY, what: "device key", action: "cannot read device key", missingIsNil: true)
        } catch {
            throw SessionStore.unreadableStoreError(error)
        }
        if fd < 0 { return nil }
        defer { close(fd) }
        // One byte more than a key, to tell "exactly 32" from "longer".
        var buffer = [UInt8](repeating: 0, count: byteCount + 1)
        defer { Sodium.wipe(&buffer) }
        var used = 0
        while used < buffer.count {
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + used, $0.count - used) }
            if n < 0 {
                if errno == EINTR { continue }
                throw readError(path, errno)
            }
            if n == 0 { break }
            used += n
        }
        guard used == byteCount else {
            throw StarlineError(
                .storage,
                "cannot open the session store: device key \(path) is damaged (\(used > byteCount ? "more than \(byteCount)" : String(used)) bytes, expected \(byteCount))",
                details: .object([("path", .string(path))]))
        }
        return SecretBytes(count: byteCount) { (out: UnsafeMutableRawBufferPointer) in
            buffer.withUnsafeBytes { out.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[0..<byteCount])) }
        }
    }

    /// The key at `path`, created (32 random bytes, mode 0600) when missing. `lockPath` is the lock file that
    /// serialises creation; its directory must exist.
    public static func loadOrCreate(path: String, lockPath: String) throws(StarlineError) -> SecretBytes {
        if let key = try load(path: path) { return key }
        let lock = try FileLock(path: lockPath)
        try lock.lock()
        defer { lock.unlock() }
        // Someone else may have created it while we waited.
        if let key = try load(path: path) { return key }
        var bytes = Sodium.randomBytes(byteCount)
        defer { Sodium.wipe(&bytes) }
        try AtomicFile.write(bytes, to: path, mode: 0o600)
        return SecretBytes(copying: bytes)
    }

    /// The sealing key: keyed BLAKE2b of a context string and the machine id under the device key. A copy of
    /// `device.key` on a machine with another id derives another key, so nothing sealed here opens there.
    public static func sealingKey(deviceKey: SecretBytes, machineId: [UInt8]) -> SecretBytes {
        GenericHash.deriveSecret(
            Array("starline session store v1\u{0}machine-id\u{0}".utf8) + machineId,
            key: deviceKey, length: XChaCha20Poly1305.keyBytes)
    }

    private static func readError(_ path: String, _ code: Int32) -> StarlineError {
        StarlineError(
            .storage, "cannot open the session store: cannot read device key \(path): \(String(cString: strerror(code)))",
            details: .object([("path", .string(path)), ("errno", .int(Int64(code)))]))
    }
}

/// The machine id mixed into the sealing key (S3; docs/session-model.md): `/etc/machine-id`, else
/// `/var/lib/dbus/machine-id`, else a generated 0600 `<state>/host-id`.
///
/// `STARLINE_MACHINE_ID_FILE=PATH` (a test/override knob, read through the store's `Environment`) replaces
/// the two system files with PATH: when PATH exists and is not empty its content is the machine id,
/// otherwise the generated host id is used. Tests use it to simulate "another machine".
public struct MachineIdentity: Sendable, Equatable {
    public static let overrideVariable = "STARLINE_MACHINE_ID_FILE"
    public static let systemFiles = ["/etc/machine-id", "/var/lib/dbus/machine-id"]

    /// The file the id came from, or `<state>/host-id (generated)`.
    public let source: String
    /// The id (the file's content without surrounding white space).
    public let bytes: [UInt8]

    static func candidates(_ environment: Environment) -> [String] {
        if let override = environment[overrideVariable], !override.isEmpty { return [override] }
        return systemFiles
    }

    static func hostIdPath(stateDirectory: String) -> String { stateDirectory + "/host-id" }

    static func generatedSource(stateDirectory: String) -> String {
        hostIdPath(stateDirectory: stateDirectory) + " (generated)"
    }

    /// Where the id would come from, without creating anything (for `sl-login status`).
    public static func describeSource(environment: Environment, stateDirectory: String) -> String {
        for path in candidates(environment) {
            switch Result(catching: { () throws(StarlineError) in try readId(path) }) {
            case .success(let id?) where !id.isEmpty: return path
            case .success: continue
            case .failure: return path  // it exists but cannot be read: `resolve` reports that
            }
        }
        return generatedSource(stateDirectory: stateDirectory)
    }

    /// The machine id, generating `<state>/host-id` (under the lock file `lockPath`) when no system file
    /// has one. A system file that exists but cannot be read is STORAGE_ERROR, not a silent fallback (which
    /// would change the key and make every record undecryptable).
    public static func resolve(environment: Environment, stateDirectory: String, lockPath: String) throws(StarlineError) -> MachineIdentity
    {
        for path in candidates(environment) {
            if let id = try readId(path), !id.isEmpty { return MachineIdentity(source: path, bytes: id) }
        }
        let hostId = hostIdPath(stateDirectory: stateDirectory)
        let source = generatedSource(stateDirectory: stateDirectory)
        if let id = try readId(hostId, followLinks: false), !id.isEmpty { return MachineIdentity(source: source, bytes: id) }
        let lock = try FileLock(path: lockPath)
        try lock.lock()
        defer { lock.unlock() }
        if let id = try readId(hostId, followLinks: false), !id.isEmpty { return MachineIdentity(source: source, bytes: id) }
        let id = Array(StoreKey.hex(Sodium.randomBytes(16)).utf8)
        try AtomicFile.write(id + [UInt8(ascii: "\n")], to: hostId, mode: 0o600)
        return MachineIdentity(source: source, bytes: id)
    }

    /// The trimmed content of `path`; nil when it does not exist. systemd's first-boot placeholder
    /// "uninitialized" counts as empty. `followLinks: false` for the generated host id, which lives in the
    /// private state directory (the system files may well be links: /etc/machine-id to dbus's, or back).
    /// The system files (and the override naming one) are `FileTrust.system`: root owns them; the generated
    /// host id is our own state. A machine id is at most a few dozen bytes: anything past 4 KiB is not one.
    static func readId(_ path: String, followLinks: Bool = true) throws(StarlineError) -> [UInt8]? {
        let content: [UInt8]?
        do {
            content = try AtomicFile.read(
                path, followLinks: followLinks, what: followLinks ? "machine id file" : "host id",
                trust: followLinks ? .system : .ownState, maxBytes: 4096)
        } catch {
            // "cannot open the session store: cannot read /etc/machine-id: Permission denied"
            throw SessionStore.unreadableStoreError(error)
        }
        guard let content else { return nil }
        let isSpace: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x0a || $0 == 0x0d || $0 == 0x09 }
        let trimmed = Array(content.drop(while: isSpace).reversed().drop(while: isSpace).reversed())
        if trimmed == Array("uninitialized".utf8) { return [] }
        return trimmed
    }
}
