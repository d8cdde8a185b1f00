import StarlineCore
import Testing
import StarlineCrypto

private func hex(_ bytes: [UInt8]) -> String {
    bytes.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
}

private func bytes(hex: String) -> [UInt8] {
    var result: [UInt8] = []
    var index = hex.startIndex
    while index < hex.endIndex {
        let next = hex.index(index, offsetBy: 2)
        result.append(UInt8(hex[index..<next], radix: 16)!)
        index = next
    }
    return result
}

@Suite("Sodium basics and SecretBytes")
struct SodiumBasicsTests {
    @Test("randomBytes returns the requested count and differs between calls")
    func random() {
        #expect(Sodium.randomBytes(0) == [])
        let a = Sodium.randomBytes(32)
        let b = Sodium.randomBytes(32)
        #expect(a.count == 32)
        #expect(a != b)
    }

    @Test("constantTimeEquals compares contents and lengths")
    func constantTime() {
        #expect(Sodium.constantTimeEquals([1, 2, 3], [1, 2, 3]))
        #expect(!Sodium.constantTimeEquals([1, 2, 3], [1, 2, 4]))
        #expect(!Sodium.constantTimeEquals([1, 2, 3], [1, 2]))
        #expect(Sodium.constantTimeEquals([], []))
    }

    @Test("wipe zeroes the buffer in place")
    func wipe() {
        var secret: [UInt8] = Array("hunter2".utf8)
        Sodium.wipe(&secret)
        #expect(secret == [UInt8](repeating: 0, count: 7))
    }

    @Test("SecretBytes copies, compares in constant time, and never prints its bytes")
    func secretBytes() {
        let raw: [UInt8] = [0xde, 0xad, 0xbe, 0xef, 0x42]
        let secret = SecretBytes(copying: raw)
        #expect(secret.count == 5)
        #expect(secret.withUnsafeBytes { Array($0) } == raw)
        #expect(secret.copyBytes() == raw)
        #expect(secret == SecretBytes(copying: raw))
        #expect(secret != SecretBytes(copying: [0xde, 0xad, 0xbe, 0xef, 0x43]))
        #expect(secret != SecretBytes(copying: [0xde, 0xad]))

        #expect(secret.description == "SecretBytes(5 bytes)")
        #expect("\(secret)" == "SecretBytes(5 bytes)")
        #expect(String(reflecting: secret) == "SecretBytes(5 bytes)")
        var dumped = ""
        dump(secret, to: &dumped)
        for rendering in ["\(secret)", String(reflecting: secret), dumped] {
            #expect(!rendering.contains("222"))  // 0xde
            #expect(!rendering.lowercased().contains("dead"))
        }

        let random1 = SecretBytes(count: 32)
        let random2 = SecretBytes(count: 32)
        #expect(random1.count == 32)
        #expect(random1 != random2)
        #expect(SecretBytes(count: 0) == SecretBytes(copying: []))
    }

    @Test("SecretBytes(count:initializingWith:) rethrows the initializer's error")
    func secretBytesInitializerThrows() {
        struct Failed: Error {}
        #expect(throws: Failed.self) {
            _ = try SecretBytes(count: 16) { (_: UnsafeMutableRawBufferPointer) throws(Failed) in throw Failed() }
        }
    }
}

@Suite("XChaCha20Poly1305")
struct XChaCha20Poly1305Tests {
    @Test("seal/open round trip, including empty plaintext and additional data")
    func roundTrip() throws {
        let key = XChaCha20Poly1305.generateKey()
        #expect(key.count == XChaCha20Poly1305.keyBytes)
        for plaintext in [[], Array("vault entry ✓".utf8), Sodium.randomBytes(10_000)] {
            let sealed = XChaCha20Poly1305.seal(plaintext, additionalData: Array("v1".utf8), key: key)
            #expect(sealed.count == plaintext.count + 24 + 16)
            #expect(XChaCha20Poly1305.overhead == 40)
            #expect(try XChaCha20Poly1305.open(sealed, additionalData: Array("v1".utf8), key: key) == plaintext)
        }
    }

