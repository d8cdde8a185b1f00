import Foundation
import Glibc
import StarlineCore
import StarlineTestSupport
import Testing

/// `-o FILE` output and state files never replace what is not a regular file: as root, a rename over
/// `/dev/null` replaced the machine's /dev/null with a regular file (a README example did it).
@Suite("OutputTarget")
final class OutputTargetTests: Sendable {
    let dir: String
    init() throws { dir = try makeStorageTempDir() }
    deinit { removeStorageTempDir(dir) }

    func fileType(_ path: String) -> mode_t {
        var info = stat()
        return lstat(path, &info) == 0 ? info.st_mode & S_IFMT : 0
    }

    @Test("regular and missing files are replaced; a link's target is replaced and the link kept")
    func regularFilesAndLinks() throws {
        let file = dir + "/out.png", missing = dir + "/new.png", link = dir + "/link.png"
        try createFile(file, "old", mode: 0o644)
        #expect(try OutputTarget.resolve(file) == .replace(file))
        #expect(try OutputTarget.resolve(missing) == .replace(missing))
        #expect(symlink("out.png", link) == 0)
        let resolved = try #require(
            realpath(file, nil).map { p in
                defer { free(p) }; return String(cString: p)
            })
        #expect(try OutputTarget.resolve(link) == .replace(resolved))
        try OutputTarget.write(Array("new".utf8), to: link, mode: 0o666, sync: false, applyUmask: true)
        #expect(fileType(link) == S_IFLNK, "the link is kept")
        #expect(try AtomicFile.read(file) == Array("new".utf8))
    }

    @Test("a FIFO, /dev/null, /dev/stdout and a dangling link are written in place; a directory is refused")
    func specialFilesAreStreams() throws {
        let fifo = dir + "/fifo", dangling = dir + "/dangling", toNull = dir + "/null-link"
        #expect(mkfifo(fifo, 0o600) == 0)
        #expect(try OutputTarget.resolve(fifo) == .stream(fifo))
        #expect(try OutputTarget.resolve("/dev/null") == .stream("/dev/null"))
        #expect(try OutputTarget.resolve("/dev/stdout") == .stream("/dev/stdout"))
        #expect(symlink(dir + "/nowhere", dangling) == 0)
        #expect(try OutputTarget.resolve(dangling) == .stream(dangling))
        #expect(symlink("/dev/null", toNull) == 0)
        #expect(try OutputTarget.resolve(toNull) == .stream(toNull))
        let error = #expect(throws: StarlineError.self) { try OutputTarget.resolve(self.dir) }
        #expect(error?.code == .storage)

        // Written in place: a reader of the FIFO gets the bytes, and it is still a FIFO afterwards.
        // (Read as a stream: AtomicFile.read takes regular files only.)
        let reader = Thread {
            let fd = open(fifo, O_RDONLY | O_CLOEXEC)
            if fd >= 0 { _ = try? FileBytes.read(fd: fd, name: fifo); close(fd) }
        }
        reader.start()
        try OutputTarget.write(Array("through the pipe".utf8), to: fifo, mode: 0o600, sync: false, applyUmask: true)
        #expect(fileType(fifo) == S_IFIFO)
        // (Never the real /dev/null here: a regression would break the machine. A node of our own, as root.)
        let device = dir + "/null"
        if mknod(device, S_IFCHR | 0o666, dev_t(1 << 8 | 3)) == 0 {
            #expect(try OutputTarget.resolve(device) == .stream(device))
            try OutputTarget.write(Array("gone".utf8), to: device, mode: 0o666, sync: false, applyUmask: true)
            #expect(fileType(device) == S_IFCHR)
        }
        try OutputTarget.write(Array("made".utf8), to: dangling, mode: 0o600, sync: false, applyUmask: true)
        #expect(try AtomicFile.read(dir + "/nowhere") == Array("made".utf8), "a redirection through a dangling link creates its target")
    }

    @Test("AtomicFile refuses to rename over a FIFO or a device node, and leaves it as it was")
    func atomicFileRefusesSpecialFiles() throws {
        let fifo = dir + "/fifo"
        #expect(mkfifo(fifo, 0o600) == 0)
        let error = #expect(throws: StarlineError.self) { try AtomicFile.write(Array("x".utf8), to: fifo) }
        #expect(error?.code == .storage)
        #expect(fileType(fifo) == S_IFIFO)
        #expect(try directoryEntries(dir) == ["fifo"], "no temporary file left")
        // A device node of our own (root only may make one): the same character device as /dev/null.
        let device = dir + "/null"
        if mknod(device, S_IFCHR | 0o666, dev_t(1 << 8 | 3)) == 0 {
            let refused = #expect(throws: StarlineError.self) { try AtomicFile.write(Array("x".utf8), to: device) }
            #expect(refused?.code == .storage)
            #expect(fileType(device) == S_IFCHR)
        } else {
            #expect(getuid() != 0, "root can make a device node: \(String(cString: strerror(errno)))")
        }
    }
}
