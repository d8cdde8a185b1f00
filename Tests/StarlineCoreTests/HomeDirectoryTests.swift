import Foundation
import Testing
@testable import StarlineCore
import StarlineTestSupport

/// The home directory when $HOME is unset: the passwd file, read directly (not getpwuid, which a static
/// glibc cannot serve from NSS modules).
@Suite struct HomeDirectoryTests {
    let dir = TemporaryDirectory("home")
    var passwd: String { dir.file("passwd") }

    init() throws {
        try Data(
            """
            root:x:0:0:root:/root:/bin/bash
            #old:x:1000:1000::/home/commented-out:/bin/sh
            broken:x:1000
            u:x:1000:1000:First User,,,:/home/u:/bin/sh
            dup:x:1000:1000::/home/dup:/bin/sh
            nohome:x:1001:1001:::/bin/sh
            colon:x:1002:1002:gecos:/home/c:/bin/sh:extra
            """.utf8
        ).write(to: URL(fileURLWithPath: passwd))
    }

    @Test("$HOME, when absolute, wins over the passwd file (unchanged behaviour)")
    func homeSet() {
        #expect(StarlinePaths.homeDirectory(["HOME": "/h"], passwdFile: passwd, uid: 1000) == "/h")
        #expect(StarlinePaths.homeDirectory(["HOME": "/h"], passwdFile: dir.file("missing"), uid: 1000) == "/h")
    }

    @Test("without $HOME (or with a relative one) the uid's first well-formed passwd entry gives the directory")
    func passwdFallback() {
        #expect(StarlinePaths.homeDirectory([:], passwdFile: passwd, uid: 1000) == "/home/u")
        #expect(StarlinePaths.homeDirectory(["HOME": ""], passwdFile: passwd, uid: 1000) == "/home/u")
        #expect(StarlinePaths.homeDirectory(["HOME": "relative"], passwdFile: passwd, uid: 0) == "/root")
        #expect(StarlinePaths.homeDirectory([:], passwdFile: passwd, uid: 1002) == "/home/c")
    }

    @Test("no entry, an empty directory field or no passwd file: /")
    func lastResort() {
        #expect(StarlinePaths.homeDirectory([:], passwdFile: passwd, uid: 4242) == "/")
        #expect(StarlinePaths.homeDirectory([:], passwdFile: passwd, uid: 1001) == "/")
        #expect(StarlinePaths.homeDirectory([:], passwdFile: dir.file("missing"), uid: 0) == "/")
    }

    @Test("the paths of a process without HOME or XDG variables sit under the passwd home")
    func pathsFromPasswd() {
        let home = StarlinePaths.passwdHomeDirectory(uid: getuid(), passwdFile: "/etc/passwd") ?? "/"
        let paths = StarlinePaths(environment: [:])
        #expect(paths.config == home + "/.config/starline")
        #expect(paths.data == home + "/.local/share/starline")
    }
}