    @Test("flipping any one byte of nonce, ciphertext or tag fails with AUTHENTICATION_FAILED")
    func tamperingDetected() throws {
        let key = XChaCha20Poly1305.generateKey()
        let sealed = XChaCha20Poly1305.seal(Array("secret".utf8), key: key)
        #expect(sealed.count == 24 + 6 + 16)
        for index in sealed.indices {
            var altered = sealed
            altered[index] ^= 0x01
            let error = #expect(throws: StarlineError.self, "byte \(index)") {
                try XChaCha20Poly1305.open(altered, key: key)
            }
            #expect(error?.code == .authenticationFailed)
            #expect(error?.code.rawValue == "AUTHENTICATION_FAILED")
        }
        // Truncated input, and appended bytes, fail too.
        #expect(throws: StarlineError.self) { try XChaCha20Poly1305.open(Array(sealed.dropLast()), key: key) }
        #expect(throws: StarlineError.self) { try XChaCha20Poly1305.open(sealed + [0], key: key) }
        #expect(throws: StarlineError.self) { try XChaCha20Poly1305.open(Array(sealed.prefix(39)), key: key) }
    }

    @Test("wrong additional data or wrong key fails")
    func wrongContextOrKey() throws {
        let key = XChaCha20Poly1305.generateKey()
        let sealed = XChaCha20Poly1305.seal([1, 2, 3], additionalData: [9], key: key)
        let wrongAD = #expect(throws: StarlineError.self) {
            try XChaCha20Poly1305.open(sealed, additionalData: [8], key: key)
        }
        #expect(wrongAD?.code == .authenticationFailed)
        let missingAD = #expect(throws: StarlineError.self) { try XChaCha20Poly1305.open(sealed, key: key) }
        #expect(missingAD?.code == .authenticationFailed)
        let wrongKey = #expect(throws: StarlineError.self) {
            try XChaCha20Poly1305.open(sealed, additionalData: [9], key: XChaCha20Poly1305.generateKey())
        }
        #expect(wrongKey?.code == .authenticationFailed)
    }

    @Test("sealing the same plaintext twice gives different output (fresh random nonce)")
    func freshNonce() {
        let key = XChaCha20Poly1305.generateKey()
        let a = XChaCha20Poly1305.seal(Array("same".utf8), key: key)
        let b = XChaCha20Poly1305.seal(Array("same".utf8), key: key)
        #expect(a != b)
        #expect(Array(a.prefix(24)) != Array(b.prefix(24)))
    }

    @Test("secret plaintexts seal and open through SecretBytes")
    func secretVariants() throws {
        let wrapping = XChaCha20Poly1305.generateKey()
        let dataKey = SecretBytes(count: 32)
        let wrapped = XChaCha20Poly1305.seal(dataKey, additionalData: Array("key".utf8), key: wrapping)
        let unwrapped = try XChaCha20Poly1305.openSecret(wrapped, additionalData: Array("key".utf8), key: wrapping)
        #expect(unwrapped == dataKey)
        var altered = wrapped
        altered[30] ^= 0x80
        let error = #expect(throws: StarlineError.self) {
            try XChaCha20Poly1305.openSecret(altered, additionalData: Array("key".utf8), key: wrapping)
        }
        #expect(error?.code == .authenticationFailed)
    }
}

@Suite("SecretStream")
struct SecretStreamTests {
    private func encrypt(_ chunks: [[UInt8]], key: SecretBytes) -> (header: [UInt8], chunks: [[UInt8]]) {
        var encryptor = SecretStreamEncryptor(key: key)
        var out: [[UInt8]] = []
        for (i, chunk) in chunks.enumerated() {
            out.append(encryptor.push(chunk, final: i == chunks.count - 1))
        }
        return (encryptor.header, out)
    }

    @Test("several chunks and an empty final chunk round-trip")
    func roundTrip() throws {
        let key = SecretBytes(count: SecretStream.keyBytes)
        let plain: [[UInt8]] = [Array("first".utf8), Sodium.randomBytes(70_000), [0, 0, 0], []]
        let (header, encrypted) = encrypt(plain, key: key)
        #expect(header.count == SecretStream.headerBytes)
        #expect(SecretStream.abytes == 17)
        #expect(encrypted.map(\.count) == plain.map { $0.count + SecretStream.abytes })

        var decryptor = try SecretStreamDecryptor(key: key, header: header)
        var decrypted: [[UInt8]] = []
        var finals: [Bool] = []
        for chunk in encrypted {
            let (plaintext, isFinal) = try decryptor.pull(chunk)
            decrypted.append(plaintext)
            finals.append(isFinal)
        }
        try decryptor.finish()
        #expect(decrypted == plain)
        #expect(finals == [false, false, false, true])

        // Nothing may follow the final chunk.
        let after = #expect(throws: StarlineError.self) { try decryptor.pull(encrypted[0]) }
        #expect(after?.code == .authenticationFailed)
    }

