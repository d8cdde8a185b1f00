#if canImport(Glibc)
import Glibc
#endif
import StarlineCore
import StarlinePlatform

/// `--events FILE|-`: one JSON line per event, appended (O_APPEND, so concurrent runs interleave whole lines).
final class EventWriter: @unchecked Sendable {
    // @unchecked: both properties are set once in init; each event is one write(2) to an O_APPEND descriptor
    // (whole lines whatever the thread), or goes through `Output`, which serialises its own writes.
    private let fd: Int32
    private let output: Output?

    init(path: String, output: Output) throws {
        if path == "-" {
            fd = -1
            self.output = output
        } else {
            fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
            guard fd >= 0 else { throw FileBytes.posixError("cannot open events file \(path)", path: path) }
            self.output = nil
        }
    }

    deinit { if fd >= 0 { close(fd) } }

    func write(_ event: JSON) {
        let line = event.serialized() + "\n"
        if let output { output.emitLine(event); output.flush(); return }
        let bytes = Array(line.utf8)
        _ = bytes.withUnsafeBytes { FileBytes.write(fd: fd, $0) }
    }
}
