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
}
