import Foundation
import StarlineCore
import Testing
@testable import StarlineCrypto

/// One file of the C2SP age testkit (age-testkit/README.md).
struct AgeVector: Sendable, CustomTestStringConvertible {
    var name: String
    var expect: String
    var payloadHash: String?
    var fileKey: [UInt8]
    var passphrases: [String]
    var hasIdentity: Bool
    var armored: Bool
    /// The age file itself, inflated when the vector is `compressed: zlib`.
    var file: [UInt8]
    var testDescription: String { name }

    static let directory = cryptoTestsDirectory + "/age-testkit"

    static let names: [String] = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [])
        .filter { $0 != "README.md" }.sorted()

    static func load(_ name: String) -> AgeVector {
        let data = Array(FileManager.default.contents(atPath: directory + "/" + name)!)
        let split = data.indices.first { data[$0] == 0x0A && $0 + 1 < data.count && data[$0 + 1] == 0x0A }!
        var vector = AgeVector(
            name: name, expect: "", fileKey: [], passphrases: [], hasIdentity: false, armored: false, file: Array(data[(split + 2)...]))
        var compressed = false
        for line in String(decoding: data[..<split], as: UTF8.self).split(separator: "\n") {
            let parts = line.split(separator: ":", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            switch parts[0] {
            case "expect": vector.expect = parts[1]
            case "payload": vector.payloadHash = parts[1]
            case "file key": vector.fileKey = bytes(hex: parts[1])
            case "passphrase": vector.passphrases.append(parts[1])
            case "identity": vector.hasIdentity = true
            case "armored": vector.armored = parts[1] == "yes"
            case "compressed": compressed = parts[1] == "zlib"
            default: break
            }
        }
        if compressed { vector.file = zlibInflate(vector.file) }
        return vector
    }

    /// The error codes that stand for each `expect` class.
    static let codes: [String: Set<String>] = [
        "success": ["success"],
        "no match": ["AGE_WRONG_PASSPHRASE", "AGE_UNSUPPORTED_RECIPIENT"],
        "HMAC failure": ["AGE_HEADER_MAC_INVALID"],
        "header failure": ["AGE_HEADER_INVALID", "AGE_WORK_FACTOR_TOO_HIGH"],
        "payload failure": ["AGE_PAYLOAD_INVALID"],
        "armor failure": ["AGE_ARMOR_INVALID"]
    ]

    var armorMode: AgeArmorMode { armored ? .required : .detect }
}

/// Failures only an X25519 or ML-KEM implementation can see (a share of the wrong length, a low-order
/// point, an argument count of those stanza types): with the file key given, the rest of the file is
/// sound, so the file-key path opens them. They still fail through the public API (no passphrase stanza).
let recipientSpecificHeaderFailures: Set<String> = [
    "hybrid_extra_argument", "hybrid_identity", "hybrid_long_share", "hybrid_low_order", "hybrid_not_canonical_enc",
    "hybrid_short_share", "hybrid_x25519_arg", "x25519_extra_argument", "x25519_identity", "x25519_long_share",
    "x25519_low_order", "x25519_not_canonical_share", "x25519_short_share"
]

/// Payload failures in the last chunk or after it (trailing data, a final chunk followed by another, a
/// missing final flag): age releases the last chunk and then fails; we fail before releasing it.
let failsAtTheEnd: Set<String> = [
    "armor_garbage_encoded", "stream_no_final_full", "stream_no_final_two_chunks_full", "stream_trailing_garbage_long",
    "stream_trailing_garbage_short", "stream_two_final_chunks", "stream_two_final_chunks_full", "stream_two_final_chunks_second"
]

@Suite("age testkit (C2SP CCTV): all 143 vectors")
struct AgeTestkitTests {
    @Test("the testkit is all there")
    func complete() {
        #expect(AgeVector.names.count == 143)
        let kinds = Dictionary(grouping: AgeVector.names.map(AgeVector.load), by: \.expect).mapValues(\.count)
        #expect(
            kinds == ["success": 26, "no match": 13, "HMAC failure": 1, "header failure": 62, "payload failure": 19, "armor failure": 22])
        #expect(AgeVector.names.map(AgeVector.load).filter { !$0.passphrases.isEmpty }.count == 26)
    }

    /// Through the public API with the vector's passphrase (or, for X25519/ML-KEM files, any passphrase).
    @Test("passphrase: the public AgeDecryptor", arguments: AgeVector.names)
    func passphrase(_ name: String) {
        let v = AgeVector.load(name)
        let decryptor = AgeDecryptor(passphrase: secret(v.passphrases.first ?? "password"), armor: v.armorMode)
        var plaintext: [UInt8] = []
        let result = outcome { plaintext = try decryptor.decrypt(v.file) }
        if v.passphrases.isEmpty {
            // Not for us: rejected as unsupported, or for a damage visible before any stanza is opened.
            if ["success", "no match", "HMAC failure", "payload failure"].contains(v.expect) {
                #expect(result == "AGE_UNSUPPORTED_RECIPIENT", "\(name): \(result)")
            } else {
                #expect(AgeVector.codes[v.expect]!.union(["AGE_UNSUPPORTED_RECIPIENT"]).contains(result), "\(name): \(result)")
            }
            return
        }
        #expect(AgeVector.codes[v.expect]!.contains(result), "\(name): expected \(v.expect), got \(result)")
        if v.expect == "success" { #expect(sha256Hex(plaintext) == v.payloadHash) }
        if v.expect == "no match" {
            // A stanza of type "Scrypt" is not ours; every other no-match is the scrypt body not opening.
            #expect(result == (name == "scrypt_uppercase" ? "AGE_UNSUPPORTED_RECIPIENT" : "AGE_WRONG_PASSPHRASE"), "\(name)")
        }
        if name == "scrypt_work_factor_23" { #expect(result == "AGE_WORK_FACTOR_TOO_HIGH") }
    }

    /// The same parser and payload code with the vector's file key: exercises the header, MAC, STREAM and
    /// armor vectors of every recipient type.
    @Test("file key: header, MAC, STREAM and armor checks", arguments: AgeVector.names)
    func fileKey(_ name: String) {
        let v = AgeVector.load(name)
        let collector = ByteCollector()
        let result = outcome {
            try AgeDecryptor.decrypt(
                from: .bytes(v.file), to: collector.writer, fileKey: SecretBytes(copying: v.fileKey), armor: v.armorMode)
        }
        switch v.expect {
        case "no match":
            // The stanza would not open for the vector's identity, but the file key is right.
            #expect(result == "success", "\(name): \(result)")
        case "header failure" where recipientSpecificHeaderFailures.contains(name):
            #expect(result == "success", "\(name): \(result)")
        default:
            #expect(AgeVector.codes[v.expect]!.contains(result), "\(name): expected \(v.expect), got \(result)")
        }
        // For success, the plaintext. For a payload failure, `payload:` is what age releases before it fails;
        // we release whole verified chunks only, and never the chunk the input ends after unless it opens as
        // the final one — so where age releases a last chunk before noticing what is wrong with the end of the
        // file, we release one chunk less (0 bytes for a single chunk).
        if let hash = v.payloadHash {
            if v.expect == "success" || (v.expect == "payload failure" && !failsAtTheEnd.contains(name)) {
                #expect(sha256Hex(collector.bytes) == hash, "\(name): \(collector.bytes.count) bytes written")
            } else if v.expect == "payload failure" {
                #expect(sha256Hex(collector.bytes) != hash, "\(name)")
                #expect(collector.bytes.count % AgePayload.chunkSize == 0, "\(name): \(collector.bytes.count) bytes written")
            }
        }
    }
}
