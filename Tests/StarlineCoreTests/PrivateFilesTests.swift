import Foundation
import Glibc
import StarlineCore
import StarlineTestSupport
import Testing

@Suite("PrivateFiles")
final class PrivateFilesTests: Sendable {
    /// A fresh private directory per test (Swift Testing makes a new suite instance for each test).
    let dir: String
    init() throws { dir = try makeStorageTempDir() }
    deinit { removeStorageTempDir(dir) }

    @Test("checkPrivate rejects group- or world-accessible files like ssh", arguments: [0o644, 0o640, 0o604, 0o660, 0o610] as [mode_t])
    func rejectsShared(mode: mode_t) throws {
        let path = dir + "/device.key"
        try createFile(path, "secret", mode: mode)
        let error = #expect(throws: StarlineError.self) { try PrivateFiles.checkPrivate(path) }
        let octal = "0" + String(mode, radix: 8)
        #expect(error?.code == .insecurePermissions)
        #expect(error?.message == "\(path) is accessible by group or others (mode \(octal)); run chmod 600 \(path)")
        #expect(error?.details?["path"]?.stringValue == path)
        #expect(error?.details?["mode"]?.stringValue == octal)
        #expect(error?.exitStatus == ErrorCode.storage.exitStatus)
    }

    @Test("checkPrivate accepts 0600 and 0400 (true) and a missing file (false)")
    func acceptsPrivate() throws {
        let path = dir + "/sessions.db"
        try createFile(path, "x", mode: 0o600)
        #expect(try PrivateFiles.checkPrivate(path) == true)
        try createFile(path, "x", mode: 0o400)
        #expect(try PrivateFiles.checkPrivate(path) == true)
        #expect(try PrivateFiles.checkPrivate(dir + "/missing") == false)
    }

    @Test("checkPrivate rejects a directory and a device with STORAGE_ERROR")
    func rejectsNonRegular() throws {
        let sub = dir + "/sub"
        #expect(mkdir(sub, 0o700) == 0)
        let error = #expect(throws: StarlineError.self) { try PrivateFiles.checkPrivate(sub) }
        #expect(error?.code == .storage)
        #expect(error?.message == "\(sub) is not a regular file")

        let device = #expect(throws: StarlineError.self) { try PrivateFiles.checkPrivate("/dev/null") }
        #expect(device?.code == .storage)
    }

    @Test("ensureDirectory splits at every '/', also before a combining mark")
    func ensureDirectoryWithCombiningMark() throws {
        // "/\u{301}" is one Character; the directory "x" must still be created first.
        let target = dir + "/x/\u{301}y"
        try PrivateFiles.ensureDirectory(target)
        #expect(permissionBits(dir + "/x") == 0o700)
        #expect(permissionBits(target) == 0o700)
    }

    @Test("ensureDirectory creates missing components 0700 and leaves existing ones alone")
    func createsDirectories() throws {
        let existing = dir + "/existing"
        #expect(mkdir(existing, 0o755) == 0)
        #expect(chmod(existing, 0o755) == 0)
        let target = existing + "/a/b/c"
        try PrivateFiles.ensureDirectory(target)
        for path in [existing + "/a", existing + "/a/b", target] {
            var info = stat()
            #expect(stat(path, &info) == 0)
            #expect(info.st_mode & S_IFMT == S_IFDIR)
            #expect(info.st_mode & 0o7777 == 0o700, "\(path)")
        }
        #expect(permissionBits(existing) == 0o755)
        // Idempotent, and trailing or doubled slashes are fine.
        try PrivateFiles.ensureDirectory(target + "/")
        try PrivateFiles.ensureDirectory(existing + "//a/b")
        #expect(try directoryEntries(target) == [])
    }

    @Test("ensureDirectory fails with STORAGE_ERROR when a regular file is in the way")
    func fileInTheWay() throws {
        let file = dir + "/state"
        try createFile(file, "not a directory", mode: 0o600)

        let atTarget = #expect(throws: StarlineError.self) { try PrivateFiles.ensureDirectory(file) }
        #expect(atTarget?.code == .storage)
        #expect(atTarget?.message.contains("is not a directory") == true)

        let belowTarget = #expect(throws: StarlineError.self) { try PrivateFiles.ensureDirectory(file + "/starline") }
        #expect(belowTarget?.code == .storage)
        #expect(try AtomicFile.read(file) == Array("not a directory".utf8))
    }