    @Test("reordered chunks fail authentication")
    func reordered() throws {
        let key = SecretBytes(count: SecretStream.keyBytes)
        let (header, encrypted) = encrypt([[1], [2], [3]], key: key)
        var decryptor = try SecretStreamDecryptor(key: key, header: header)
        let error = #expect(throws: StarlineError.self) { try decryptor.pull(encrypted[1]) }
        #expect(error?.code == .authenticationFailed)
    }

    @Test("a stream missing its final chunk is detected by finish()")
    func truncated() throws {
        let key = SecretBytes(count: SecretStream.keyBytes)
        let (header, encrypted) = encrypt([[1], [2], []], key: key)
        var decryptor = try SecretStreamDecryptor(key: key, header: header)
        for chunk in encrypted.dropLast() {
            #expect(try decryptor.pull(chunk).isFinal == false)
        }
        let error = #expect(throws: StarlineError.self) { try decryptor.finish() }
        #expect(error?.code == .authenticationFailed)
        #expect(error?.message.contains("truncated stream") == true)
    }

    @Test("altered chunks, a wrong key and a bad header are rejected")
    func tampering() throws {
        let key = SecretBytes(count: SecretStream.keyBytes)
        let (header, encrypted) = encrypt([Array("abc".utf8), []], key: key)

        var altered = encrypted[0]
        altered[altered.count - 1] ^= 1
        var decryptor = try SecretStreamDecryptor(key: key, header: header)
        #expect(throws: StarlineError.self) { try decryptor.pull(altered) }
        // A failed pull leaves the state usable: the genuine chunk still decrypts.
        #expect(try decryptor.pull(encrypted[0]).plaintext == Array("abc".utf8))

        var wrongKey = try SecretStreamDecryptor(key: SecretBytes(count: SecretStream.keyBytes), header: header)
        let keyError = #expect(throws: StarlineError.self) { try wrongKey.pull(encrypted[0]) }
        #expect(keyError?.code == .authenticationFailed)

        let headerError = #expect(throws: StarlineError.self) {
            _ = try SecretStreamDecryptor(key: key, header: Array(header.dropLast()))
        }
        #expect(headerError?.code == .authenticationFailed)
        var tooShort = try SecretStreamDecryptor(key: key, header: header)
        #expect(throws: StarlineError.self) { try tooShort.pull([1, 2, 3]) }
    }
}

@Suite("Argon2id and GenericHash")
struct KeyDerivationTests {
    private let fast = Argon2id.Limits.minimum

    @Test("Argon2id is deterministic and depends on salt and passphrase")
    func deterministic() throws {
        #expect(fast.opsLimit == 1)
        #expect(fast.memLimit == 8192)
        let salt = [UInt8](repeating: 7, count: Argon2id.saltBytes)
        let passphrase = Array("correct horse battery staple".utf8)
        let k1 = try Argon2id.deriveKey(passphrase: passphrase, salt: salt, opsLimit: fast.opsLimit, memLimit: fast.memLimit)
        let k2 = try Argon2id.deriveKey(passphrase: passphrase, salt: salt, limits: fast)
        #expect(k1.count == 32)
        #expect(k1 == k2)

        var otherSalt = salt
        otherSalt[0] ^= 1
        let k3 = try Argon2id.deriveKey(passphrase: passphrase, salt: otherSalt, limits: fast)
        #expect(k3 != k1)
        let k4 = try Argon2id.deriveKey(passphrase: Array("correct horse battery stapl3".utf8), salt: salt, limits: fast)
        #expect(k4 != k1)
        let k5 = try Argon2id.deriveKey(passphrase: passphrase, salt: salt, limits: Argon2id.Limits(opsLimit: 2, memLimit: 8192))
        #expect(k5 != k1)

        let fromSecret = try Argon2id.deriveKey(
            passphrase: SecretBytes(copying: passphrase), salt: salt,
            opsLimit: fast.opsLimit, memLimit: fast.memLimit)
        #expect(fromSecret == k1)
        let short = try Argon2id.deriveKey(passphrase: passphrase, salt: salt, limits: fast, length: 16)
        #expect(short.count == 16)
        #expect(try Argon2id.deriveKey(passphrase: [], salt: salt, limits: fast).count == 32)
    }

