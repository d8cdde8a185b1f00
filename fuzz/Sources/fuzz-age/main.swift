import FuzzSupport
import StarlineCore
import StarlineCrypto

// age v1 decryption (header, scrypt stanza, armor, payload) of any file with the testkit's passphrase; the
// work factor is capped at 2^10 so one input costs a millisecond, not a second.
let decryptor = AgeDecryptor(passphrase: SecretBytes(copying: Array("password".utf8)), maximumWorkFactor: 10)

Fuzz.run { bytes in
    _ = try? decryptor.decrypt(bytes)
}
