import Foundation
import StarlineCore
import StarlineTestSupport
import Testing

@testable import StarlineCrypto

/// W2: an attachment's digest is SHA-256, computed by libcrypto where it loads and by libsodium otherwise.
/// Both engines must give FIPS 180-4's digest, whatever the pieces the bytes come in.
@Suite("SHA-256 stream (libcrypto and libsodium)")
struct SHA256StreamTests {
    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    /// FIPS 180-4 examples (NIST's "SHA256.pdf"): the empty message, "abc" and the two-block message.
    static let vectors: [(String, String)] = [
        ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        (
            "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
        )
    ]

    @Test("W2 both engines give the FIPS 180-4 digests", arguments: [true, false])
    func w2VectorsOnBothEngines(_ libcrypto: Bool) {
        for (message, digest) in Self.vectors {
            #expect(Self.hex(SHA256Stream.hash(Array(message.utf8), libcrypto: libcrypto)) == digest, "\(message)")
        }
        #expect(SHA256Stream(libcrypto: libcrypto).isAccelerated == libcrypto, "libcrypto 3 is installed here (libssl3)")
    }

    @Test("W2 bytes fed in uneven pieces give sha256sum's digest, on either engine")
    func w2PiecesMatchSha256sum() throws {
        let bytes = Sodium.randomBytes(3 << 20 | 4321)
        let dir = TemporaryDirectory("sha256")
        #expect(FileManager.default.createFile(atPath: dir.file("bytes"), contents: Data(bytes)))
        let run = try Tools.runInstalled("/usr/bin/sha256sum", [dir.file("bytes")])
        let expected = String(run.stdoutText.prefix(64))
        #expect(run.status == 0 && expected.count == 64, "\(run.stderrText)")
        for libcrypto in [true, false] {
            var stream = SHA256Stream(libcrypto: libcrypto)
            var offset = 0, piece = 1
            while offset < bytes.count {
                let end = min(bytes.count, offset + piece)
                bytes[offset..<end].withUnsafeBytes { stream.update($0) }
                offset = end
                piece = piece * 3 + 7
            }
            #expect(Self.hex(stream.finalize()) == expected, "libcrypto: \(libcrypto)")
        }
    }
}
