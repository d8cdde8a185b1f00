import Glibc
import StarlineCore

/// The S13 revocation marker of one key: a file beside the database (`sessions.db.revoked-<digest>`)
/// naming a session whose delete failed. A file, not a row, because the database write may be what
/// failed — and it survives the rollback of a throwing `withState` body.
struct RevocationMarker {
    let path: String
    /// The directory holding it, synced after a removal.
    let directory: String

    /// The session id it names, or nil when there is none ("" for a marker without a readable id).
    func read() throws(StarlineError) -> String? {
        // Never through a link: the tools make none in the state directory, so one there is not theirs to trust.
        guard let bytes = try AtomicFile.read(path, followLinks: false, what: "revocation marker") else { return nil }
        var text = String(decoding: bytes, as: UTF8.self)
        while let last = text.last, last == "\n" || last == " " || last == "\r" { text.removeLast() }
        return text
    }

    /// Writes the marker naming `sessionId`, atomically (temp file + fsync + rename + fsync(dir)), 0600.
    func write(sessionId: String) throws(StarlineError) {
        try AtomicFile.write(Array((sessionId + "\n").utf8), to: path, mode: 0o600)
    }

    /// Removes the marker; no-op when there is none.
    func remove() throws(StarlineError) {
        if unlink(path) != 0 {
            let e = errno
            if e == ENOENT { return }
            throw StarlineError(
                .storage, "cannot remove the revocation marker \(path): \(String(cString: strerror(e)))",
                details: .object([("path", .string(path)), ("errno", .int(Int64(e)))]))
        }
        // Make the removal durable; a failure here leaves at worst a marker that a later clear removes.
        let dirFD = Glibc.open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dirFD >= 0 {
            _ = fsync(dirFD)
            close(dirFD)
        }
    }
}
