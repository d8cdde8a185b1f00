import Glibc
import StarlineCore

/// Where the bytes to encrypt or decrypt come from: a function that fills up to `buffer.count` bytes
/// and returns how many it wrote, 0 only at the end of the input. Short reads are fine (a pipe).
///
/// Age files and attachments may be large: the encryptor and decryptor pull through one of these in
/// 64 KiB steps and never hold the whole input.
public struct AgeReader {
    let read: (UnsafeMutableRawBufferPointer) throws(StarlineError) -> Int

    public init(_ read: @escaping (UnsafeMutableRawBufferPointer) throws(StarlineError) -> Int) {
        self.read = read
    }

    /// Reads from an open descriptor (not closed here), retrying EINTR. A failed read is `STORAGE_ERROR`
    /// naming `name`.
    public static func fileDescriptor(_ fd: Int32, name: String) -> AgeReader {
        AgeReader { (buffer: UnsafeMutableRawBufferPointer) throws(StarlineError) -> Int in
            guard let base = buffer.baseAddress, buffer.count > 0 else { return 0 }
            while true {
                let n = Glibc.read(fd, base, buffer.count)
                if n >= 0 { return n }
                if errno != EINTR { throw FileBytes.posixError("cannot read \(name)", path: name) }
            }
        }
    }

    /// Reads the bytes of an array.
    public static func bytes(_ bytes: [UInt8]) -> AgeReader {
        var offset = 0
        return AgeReader { (buffer: UnsafeMutableRawBufferPointer) -> Int in
            let n = Swift.min(buffer.count, bytes.count - offset)
            if n > 0 {
                bytes.withUnsafeBytes { source in
                    buffer.baseAddress!.copyMemory(from: source.baseAddress! + offset, byteCount: n)
                }
            }
            offset += n
            return n
        }
    }
}

/// Where encrypted or decrypted bytes go: called with each piece in order. A thrown error stops the
/// encryption or decryption and is passed on unchanged.
public struct AgeWriter {
    let write: (UnsafeRawBufferPointer) throws(StarlineError) -> Void

    public init(_ write: @escaping (UnsafeRawBufferPointer) throws(StarlineError) -> Void) {
        self.write = write
    }

    /// Writes to an open descriptor (not closed here), retrying short writes and EINTR. A failed write is
    /// `STORAGE_ERROR` naming `name`.
    public static func fileDescriptor(_ fd: Int32, name: String) -> AgeWriter {
        AgeWriter { (bytes: UnsafeRawBufferPointer) throws(StarlineError) in
            if !FileBytes.write(fd: fd, bytes) { throw FileBytes.posixError("cannot write \(name)", path: name) }
        }
    }

    /// Drops everything: for checking a file without keeping its plaintext (`AgeDecryptor.verify`).
    public static var discarding: AgeWriter { AgeWriter { _ in } }

    func write(_ bytes: [UInt8]) throws(StarlineError) {
        try bytes.withBytes { (b) throws(StarlineError) in try write(b) }
    }
}

/// Collects what is written into one array (for small files: `AgeEncryptor.encrypt(_:)`).
final class ByteCollector {
    var bytes: [UInt8] = []
    var writer: AgeWriter { AgeWriter { [self] b in bytes.append(contentsOf: b) } }
}
