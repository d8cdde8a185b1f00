#if canImport(Glibc)
import Glibc
#endif
import StarlineCore

/// `workspace.json` on disk (W1): read as a snapshot, rewritten atomically under an exclusive lock.
///
/// - Reads take no lock: the file is only ever replaced by `rename`, so a reader sees the old or the
///   new file, never a mix.
/// - Every read-modify-write holds an exclusive `flock` on `workspace.json.lock`, re-reads the file
///   under the lock, and writes a temporary file that is fsynced, renamed over the target and made
///   durable with an fsync of the directory (`AtomicFile`). `kill -9` at any instant leaves the old
///   or the new file.
/// - Before each successful write the current file becomes `workspace.json.bak` (a hard link renamed
///   into place: no copy, and the backup is always a complete earlier version).
/// - A file that does not parse, or has the wrong shape, is never overwritten: CORRUPT_FILE (exit 12)
///   naming the backup. A file of a newer version is read but never written: UNSUPPORTED_VERSION (12).
/// - A symbolic link at `path` (a dotfile manager's, such as stow) is followed: the target is read and
///   replaced, and the lock file, temporary files and `.bak` live beside the target, so the link stays a link.
/// - A command that changes nothing writes nothing: the file, its mtime and the `.bak` stay as they are.
/// - The directory holding the file (the target's, for a link) must be the user's and not writable by group
///   or others — /tmp included — or every read and write is refused (INSECURE_PERMISSIONS, exit 10), as ssh
///   refuses such a directory: whoever can write it can swap the file, its lock or its backup.
public struct WorkspaceStore: Sendable {
    /// The path as given (what messages name).
    public let path: String
    /// The file itself: `path` with symbolic links followed, resolved once when the store is made.
    public let filePath: String
    public var backupPath: String { filePath + ".bak" }
    public var lockPath: String { FileLock.lockPath(for: filePath) }
    /// How long a writer waits for another one before giving up (STORAGE_ERROR, retryable).
    public var lockTimeout: Swift.Duration = .seconds(60)

    /// The store of the file at `path` (the front-end resolves `--workspace`, `STARLINE_WORKSPACE` and the
    /// default `<data>/workspace.json`).
    public init(path: String) {
        self.path = path
        filePath = WorkspaceStore.followingLinks(path)
    }

    /// `path` when it is not a symbolic link; else its target — `realpath(3)` when the target exists, else the
    /// link text read hop by hop (a dangling link names the file to create). At most 40 hops, as the kernel
    /// allows (a loop is then reported by open(2) as ELOOP).
    static func followingLinks(_ path: String) -> String {
        var info = stat()
        guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFLNK else { return path }
        if let resolved = realpath(path, nil) {
            defer { free(resolved) }
            return String(cString: resolved)
        }
        var current = path
        for _ in 0..<40 {
            guard lstat(current, &info) == 0, info.st_mode & S_IFMT == S_IFLNK else { break }
            var buffer = [UInt8](repeating: 0, count: Int(PATH_MAX) + 1)
            let n = buffer.withUnsafeMutableBufferPointer { b in
                b.baseAddress!.withMemoryRebound(to: CChar.self, capacity: b.count) { readlink(current, $0, b.count - 1) }
            }
            guard n > 0 else { break }
            let target = String(decoding: buffer[0..<n], as: UTF8.self)
            current = target.hasPrefix("/") ? target : split(current).directory + "/" + target
        }
        return current
    }

    /// The current snapshot; an empty workspace when the file does not exist yet.
    public func read() throws -> Workspace {
        try readIfPresent() ?? Workspace()
    }

    /// The current snapshot; nil when the file does not exist (what `check` reports as such).
    package func readIfPresent() throws -> Workspace? {
        guard let bytes = try readBytes() else { return nil }
        return try decode(bytes)
    }

