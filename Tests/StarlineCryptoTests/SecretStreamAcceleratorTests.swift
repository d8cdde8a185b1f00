import StarlineCore
import Testing

@testable import StarlineCrypto

/// W2: the bulk chunks of a secret stream move to libcrypto's ChaCha20 and Poly1305 once the stream is past
/// `SecretStream.acceleratedAfter` bytes. The bytes must be libsodium's: a stream sealed on one engine opens
/// on the other, chunk for chunk, across the switch and at every padding boundary; and a forged chunk is
/// refused by libcrypto as by libsodium, leaving the stream able to take the genuine one.
@Suite("SecretStream on libcrypto")
struct SecretStreamAcceleratorTests {
    /// 64 KiB chunks past the switch, then sizes around Poly1305's 16-byte padding and ChaCha20's 64-byte
    /// block, then an empty final chunk.
    static let sizes =
        Array(repeating: 65_536, count: SecretStream.acceleratedAfter / 65_536 + 3) + [1, 15, 16, 17, 63, 64, 65, 1000, 65_535, 0]
    static let additionalData = Sodium.randomBytes(30)

    struct Sealed {
        var header: [UInt8]
        var chunks: [[UInt8]]
        var accelerated: Bool
    }

    func seal(_ plain: [[UInt8]], key: SecretBytes, accelerated: Bool) -> Sealed {
        var encryptor = SecretStreamEncryptor(key: key, accelerated: accelerated)
        var chunks: [[UInt8]] = []
        for (i, chunk) in plain.enumerated() {
            var out = [UInt8](repeating: 0, count: chunk.count + SecretStream.abytes)
            let n = chunk.withUnsafeBytes { m in
                Self.additionalData.withUnsafeBytes { ad in
                    out.withUnsafeMutableBytes { o in
                        encryptor.push(m, into: o.baseAddress!, final: i == plain.count - 1, additionalData: ad)
                    }
                }
            }
            #expect(n == out.count)
            chunks.append(out)
        }
        return Sealed(header: encryptor.header, chunks: chunks, accelerated: encryptor.isAccelerated)
    }

    func pull(_ decryptor: inout SecretStreamDecryptor, _ chunk: [UInt8]) throws -> (plain: [UInt8], isFinal: Bool) {
        var out = [UInt8](repeating: 0, count: chunk.count - SecretStream.abytes)
        let result = try chunk.withUnsafeBytes { c in
            try Self.additionalData.withUnsafeBytes { ad in
                try out.withUnsafeMutableBytes { o in
                    try decryptor.pull(c, into: o.baseAddress ?? UnsafeMutableRawPointer(bitPattern: 1)!, additionalData: ad)
                }
            }
        }
        #expect(result.count == out.count)
        return (out, result.isFinal)
    }

    @Test(arguments: [(true, false), (false, true), (true, true)])
    func w2LibcryptoChunksAreLibsodiumChunks(sealedOnLibcrypto: Bool, openedOnLibcrypto: Bool) throws {
        #expect(SecretStreamAccelerator.library != nil, "libcrypto 3 is on every machine the tools run on (libcurl needs it)")
        let key = SecretBytes(count: SecretStream.keyBytes)
        let plain = Self.sizes.map { Sodium.randomBytes($0) }
        let sealed = seal(plain, key: key, accelerated: sealedOnLibcrypto)
        #expect(sealed.accelerated == sealedOnLibcrypto)
        var decryptor = try SecretStreamDecryptor(key: key, header: sealed.header, accelerated: openedOnLibcrypto)
        var opened: [[UInt8]] = []
        var finals: [Bool] = []
        for chunk in sealed.chunks {
            let (text, isFinal) = try pull(&decryptor, chunk)
            opened.append(text)
            finals.append(isFinal)
        }
        try decryptor.finish()
        let accelerated = decryptor.isAccelerated
        #expect(accelerated == openedOnLibcrypto)
        #expect(opened == plain)
        #expect(finals == Array(repeating: false, count: plain.count - 1) + [true])
    }

    @Test func w2AForgedChunkPastTheSwitchIsRefusedAndTheStreamGoesOn() throws {
        let key = SecretBytes(count: SecretStream.keyBytes)
        let plain = Self.sizes.map { Sodium.randomBytes($0) }
        let sealed = seal(plain, key: key, accelerated: true)
        var decryptor = try SecretStreamDecryptor(key: key, header: sealed.header)
        let target = SecretStream.acceleratedAfter / 65_536 + 1
        for chunk in sealed.chunks[..<target] { _ = try pull(&decryptor, chunk) }
        let accelerated = decryptor.isAccelerated
        #expect(accelerated)
        let genuine = sealed.chunks[target]
        // The tag byte, the first and a middle ciphertext byte, the MAC's last byte; then the next chunk in its place.
        var forgeries = [0, 1, genuine.count / 2, genuine.count - 1].map { i -> [UInt8] in
            var forged = genuine
            forged[i] ^= 0x01
            return forged
        }
        forgeries.append(sealed.chunks[target + 1])
        for forged in forgeries {
            #expect(throws: StarlineError.self) { _ = try pull(&decryptor, forged) }
        }
        #expect(try pull(&decryptor, genuine).plain == plain[target])
        for (i, chunk) in sealed.chunks.enumerated().dropFirst(target + 1) {
            #expect(try pull(&decryptor, chunk).plain == plain[i])
        }
        try decryptor.finish()
    }
}
