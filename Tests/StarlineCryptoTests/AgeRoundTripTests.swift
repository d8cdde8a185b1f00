import Foundation
import StarlineCore
import StarlineTestSupport
import Testing
@testable import StarlineCrypto

/// Work factor for most tests: 2^4 (16 KiB of scrypt memory) keeps them fast; the format is the same.
let fastWorkFactor = 4

/// Collects what is written, remembering each write's size.
final class RecordingWriter: @unchecked Sendable {
    var bytes: [UInt8] = []
    var largestWrite = 0
    var onWrite: (Int) -> Void = { _ in }
    var writer: AgeWriter {
        AgeWriter { [self] b in
            bytes.append(contentsOf: b)
            largestWrite = max(largestWrite, b.count)
            onWrite(bytes.count)
        }
    }
}

/// Reads an array in small, uneven pieces (as a pipe may deliver), counting what was consumed.
final class TricklingReader: @unchecked Sendable {
    let data: [UInt8]
    var offset = 0
    init(_ data: [UInt8]) { self.data = data }
    var reader: AgeReader {
        AgeReader { [self] buffer in
            let n = min(buffer.count, data.count - offset, 1 + offset % 7919)
            for i in 0..<n { buffer[i] = data[offset + i] }
            offset += n
            return n
        }
    }
}

@Suite("age: encrypt and decrypt")
struct AgeRoundTripTests {
    static let sizes = [0, 1, 100, 65535, 65536, 65537, 131072, 1 << 20 | 17]

    @Test("round trip at every chunk boundary; the file has the spec's layout", arguments: sizes)
    func roundTrip(_ size: Int) throws {
        let plaintext = pseudoRandomBytes(size, seed: UInt64(size) + 1)
        let file = try AgeEncryptor.encrypt(plaintext, passphrase: secret("correct horse"), workFactor: fastWorkFactor)
        #expect(try AgeDecryptor(passphrase: secret("correct horse")).decrypt(file) == plaintext)

        // age-encryption.org/v1 / -> scrypt SALT 4 / BODY / --- MAC, then nonce and chunks.
        let lines = file.split(separator: 0x0A, maxSplits: 4, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
        #expect(lines[0] == "age-encryption.org/v1")
        let stanza = lines[1].split(separator: " ")
        #expect(stanza.count == 4 && stanza[0] == "->" && stanza[1] == "scrypt" && stanza[3] == "\(fastWorkFactor)")
        #expect(AgeBase64.decode(Array(stanza[2].utf8))?.count == 16)
        #expect(AgeBase64.decode(Array(lines[2].utf8))?.count == 32)
        #expect(lines[3].hasPrefix("--- ") && lines[3].count == 47)
        let headerLength = lines[0...3].reduce(0) { $0 + $1.utf8.count + 1 }
        let chunks = max(1, (size + 65535) / 65536)
        #expect(file.count == headerLength + 16 + size + 16 * chunks)
    }

    @Test("armor: BEGIN, 64-column lines, END; detected and decoded; the binary inside is an age file")
    func armor() throws {
        for size in [0, 1, 47, 48, 100_000] {
            let plaintext = pseudoRandomBytes(size)
            let file = try AgeEncryptor.encrypt(plaintext, passphrase: secret("pw"), workFactor: fastWorkFactor, armored: true)
            let text = String(decoding: file, as: UTF8.self)
            #expect(text.hasPrefix("-----BEGIN AGE ENCRYPTED FILE-----\n"))
            #expect(text.hasSuffix("\n-----END AGE ENCRYPTED FILE-----\n"))
            let body = text.split(separator: "\n").dropFirst().dropLast()
            #expect(body.dropLast().allSatisfy { $0.count == 64 })
            #expect((1...64).contains(body.last!.count))
            let binary = Base64.decode(body.joined())!
            #expect(binary.starts(with: Array("age-encryption.org/v1\n".utf8)))
            #expect(try AgeDecryptor(passphrase: secret("pw")).decrypt(file) == plaintext)
            #expect(try AgeDecryptor(passphrase: secret("pw")).decrypt(binary) == plaintext)
            #expect(thrown { try AgeDecryptor(passphrase: secret("pw"), armor: .binary).decrypt(file) }?.code == .ageHeaderInvalid)
            #expect(thrown { try AgeDecryptor(passphrase: secret("pw"), armor: .required).decrypt(binary) }?.code == .ageArmorInvalid)
            // Whitespace around the block is allowed, and CRLF line ends.
            let crlf = Array(("\n  " + text.replacingOccurrences(of: "\n", with: "\r\n") + "\t\n").utf8)
            #expect(try AgeDecryptor(passphrase: secret("pw")).decrypt(crlf) == plaintext)
        }
    }

    @Test("streaming: pieces of any size in, whole chunks out, plaintext released before the input is read to its end")
    func streaming() throws {
        let plaintext = pseudoRandomBytes(5 * 65536 + 1234)
        let encrypted = RecordingWriter()
        let encryptor = try AgeEncryptor(passphrase: secret("pw"), workFactor: fastWorkFactor, output: encrypted.writer)
        var offset = 0
        var step = 1
        while offset < plaintext.count {
            let n = min(step, plaintext.count - offset)
            try encryptor.write(Array(plaintext[offset..<(offset + n)]))
            offset += n
            step = step * 3 % 100_003 + 1
        }
        try encryptor.finish()
        #expect(encrypted.largestWrite <= 65536 + 16)

        let input = TricklingReader(encrypted.bytes)
        let decrypted = RecordingWriter()
        var consumedAtFirstOutput = -1
        decrypted.onWrite = { _ in if consumedAtFirstOutput < 0 { consumedAtFirstOutput = input.offset } }
        let report = try AgeDecryptor(passphrase: secret("pw")).decrypt(from: input.reader, to: decrypted.writer)
        #expect(decrypted.bytes == plaintext)
        #expect(report == AgeDecryptionReport(plaintextBytes: plaintext.count, workFactor: fastWorkFactor, armored: false))
        #expect(decrypted.largestWrite <= 65536)
        // The first chunk comes out after about two chunks of input (the chunk and the look-ahead), not all six.
        #expect(consumedAtFirstOutput > 0 && consumedAtFirstOutput < 3 * 65552)
    }

    @Test("file descriptor to file descriptor, both ways (8 MiB, armored)")
    func fileDescriptors() throws {
        let dir = TemporaryDirectory("age-fd")
        let plaintext = pseudoRandomBytes(8 << 20, seed: 42)
        #expect(FileManager.default.createFile(atPath: dir.file("plain"), contents: Data(plaintext)))
        func open(_ name: String, _ flags: Int32) -> Int32 { Glibc.open(dir.file(name), flags | O_CLOEXEC, 0o600) }
        let plainIn = open("plain", O_RDONLY), encryptedOut = open("file.age", O_WRONLY | O_CREAT | O_TRUNC)
        try AgeEncryptor.encrypt(
            from: .fileDescriptor(plainIn, name: "plain"), to: .fileDescriptor(encryptedOut, name: "file.age"),
            passphrase: secret("pw"), workFactor: fastWorkFactor, armored: true)
        close(plainIn)
        close(encryptedOut)
        let encryptedIn = open("file.age", O_RDONLY), plainOut = open("decrypted", O_WRONLY | O_CREAT | O_TRUNC)
        let report = try AgeDecryptor(passphrase: secret("pw")).decrypt(
            from: .fileDescriptor(encryptedIn, name: "file.age"),
            to: .fileDescriptor(plainOut, name: "decrypted"))
        close(encryptedIn)
        close(plainOut)
        #expect(report.plaintextBytes == plaintext.count && report.armored)
        #expect(FileManager.default.contents(atPath: dir.file("decrypted")) == Data(plaintext))
        #expect(
            thrown { try AgeDecryptor(passphrase: secret("pw")).decrypt(from: .fileDescriptor(-1, name: "bad"), to: .discarding) }?.code
                == .storage)
    }