    /// The file's bytes (nil: no file), once its directory passed `checkDirectory`: whoever else can write
    /// the directory can replace the file with one of their own between two runs, as ssh assumes of its
    /// configuration. A missing directory has nothing to distrust.
    func readBytes() throws -> [UInt8]? {
        try PrivateFiles.checkDirectoryIfPresent(WorkspaceStore.split(filePath).directory)
        return try AtomicFile.read(filePath)
    }

    /// The tasks that pass `filter`, in its order. A well-formed file is mapped by `WorkspaceScanner` and only
    /// the tasks that may match are looked at, most of them without being decoded (`TaskFilter.listing`);
    /// anything unusual, including every error, goes through the full decoder — same result either way.
    package func tasks(matching filter: TaskFilter) throws -> TaskListing {
        guard let bytes = try readBytes() else { return TaskListing(bytes: [], entries: []) }
        if let scan = WorkspaceScanner.scan(bytes, collectTasks: true) {
            return try filter.listing(bytes: bytes, slices: scan.tasks)
        }
        return TaskListing(
            bytes: [],
            entries: filter.apply(try decode(bytes).tasks).map { TaskListing.Entry(source: .decoded($0.task), number: $0.number) })
    }

    /// True when the file exists.
    public var exists: Bool { access(filePath, F_OK) == 0 }

