import StarlineCore
import Testing
@testable import StarlineCrypto

@Suite("HMAC-SHA-256, HKDF, scrypt, ChaCha20-Poly1305")
struct CryptoPrimitivesTests {
    @Test("HMAC-SHA-256: RFC 4231 test case 2, one-shot and incremental")
    func hmac() {
        let key = secret("Jefe")
        let message = Array("what do ya want for nothing?".utf8)
        let expected = "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        #expect(hex(HMACSHA256.authenticate(message, key: key)) == expected)
        var mac = HMACSHA256(key: key)
        mac.update(Array(message[0..<5]))
        mac.update(Array(message[5...]))
        #expect(hex(mac.finalize()) == expected)
        #expect(HMACSHA256.verify(bytes(hex: expected), for: message, key: key))
        #expect(!HMACSHA256.verify(bytes(hex: expected), for: message + [0], key: key))
    }

    struct HKDFCase: Sendable, CustomTestStringConvertible {
        var name: String
        var ikm: [UInt8], salt: [UInt8], info: [UInt8], length: Int
        var prk: String, okm: String
        var testDescription: String { name }
    }

    /// RFC 5869 appendix A, test cases 1-3 (SHA-256).
    static let hkdfCases: [HKDFCase] = [
        HKDFCase(
            name: "RFC 5869 A.1 basic", ikm: [UInt8](repeating: 0x0B, count: 22), salt: Array(0x00...0x0C), info: Array(0xF0...0xF9),
            length: 42, prk: "077709362c2e32df0ddc3f0dc47bba6390b6c73bb50f9c3122ec844ad7c2b3e5",
            okm: "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865"),
        HKDFCase(
            name: "RFC 5869 A.2 longer inputs and outputs", ikm: Array(0x00...0x4F), salt: Array(0x60...0xAF), info: Array(0xB0...0xFF),
            length: 82, prk: "06a6b88c5853361a06104c9ceb35b45cef760014904671014a193f40c15fc244",
            okm:
                "b11e398dc80327a1c8e7f78c596a49344f012eda2d4efad8a050cc4c19afa97c59045a99cac7827271cb41c65e590e09da3275600c2f09b8367793a9aca3db71cc30c58179ec3e87c14c01d5c1f3434f1d87"
        ),
        HKDFCase(
            name: "RFC 5869 A.3 zero-length salt and info", ikm: [UInt8](repeating: 0x0B, count: 22), salt: [], info: [],
            length: 42, prk: "19ef24a32c717b167f33a91d6f648bdf96596776afdb6377ac434c1c293ccb04",
            okm: "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8")
    ]

    @Test("HKDF-SHA-256 matches RFC 5869", arguments: hkdfCases)
    func hkdf(_ c: HKDFCase) {
        let ikm = SecretBytes(copying: c.ikm)
        #expect(hex(HKDF.extract(salt: c.salt, ikm: ikm).copyBytes()) == c.prk)
        #expect(hex(HKDF.deriveKey(ikm: ikm, salt: c.salt, info: c.info, length: c.length).copyBytes()) == c.okm)
        #expect(hex(HKDF.expand(prk: SecretBytes(copying: bytes(hex: c.prk)), info: c.info, length: c.length).copyBytes()) == c.okm)
    }

    @Test("scrypt matches RFC 7914 section 12 (N = 16 and N = 1024)")
    func scrypt() throws {
        let a = try Scrypt.deriveKey(passphrase: secret(""), salt: [], logN: 4, r: 1, p: 1, length: 64)
        #expect(
            hex(a.copyBytes())
                == "77d6576238657b203b19ca42c18a0497f16b4844e3074ae8dfdffa3fede21442fcd0069ded0948f8326a753a0fc81f17e8d3e0fb2e0d3628cf35e20c38d18906"
        )
        let b = try Scrypt.deriveKey(passphrase: secret("password"), salt: Array("NaCl".utf8), logN: 10, r: 8, p: 16, length: 64)
        #expect(
            hex(b.copyBytes())
                == "fdbabe1c9d3472007856e7190d01e9fe7c6ad7cbc8237830e77376634b3731622eaf30d92e22a3886ff109279d9830dac727afb94a83ee6d8360cbdfa2cc0640"
        )
        #expect(thrown { try Scrypt.deriveKey(passphrase: secret("x"), salt: [], logN: 0) }?.code == .data)
    }

    @Test("ChaCha20-Poly1305 IETF: round trip; a wrong nonce, key or bit fails")
    func chacha() throws {
        let key = SecretBytes(count: 32)
        let nonce = [UInt8](repeating: 0, count: 11) + [1]
        for message in [[], [0x42], pseudoRandomBytes(1000)] as [[UInt8]] {
            let sealed = ChaCha20Poly1305.seal(message, nonce: nonce, key: key)
            #expect(sealed.count == message.count + 16)
            #expect(try ChaCha20Poly1305.open(sealed, nonce: nonce, key: key) == message)
            #expect(
                thrown { try ChaCha20Poly1305.open(sealed, nonce: [UInt8](repeating: 0, count: 12), key: key) }?.code
                    == .authenticationFailed)
            #expect(thrown { try ChaCha20Poly1305.open(sealed, nonce: nonce, key: SecretBytes(count: 32)) }?.code == .authenticationFailed)
            var flipped = sealed
            flipped[flipped.count / 2] ^= 1
            #expect(thrown { try ChaCha20Poly1305.open(flipped, nonce: nonce, key: key) }?.code == .authenticationFailed)
        }
        #expect(thrown { try ChaCha20Poly1305.open([1, 2, 3], nonce: nonce, key: key) }?.code == .authenticationFailed)
    }

    @Test("age base64 is strict: canonical only, no padding in the header; canonical padding in the armor")
    func base64() {
        #expect(AgeBase64.encode(Array("age".utf8)) == Array("YWdl".utf8))
        #expect(AgeBase64.encode([0xFF]) == Array("/w".utf8))
        #expect(AgeBase64.decode(Array("/w".utf8)) == [0xFF])
        #expect(AgeBase64.decode(Array("/x".utf8)) == nil, "non-zero pad bits")
        #expect(AgeBase64.decode(Array("/w==".utf8)) == nil, "padding")
        #expect(AgeBase64.decode(Array("YWdlY".utf8)) == nil, "a lone sixth-bit character")
        #expect(AgeBase64.decode(Array("YW-l".utf8)) == nil, "URL alphabet")
        #expect(AgeBase64.decode([]) == [])
        #expect(AgeBase64.decodePadded(Array("/w==".utf8)) == [0xFF])
        #expect(AgeBase64.decodePadded(Array("/x==".utf8)) == nil)
        #expect(AgeBase64.decodePadded(Array("/w".utf8)) == nil, "missing padding")
        #expect(AgeBase64.decodePadded(Array("/w=a".utf8)) == nil)
        #expect(AgeBase64.decodePadded(Array("a===".utf8)) == nil)
        #expect(AgeBase64.encodePadded([0xFF]) == Array("/w==".utf8))
        for n in 0..<40 {
            let data = pseudoRandomBytes(n, seed: UInt64(n + 1))
            #expect(AgeBase64.decode(AgeBase64.encode(data)) == data)
            #expect(AgeBase64.decodePadded(AgeBase64.encodePadded(data)) == data)
        }
    }
}