    @Test("a wrong passphrase is AGE_WRONG_PASSPHRASE, exit 13; nothing is written")
    func wrongPassphrase() throws {
        let file = try AgeEncryptor.encrypt(Array("secret".utf8), passphrase: secret("right"), workFactor: fastWorkFactor)
        let output = RecordingWriter()
        let error = thrown { try AgeDecryptor(passphrase: secret("wrong")).decrypt(from: .bytes(file), to: output.writer) }
        #expect(error?.code == .ageWrongPassphrase)
        #expect(error?.exitStatus == .locked)
        #expect(error?.message.contains("right") == false)
        #expect(output.bytes.isEmpty)
    }

    @Test("the work factor limit is checked before any scrypt work")
    func workFactorLimit() throws {
        let file = try AgeEncryptor.encrypt([1, 2, 3], passphrase: secret("pw"), workFactor: 5)
        #expect(try AgeDecryptor(passphrase: secret("pw"), maximumWorkFactor: 5).decrypt(file) == [1, 2, 3])
        let limited = thrown { try AgeDecryptor(passphrase: secret("pw"), maximumWorkFactor: 4).decrypt(file) }
        #expect(limited?.code == .ageWorkFactorTooHigh)
        #expect(limited?.exitStatus == .data)
        // Work factor 30 would need 1 TiB and hours: refused at once (the limit is 22 by default).
        let huge = replacing(file, " 5\n", with: " 30\n")
        let clock = ContinuousClock()
        let started = clock.now
        #expect(thrown { try AgeDecryptor(passphrase: secret("pw")).decrypt(huge) }?.code == .ageWorkFactorTooHigh)
        #expect(clock.now - started < .seconds(1))
    }