    /// Decodes file content, turning every failure into CORRUPT_FILE naming the backup.
    public func decode(_ bytes: [UInt8]) throws -> Workspace {
        let json: JSON
        do {
            json = try JSON.parse(bytes)
        } catch let error as StarlineError {
            if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) {
                throw corrupt("the file is empty (truncated)", offset: 0)
            }
            throw corrupt(error.message, offset: error.details?["offset"]?.intValue)
        }
        do {
            return try Workspace(json: json)
        } catch {
            throw corrupt(error.message, offset: nil)
        }
    }

    func corrupt(_ reason: String, offset: Int64?) -> StarlineError {
        let hasBackup = access(backupPath, F_OK) == 0
        let advice =
            hasBackup
            ? "the last good copy is \(backupPath) (cp \(backupPath) \(path) to restore it)"
            : "no backup exists (\(backupPath) is missing)"
        var details: [(String, JSON)] = [
            ("path", .string(path)), ("backup", hasBackup ? .string(backupPath) : .null),
            ("reason", .string(reason))
        ]
        if let offset { details.append(("offset", .int(offset))) }
        return StarlineError(
            .corruptFile, "\(path) is not a valid workspace file (\(reason)); it was left untouched; \(advice)",
            details: .object(details))
    }

    /// Runs `body` on the current snapshot under the exclusive lock and writes the result back, unless
    /// `body` returns without changing anything (`changed` false) or the records come out equal to what
    /// they were — a no-op never rotates the backup away. Returns `body`'s result.
    @discardableResult
    public func update<T>(_ body: (inout Workspace) throws -> (result: T, changed: Bool)) throws -> T {
        var result: T?
        try withWriteLock { old in
            var workspace = try old.map(decode) ?? Workspace()
            try refuseNewer(workspace.version)
            let before = workspace
            let (r, changed) = try body(&workspace)
            result = r
            // Array equality is O(1) for arrays that were not touched (same storage).
            let same =
                workspace.version == before.version && workspace.tasks == before.tasks
                && workspace.websites == before.websites && workspace.recents == before.recents
            return changed && !same ? JSONWriter.document(workspace.json, pretty: true) : nil
        }
        return result!
    }

    /// Appends one (open) task and returns its working-set number. A well-formed file is not decoded: the
    /// task's bytes are spliced in after the last task (`WorkspaceScanner`), so everything else stays byte for
    /// byte as it was. Anything unusual takes the general path of `update`.
    @discardableResult
    public func appendTask(_ task: JSON) throws -> Int {
        var number = 0
        try withWriteLock { old in
            if let old, let scan = WorkspaceScanner.scan(old, collectTasks: true), scan.version <= Workspace.currentVersion {
                number = try TaskFilter.openCount(bytes: old, slices: scan.tasks) + 1
                return WorkspaceScanner.appending(task, to: old, at: scan)
            }
            var workspace = try old.map(decode) ?? Workspace()
            try refuseNewer(workspace.version)
            workspace.tasks.append(task)
            number = workspace.workingSetNumber(of: workspace.tasks.count - 1) ?? 0
            return JSONWriter.document(workspace.json, pretty: true)
        }
        return number
    }

    func refuseNewer(_ version: Int64) throws {
        if version > Workspace.currentVersion {
            throw StarlineError(
                .unsupportedVersion,
                "\(path) has format version \(version), newer than this sl-tasks (version \(Workspace.currentVersion)); it can be read but not changed: upgrade sl-tasks",
                details: .object([
                    ("path", .string(path)), ("version", .int(version)),
                    ("supported", .int(Workspace.currentVersion))
                ]))
        }
    }

    /// The read-modify-write cycle: directory, exclusive lock, read the current bytes (nil when there is
    /// no file), let `body` compute the new bytes (nil: nothing to write), rotate the backup, replace
    /// the file atomically and durably.
    func withWriteLock(_ body: ([UInt8]?) throws -> [UInt8]?) throws {
        let (directory, _) = WorkspaceStore.split(filePath)
        // The directory of the file itself (a link's target's): the lock, temporary files and .bak live there.
        try PrivateFiles.ensurePrivateDirectory(directory)
        let lock = try FileLock(path: lockPath)
        try lock.lock(exclusive: true, timeout: lockTimeout)
        defer { lock.unlock() }
        let old = try AtomicFile.read(filePath)
        guard let bytes = try body(old) else { return }
        removeStaleTemporaryFiles(in: directory)
        if let old { try rotateBackup(old) }
        try AtomicFile.write(bytes, to: filePath, mode: 0o600)
    }

    /// Temporary files of writers killed mid-write (`.workspace.json.tmp-*`, `workspace.json.bak.tmp-*`).
    /// Holding the lock, no live writer has one open, so every such file is stale. Best-effort.
    func removeStaleTemporaryFiles(in directory: String) {
        let (_, name) = WorkspaceStore.split(filePath)
        let prefixes = [".\(name).tmp-", "\(name).bak.tmp-"]
        guard let dir = opendir(directory) else { return }
        defer { closedir(dir) }
        var stale: [String] = []
        while let entry = readdir(dir) {
            let entryName = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(cString: raw.bindMemory(to: CChar.self).baseAddress!)
            }
            if prefixes.contains(where: { entryName.hasPrefix($0) }) { stale.append(entryName) }
        }
        for file in stale { unlink(directory + "/" + file) }
    }

    /// Makes the current file the backup: a hard link under a temporary name renamed over the `.bak`
    /// (atomic, and durable with the directory fsync of the write that follows). Where hard links are
    /// not supported, the bytes are written atomically instead.
    func rotateBackup(_ current: [UInt8]) throws {
        let temp = "\(filePath).bak.tmp-\(getpid())"
        let slot = Interrupts.track(temp)
        defer { Interrupts.untrack(slot) }
        unlink(temp)
        if link(filePath, temp) == 0 {
            if rename(temp, backupPath) == 0 {
                // "If oldpath and newpath are existing hard links referring to the same file, then rename()
                // does nothing, and returns a success status" (rename(2)): after a writer was killed between
                // its rotation and its rename, the .bak already is the current file and the temp name stays.
                unlink(temp)
                return
            }
            let e = errno
            unlink(temp)
            throw StarlineError(
                .storage, "cannot write \(backupPath): \(String(cString: strerror(e)))",
                details: .object([("path", .string(backupPath)), ("errno", .int(Int64(e)))]))
        }
        try AtomicFile.write(current, to: backupPath, mode: 0o600)
    }

    static func split(_ path: String) -> (directory: String, name: String) {
        guard let slash = path.lastIndex(of: "/") else { return (".", path) }
        let directory = String(path[..<slash])
        return (directory.isEmpty ? "/" : directory, String(path[path.index(after: slash)...]))
    }
}
