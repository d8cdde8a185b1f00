import Foundation
import Glibc
import StarlineCore
import StarlineTestSupport
import Testing

// MARK: - Helpers shared by the storage tests (SQLite, files, locks)

func removeStorageTempDir(_ path: String) {
    try? FileManager.default.removeItem(atPath: path)
}

func directoryEntries(_ path: String) throws -> [String] {
    try FileManager.default.contentsOfDirectory(atPath: path).sorted()
}

func createFile(_ path: String, _ contents: String, mode: mode_t) throws {
    let fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, mode)
    guard fd >= 0 else { throw StarlineError(.storage, "cannot create \(path)") }
    defer { close(fd) }
    let bytes = Array(contents.utf8)
    _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    fchmod(fd, mode)  // exact mode, whatever the umask
}

// MARK: - AtomicFile

@Suite("AtomicFile")
final class AtomicFileTests: Sendable {
    /// A fresh private directory per test (Swift Testing makes a new suite instance for each test).
    let dir: String
    init() throws { dir = try makeStorageTempDir() }
    deinit { removeStorageTempDir(dir) }

    @Test("write creates a new file with the exact content and mode 0600, leaving no temp file")
    func createsFile() throws {
        let path = dir + "/state.json"
        let content: [UInt8] = Array("{\"a\":1}\n".utf8) + [0, 255, 10]
        try AtomicFile.write(content, to: path)
        #expect(try AtomicFile.read(path) == content)
        #expect(permissionBits(path) == 0o600)
        #expect(try directoryEntries(dir) == ["state.json"])
    }

    @Test("write replaces an existing 0644 file: new content, mode set exactly")
    func replacesFile() throws {
        let path = dir + "/workspace.json"
        try createFile(path, "old old old old content", mode: 0o644)
        try AtomicFile.write(Array("new".utf8), to: path)
        #expect(try AtomicFile.read(path) == Array("new".utf8))
        #expect(permissionBits(path) == 0o600)

        // An explicit mode is applied exactly, independent of the umask.
        try AtomicFile.write([1, 2, 3], to: path, mode: 0o640)
        #expect(permissionBits(path) == 0o640)
        #expect(try AtomicFile.read(path) == [1, 2, 3])
        #expect(try directoryEntries(dir) == ["workspace.json"])
    }

    @Test("empty and large contents round-trip")
    func emptyAndLarge() throws {
        let path = dir + "/blob"
        try AtomicFile.write([], to: path)
        #expect(try AtomicFile.read(path) == [])

        var large = [UInt8](repeating: 0, count: 3 * 1024 * 1024 + 17)
        for i in large.indices { large[i] = UInt8(truncatingIfNeeded: i &* 2_654_435_761 >> 7) }
        try AtomicFile.write(large, to: path)
        #expect(try AtomicFile.read(path) == large)
    }

    @Test("write to a path that is a directory fails cleanly and leaves the directory intact")
    func targetIsDirectory() throws {
        let target = dir + "/target"
        try FileManager.default.createDirectory(atPath: target, withIntermediateDirectories: false)
        try createFile(target + "/inside", "keep me", mode: 0o600)

        let error = #expect(throws: StarlineError.self) {
            try AtomicFile.write(Array("x".utf8), to: target)
        }
        #expect(error?.code == .storage)
        #expect(error?.message.hasPrefix("cannot write \(target): ") == true)
        #expect(error?.details?["path"]?.stringValue == target)
        #expect(error?.details?["errno"]?.intValue != nil)
        // No temp file left beside it, and the directory and its content are untouched.
        #expect(try directoryEntries(dir) == ["target"])
        #expect(try AtomicFile.read(target + "/inside") == Array("keep me".utf8))
    }

    @Test("write into a missing directory fails with ENOENT and creates nothing")
    func missingDirectory() throws {
        let error = #expect(throws: StarlineError.self) {
            try AtomicFile.write([1], to: dir + "/no-such-dir/file")
        }
        #expect(error?.code == .storage)
        #expect(error?.details?["errno"]?.intValue == Int64(ENOENT))
        #expect(try directoryEntries(dir) == [])
    }

    @Test("write below a regular file fails and leaves that file's content intact")
    func fileInTheWay() throws {
        let file = dir + "/config.json"
        try createFile(file, "{\"keep\":true}", mode: 0o600)
        let error = #expect(throws: StarlineError.self) {
            try AtomicFile.write([1], to: file + "/child")
        }
        #expect(error?.code == .storage)
        #expect(error?.details?["errno"]?.intValue == Int64(ENOTDIR))
        #expect(try AtomicFile.read(file) == Array("{\"keep\":true}".utf8))
        #expect(try directoryEntries(dir) == ["config.json"])
    }

    @Test("read returns nil for a missing file and throws STORAGE_ERROR for a directory")
    func readErrors() throws {
        #expect(try AtomicFile.read(dir + "/missing") == nil)
        let error = #expect(throws: StarlineError.self) { try AtomicFile.read(dir) }
        #expect(error?.code == .storage)
        #expect(error?.message.hasPrefix("cannot read \(dir): ") == true)
        #expect(error?.details?["errno"]?.intValue == Int64(EISDIR))
    }

    @Test("a symlink at the target is replaced by a regular file; its destination is untouched")
    func symlinkReplaced() throws {
        let real = dir + "/real"
        let link = dir + "/link"
        try createFile(real, "original", mode: 0o600)
        #expect(symlink(real, link) == 0)
        try AtomicFile.write(Array("new".utf8), to: link)
        var info = stat()
        #expect(lstat(link, &info) == 0)
        #expect(info.st_mode & S_IFMT == S_IFREG)
        #expect(try AtomicFile.read(real) == Array("original".utf8))
        #expect(try AtomicFile.read(link) == Array("new".utf8))
    }
}
