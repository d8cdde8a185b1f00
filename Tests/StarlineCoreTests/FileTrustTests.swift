import Glibc
import StarlineCore
import Testing

/// One rule per kind of file (README, Security notes), decided on what fstat says of the descriptor read.
@Suite struct FileTrustTests {
    func info(owner: uid_t, mode: mode_t, type: mode_t = S_IFREG) -> stat {
        var info = stat()
        info.st_uid = owner
        info.st_mode = type | mode
        return info
    }

    func verdict(_ trust: FileTrust, owner: uid_t, mode: mode_t, type: mode_t = S_IFREG) -> String {
        do {
            try trust.check(info(owner: owner, mode: mode, type: type), "/f", what: "file")
            return "ok"
        } catch {
            return error.code.rawValue
        }
    }

    static var me: uid_t { geteuid() }
    /// A uid that is neither root nor this process.
    static var other: uid_t { geteuid() == 65534 ? 65533 : 65534 }

    @Test("own state: ours only, writable by nobody else")
    func ownState() {
        #expect(verdict(.ownState, owner: Self.me, mode: 0o600) == "ok")
        #expect(verdict(.ownState, owner: Self.me, mode: 0o644) == "ok")
        #expect(verdict(.ownState, owner: Self.me, mode: 0o620) == "INSECURE_PERMISSIONS")
        #expect(verdict(.ownState, owner: Self.me, mode: 0o602) == "INSECURE_PERMISSIONS")
        #expect(verdict(.ownState, owner: Self.other, mode: 0o600) == "INSECURE_PERMISSIONS")
        if Self.me != 0 { #expect(verdict(.ownState, owner: 0, mode: 0o600) == "INSECURE_PERMISSIONS") }
    }

    @Test("S3 system files: root's (as /etc/machine-id is on every Linux machine) or ours; others may not write them")
    func s3SystemFilesMayBeRoots() {
        #expect(verdict(.system, owner: 0, mode: 0o444) == "ok")
        #expect(verdict(.system, owner: 0, mode: 0o664) == "ok", "a group of the system may write it")
        #expect(verdict(.system, owner: Self.me, mode: 0o644) == "ok")
        #expect(verdict(.system, owner: 0, mode: 0o666) == "INSECURE_PERMISSIONS")
        #expect(verdict(.system, owner: Self.other, mode: 0o444) == "INSECURE_PERMISSIONS")
    }

    @Test("W4 files that decide whom we trust: root's or ours, writable by neither group nor others")
    func w4TrustDecidingFiles() {
        #expect(verdict(.trustDeciding, owner: 0, mode: 0o644) == "ok")
        #expect(verdict(.trustDeciding, owner: Self.me, mode: 0o600) == "ok")
        #expect(verdict(.trustDeciding, owner: 0, mode: 0o664) == "INSECURE_PERMISSIONS")
        #expect(verdict(.trustDeciding, owner: Self.me, mode: 0o646) == "INSECURE_PERMISSIONS")
        #expect(verdict(.trustDeciding, owner: Self.other, mode: 0o644) == "INSECURE_PERMISSIONS")
    }

    @Test("a directory, FIFO or device is never read as any kind of file")
    func onlyRegularFiles() {
        for trust in [FileTrust.ownState, .system, .trustDeciding] {
            #expect(verdict(trust, owner: Self.me, mode: 0o600, type: S_IFDIR) == "STORAGE_ERROR")
            #expect(verdict(trust, owner: Self.me, mode: 0o600, type: S_IFIFO) == "STORAGE_ERROR")
            #expect(verdict(trust, owner: 0, mode: 0o600, type: S_IFCHR) == "STORAGE_ERROR")
        }
    }

    @Test("TerminalText makes hidden characters visible and leaves ordinary text alone")
    func terminalText() {
        #expect(TerminalText.visible("plain 星 text") == "plain 星 text")
        #expect(TerminalText.visible("a\u{1B}]8;;http://evil\u{7}b") == "a\\x1b]8;;http://evil\\x07b")
        #expect(TerminalText.visible("x\u{202E}y\u{200B}z\u{9B}") == "x\\u202ey\\u200bz\\x9b")
        #expect(TerminalText.visibleLines("line 1\nline\t2\u{1B}") == "line 1\nline\t2\\x1b")
    }
}
