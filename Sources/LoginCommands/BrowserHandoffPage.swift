#if canImport(Glibc)
import Glibc
#endif
import StarlineCore
import StarlineCrypto

/// What the browser is started with instead of the authorize URL: a private page that forwards to it.
///
/// Any local user can read a process's argv (`/proc/PID/cmdline` is world-readable), and the authorize URL
/// carries the flow's `state` and PKCE `code_challenge`: with them another user could approve a sign-in as
/// themselves and deliver the callback to our listener (login CSRF), or abort ours. The page is a file only
/// its owner can read (0600, in the 0700 runtime directory), so argv shows nothing but its name. It is
/// removed when the sign-in ends, and by a signal (`Interrupts`).
final class BrowserHandoffPage {
    let path: String
    private let slot: Int32
    /// True while the file at `path` is ours to remove: never after a failed open (the name may be someone
    /// else's file), never twice.
    private var owned = false

    /// Writes the page for `url` in `directory` (created 0700 when missing; refused when others control it).
    init(forwardingTo url: String, in directory: String) throws {
        try PrivateFiles.ensurePrivateDirectory(directory)
        let name = "sign-in-" + Base64.encodeURL(Sodium.randomBytes(12)) + ".html"
        path = directory + "/" + name
        slot = Interrupts.track(path)
        // O_EXCL | O_NOFOLLOW: never write through a file or link someone else put there.
        let fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            let failure = FileBytes.posixError("cannot write \(path)", path: path)
            Interrupts.untrack(slot)
            throw failure
        }
        owned = true
        let written = Self.html(url).withUnsafeBytes { FileBytes.write(fd: fd, $0) }
        let failure = written ? nil : FileBytes.posixError("cannot write \(path)", path: path)
        close(fd)
        if let failure {
            remove()
            throw failure
        }
    }

    /// `file://` and the path, each component percent-encoded.
    var fileURL: String {
        "file://"
            + path.splitAtScalar("/", omittingEmptySubsequences: false).map { PercentEncoding.encode(String($0)) }.joined(separator: "/")
    }

    func remove() {
        guard owned else { return }
        owned = false
        unlink(path)
        Interrupts.untrack(slot)
    }

    deinit { remove() }

    /// A meta refresh (every browser follows it, from file: to http: too) and a link for one that does not;
    /// no script, no referrer.
    static func html(_ url: String) -> [UInt8] {
        let target = HTMLText.escape(url)
        return Array(
            """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8"><meta name="referrer" content="no-referrer">
            <meta http-equiv="refresh" content="0;url=\(target)"><title>Starline sign-in</title></head>
            <body style="font-family:system-ui,sans-serif;margin:3rem"><p>Opening the Starline sign-in… <a href="\(target)">Continue</a></p></body></html>

            """.utf8)
    }
}