    @Test("Argon2id rejects a bad salt length and out-of-range limits with DATA_ERROR")
    func badParameters() {
        let salt = [UInt8](repeating: 1, count: Argon2id.saltBytes)
        #expect(Argon2id.saltBytes == 16)
        for badSalt in [[], Array(salt.dropLast()), salt + [0]] {
            let error = #expect(throws: StarlineError.self) {
                try Argon2id.deriveKey(passphrase: [1], salt: badSalt, limits: fast)
            }
            #expect(error?.code == .data)
        }
        let ops = #expect(throws: StarlineError.self) {
            try Argon2id.deriveKey(passphrase: [1], salt: salt, opsLimit: 0, memLimit: 8192)
        }
        #expect(ops?.code == .data)
        let mem = #expect(throws: StarlineError.self) {
            try Argon2id.deriveKey(passphrase: [1], salt: salt, opsLimit: 1, memLimit: 1024)
        }
        #expect(mem?.code == .data)
        let length = #expect(throws: StarlineError.self) {
            try Argon2id.deriveKey(passphrase: [1], salt: salt, limits: fast, length: 8)
        }
        #expect(length?.code == .data)
    }

    @Test("Argon2id limits match libsodium's interactive and moderate levels")
    func limits() {
        #expect(Argon2id.Limits.interactive == Argon2id.Limits(opsLimit: 2, memLimit: 64 << 20))
        #expect(Argon2id.Limits.moderate == Argon2id.Limits(opsLimit: 3, memLimit: 256 << 20))
    }

    @Test("GenericHash matches BLAKE2b test vectors")
    func blake2bVectors() {
        #expect(hex(GenericHash.hash([])) == "0e5751c026e543b2e8ab2eb06099daa1d1e5df47778f7787faab45cdf12fe3a8")
        // RFC 7693 appendix A: BLAKE2b-512("abc").
        #expect(
            hex(GenericHash.hash(Array("abc".utf8), length: 64)) == """
                ba80a53f981c4d0d6a2797b69f12f6e94c212f14685ac4b74b12bb6fdbffa2d1\
                7d87c5392aab792dc252d5de4533cc9518d38aa8dbf1925ab92386edd4009923
                """)
        // Keyed BLAKE2b-512 of the empty input with key 00 01 … 3f (BLAKE2 reference KAT).
        #expect(
            GenericHash.hash([], key: (0..<64).map(UInt8.init), length: 64)
                == bytes(
                    hex: """
                        10ebb67700b1868efb4417987acf4690ae9d972fb7a590c2f02871799aaa4786\
                        b5e996e8f0f4eb981fc214b005f42d2ff4233499391653df7aefcbc13fc51568
                        """))
    }

    @Test("GenericHash.deriveSecret equals the keyed hash, kept in SecretBytes")
    func deriveSecret() {
        let keyBytes = (0..<32).map(UInt8.init)
        let expected = "dc1b722ca8c792693151b08642091eb0db3332a47d6917795a2da2623cc1a46a"
        #expect(hex(GenericHash.hash(Array("machine".utf8), key: keyBytes)) == expected)
        let secret = GenericHash.deriveSecret(Array("machine".utf8), key: SecretBytes(copying: keyBytes))
        #expect(secret.count == 32)
        #expect(hex(secret.copyBytes()) == expected)
    }

    @Test("GenericHash.mac is the keyed hash under a SecretBytes key, at every output length")
    func macUnderASecretKey() {
        let keyBytes = (0..<32).map(UInt8.init)
        let key = SecretBytes(copying: keyBytes)
        #expect(hex(GenericHash.mac(Array("machine".utf8), key: key)) == "dc1b722ca8c792693151b08642091eb0db3332a47d6917795a2da2623cc1a46a")
        for length in [16, 32, 64] {
            let data = Array("starline-memory/v1 token\u{0}word".utf8)
            #expect(GenericHash.mac(data, key: key, length: length) == GenericHash.hash(data, key: keyBytes, length: length))
            #expect(GenericHash.mac(data, key: key, length: length) == GenericHash.deriveSecret(data, key: key, length: length).copyBytes())
        }
        #expect(GenericHash.mac([], key: key, length: 16).count == 16)
    }
}