    @Test("isGroupOrWorldAccessible looks at the group and other bits only")
    func modeHelper() {
        #expect(!PrivateFiles.isGroupOrWorldAccessible(mode: 0o600))
        #expect(!PrivateFiles.isGroupOrWorldAccessible(mode: 0o700))
        #expect(!PrivateFiles.isGroupOrWorldAccessible(mode: 0o100600))  // S_IFREG | 0600
        #expect(PrivateFiles.isGroupOrWorldAccessible(mode: 0o640))
        #expect(PrivateFiles.isGroupOrWorldAccessible(mode: 0o601))
        #expect(PrivateFiles.isGroupOrWorldAccessible(mode: 0o610))
    }

    // MARK: Directories of another owner, links in place of the suite's files

    /// Another owner is refused (root can chown, which is how this runs as root), and a
    /// sticky shared directory gets advice that fits it; a missing directory passes `checkDirectoryIfPresent`.
    @Test("checkDirectory: another user's directory and a sticky world-writable one are INSECURE_PERMISSIONS")
    func directoryOwnerAndSticky() throws {
        let sticky = dir + "/shared"
        #expect(mkdir(sticky, 0o700) == 0 && chmod(sticky, 0o1777) == 0)
        let shared = #expect(throws: StarlineError.self) { try PrivateFiles.checkDirectory(sticky) }
        #expect(shared?.code == .insecurePermissions && shared?.exitStatus == .storage)
        #expect(shared?.message == "\(sticky) is writable by group or others (mode 1777); keep the file in a directory only you can write")
        try PrivateFiles.checkDirectoryIfPresent(dir + "/missing")
        #expect(throws: StarlineError.self) { try PrivateFiles.checkDirectoryIfPresent(sticky) }
        if geteuid() == 0 {
            let foreign = dir + "/foreign"
            #expect(mkdir(foreign, 0o700) == 0 && chown(foreign, 12345, 12345) == 0)
            let owned = #expect(throws: StarlineError.self) { try PrivateFiles.ensurePrivateDirectory(foreign) }
            #expect(owned?.code == .insecurePermissions)
            #expect(owned?.message == "\(foreign) is owned by another user (uid 12345, not 0)")
            #expect(owned?.details?["path"]?.stringValue == foreign)
        }
    }

    /// A lock file that is a symbolic link is refused, dangling or not; its target is neither
    /// created nor locked.
    @Test("FileLock refuses a symlinked lock file (STORAGE_ERROR naming it) and never creates its target")
    func symlinkedLockFile() throws {
        let lock = dir + "/store.lock"
        let target = dir + "/target"
        #expect(symlink(target, lock) == 0)
        let dangling = #expect(throws: StarlineError.self) { _ = try FileLock(path: lock) }
        #expect(dangling?.code == .storage && dangling?.exitStatus == .storage)
        #expect(dangling?.message == "lock file \(lock) is a symbolic link, which it never is; it was not followed: remove it")
        #expect(dangling?.details?["path"]?.stringValue == lock)
        #expect(access(target, F_OK) != 0)
        try createFile(target, "", mode: 0o600)
        #expect(throws: StarlineError.self) { _ = try FileLock(path: lock) }
        // A real lock file still works.
        #expect(unlink(lock) == 0)
        try FileLock.withLock(lock) {}
    }

    /// The readers of the suite's own files refuse a link instead of reading its target.
    @Test("AtomicFile.read(followLinks: false) and checkPrivate(followLinks: false) refuse a symbolic link")
    func noFollowReaders() throws {
        let target = dir + "/secret"
        try createFile(target, "abc", mode: 0o600)
        let link = dir + "/marker"
        #expect(symlink(target, link) == 0)
        #expect(try AtomicFile.read(link) == Array("abc".utf8), "the default still follows links")
        let read = #expect(throws: StarlineError.self) { _ = try AtomicFile.read(link, followLinks: false, what: "marker") }
        #expect(read?.message == "marker \(link) is a symbolic link, which it never is; it was not followed: remove it")
        #expect(try AtomicFile.read(dir + "/missing", followLinks: false) == nil)
        #expect(try PrivateFiles.checkPrivate(link) == true)
        let check = #expect(throws: StarlineError.self) { try PrivateFiles.checkPrivate(link, followLinks: false, what: "device key") }
        #expect(check?.code == .storage && check?.message.hasPrefix("device key \(link) is a symbolic link") == true)
    }
}