    @Test("damage anywhere is detected: chunks, truncation, trailing data, the MAC")
    func damage() throws {
        let plaintext = pseudoRandomBytes(3 * 65536 + 10)
        let file = try AgeEncryptor.encrypt(plaintext, passphrase: secret("pw"), workFactor: fastWorkFactor)
        let decryptor = AgeDecryptor(passphrase: secret("pw"))
        let payloadStart = file.count - (plaintext.count + 4 * 16) - 16
        for position in [payloadStart + 3, payloadStart + 16 + 100, payloadStart + 16 + 65552 + 7, file.count - 1] {
            var damaged = file
            damaged[position] ^= 0x20
            // The nonce (a different payload key), the first and second chunk, the final chunk's tag.
            #expect(thrown { try decryptor.decrypt(damaged) }?.code == .agePayloadInvalid, "byte \(position)")
        }
        let cut = Array(file[..<(payloadStart + 16 + 2 * 65552)])
        let truncated = thrown { try decryptor.decrypt(cut) }
        #expect(truncated?.code == .agePayloadInvalid)
        #expect(truncated?.message.contains("truncated") == true)
        let appended = thrown { try decryptor.decrypt(file + [0]) }
        #expect(appended?.code == .agePayloadInvalid)
        #expect(thrown { try decryptor.decrypt(Array(file[..<(payloadStart + 5)])) }?.code == .ageHeaderInvalid)

        // A different, well-formed MAC: the header was altered.
        let macLine = file.firstRange(of: Array("--- ".utf8))!
        var forged = file
        forged.replaceSubrange((macLine.upperBound)..<(macLine.upperBound + 43), with: AgeBase64.encode([UInt8](repeating: 7, count: 32)))
        #expect(thrown { try decryptor.decrypt(forged) }?.code == .ageHeaderMACInvalid)
    }

    @Test("output is unconfirmed until decrypt returns: chunks before the damage were written, verify writes nothing")
    func partialOutput() throws {
        let plaintext = pseudoRandomBytes(5 * 65536)
        var file = try AgeEncryptor.encrypt(plaintext, passphrase: secret("pw"), workFactor: fastWorkFactor)
        let payloadStart = file.count - (plaintext.count + 5 * 16) - 16
        file[payloadStart + 16 + 2 * 65552 + 1] ^= 1  // the third chunk
        let output = RecordingWriter()
        #expect(
            thrown { try AgeDecryptor(passphrase: secret("pw")).decrypt(from: .bytes(file), to: output.writer) }?.code == .agePayloadInvalid
        )
        #expect(output.bytes == Array(plaintext[..<(2 * 65536)]))
        #expect(thrown { try AgeDecryptor(passphrase: secret("pw")).verify(from: .bytes(file)) }?.code == .agePayloadInvalid)
    }

    @Test("errors of the output and input pass through unchanged")
    func ioErrors() throws {
        let file = try AgeEncryptor.encrypt(pseudoRandomBytes(100), passphrase: secret("pw"), workFactor: fastWorkFactor)
        let failingWriter = AgeWriter { _ throws(StarlineError) in throw StarlineError(.writeFailed, "disk full") }
        #expect(thrown { try AgeDecryptor(passphrase: secret("pw")).decrypt(from: .bytes(file), to: failingWriter) }?.code == .writeFailed)
        #expect(
            thrown { try AgeEncryptor.encrypt(from: .bytes([1]), to: failingWriter, passphrase: secret("pw"), workFactor: fastWorkFactor) }?
                .code == .writeFailed)
        let failingReader = AgeReader { _ throws(StarlineError) in throw StarlineError(.storage, "EIO") }
        #expect(thrown { try AgeDecryptor(passphrase: secret("pw")).decrypt(from: failingReader, to: .discarding) }?.code == .storage)
    }

    @Test("a file for other recipients is AGE_UNSUPPORTED_RECIPIENT and names them")
    func unsupported() throws {
        let v = AgeVector.load("x25519")
        let error = thrown { try AgeDecryptor(passphrase: secret("pw")).decrypt(v.file) }
        #expect(error?.code == .ageUnsupportedRecipient)
        #expect(error?.exitStatus == .data)
        #expect(error?.message.contains("X25519") == true)
    }

    @Test("each file gets a new salt, file key and nonce")
    func freshRandomness() throws {
        let a = try AgeEncryptor.encrypt([1], passphrase: secret("pw"), workFactor: fastWorkFactor)
        let b = try AgeEncryptor.encrypt([1], passphrase: secret("pw"), workFactor: fastWorkFactor)
        #expect(a.count == b.count)
        #expect(a.split(separator: 0x0A)[1] != b.split(separator: 0x0A)[1])
        #expect(a.suffix(33) != b.suffix(33))
    }
}

func replacing(_ bytes: [UInt8], _ old: String, with new: String) -> [UInt8] {
    var copy = bytes
    let range = copy.firstRange(of: Array(old.utf8))!
    copy.replaceSubrange(range, with: Array(new.utf8))
    return copy
}
