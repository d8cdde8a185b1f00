#if canImport(Glibc)
import Glibc
#endif
import CCrypto
import CSodium
import StarlineCore
import StarlineLoader

/// The chunks of a `crypto_secretstream_xchacha20poly1305` stream run on ChaCha20 and Poly1305 from OpenSSL's
/// libcrypto 3 (loaded with dlopen the first time a stream grows past `SecretStream.acceleratedAfter`).
///
/// Why: libcrypto picks AVX-512 code where the CPU has it, where libsodium 1.0.18 stops at AVX2; a 64 KiB
/// chunk costs about half (256 MiB: 0.09 s against 0.18 s on the development machine, `bench/RESULTS.md`).
/// That is what takes `sl-memory attach` and `get` past `age -r` and `age -d -i` (W2).
///
/// The construction is libsodium's own, step for step (`crypto_secretstream_xchacha20poly1305_push` and
/// `_pull` in libsodium's `secretstream_xchacha20poly1305.c`): a Poly1305 key from the ChaCha20 block at
/// counter 0, the tag in the block at counter 1, the message from counter 2, Poly1305 over the additional
/// data, that block and the ciphertext, each padded to 16 bytes, then both lengths; then the MAC's first 8
/// bytes are XORed into the nonce and its 32-bit counter is incremented. The state stays libsodium's struct,
/// and `init_push`, `init_pull` and `rekey` stay libsodium's, so a stream may switch engines between any two
/// chunks and the bytes are the same either way (`SecretStreamAcceleratorTests` compares them).
///
/// A libcrypto call that fails leaves the state untouched and the chunk is done by libsodium instead
/// (`Outcome.unavailable`); without libcrypto 3 every chunk is.
final class SecretStreamAccelerator {
    typealias State = UnsafeMutablePointer<crypto_secretstream_xchacha20poly1305_state>

    /// libcrypto's functions, and the ChaCha20 cipher and Poly1305 MAC fetched once per process.
    struct Library: @unchecked Sendable {
        // @unchecked: C function pointers and two fetched algorithm objects, which OpenSSL documents as
        // shareable between threads once fetched (each stream has contexts of its own).
        // Typed by OpenSSL's own declarations (CCrypto's shim.h: `typedef __typeof__(&EVP_…) starline_EVP_…_f`).
        let cipherContextNew: starline_EVP_CIPHER_CTX_new_f
        let cipherContextFree: starline_EVP_CIPHER_CTX_free_f
        /// `int EVP_EncryptInit_ex(EVP_CIPHER_CTX *ctx, const EVP_CIPHER *type, ENGINE *impl, const unsigned
        /// char *key, const unsigned char *iv)`; ChaCha20's iv is the 32-bit counter (little-endian), then the
        /// 96-bit nonce.
        let encryptInit: starline_EVP_EncryptInit_ex_f
        /// `int EVP_EncryptUpdate(EVP_CIPHER_CTX *ctx, unsigned char *out, int *outl, const unsigned char *in,
        /// int inl)`: for a stream cipher, the keystream goes on where the previous update stopped.
        let encryptUpdate: starline_EVP_EncryptUpdate_f
        let macContextNew: starline_EVP_MAC_CTX_new_f
        let macContextFree: starline_EVP_MAC_CTX_free_f
        /// `int EVP_MAC_init(EVP_MAC_CTX *ctx, const unsigned char *key, size_t keylen, const OSSL_PARAM params[])`:
        /// "initializes the MAC context ctx with the given key"; a Poly1305 context takes a new key each time.
        let macInit: starline_EVP_MAC_init_f
        let macUpdate: starline_EVP_MAC_update_f
        let macFinal: starline_EVP_MAC_final_f
        let fetchCipher: starline_EVP_CIPHER_fetch_f
        let fetchMAC: starline_EVP_MAC_fetch_f
        /// ChaCha20 and Poly1305, fetched once every function is there (a stub is never called).
        var chacha20: OpaquePointer? = nil
        var poly1305: OpaquePointer? = nil
    }

    /// libcrypto 3, or nil when it cannot be loaded or lacks ChaCha20 or Poly1305 (the streams then stay on
    /// libsodium). Loaded once per process, on first use.
    static let library: Library? = {
        let loaded = SharedLibrary.load(LibCrypto.sonames, LibCrypto.requirement) { lib in
            Library(
                cipherContextNew: lib.function("EVP_CIPHER_CTX_new"), cipherContextFree: lib.function("EVP_CIPHER_CTX_free"),
                encryptInit: lib.function("EVP_EncryptInit_ex"), encryptUpdate: lib.function("EVP_EncryptUpdate"),
                macContextNew: lib.function("EVP_MAC_CTX_new"), macContextFree: lib.function("EVP_MAC_CTX_free"),
                macInit: lib.function("EVP_MAC_init"), macUpdate: lib.function("EVP_MAC_update"), macFinal: lib.function("EVP_MAC_final"),
                fetchCipher: lib.function("EVP_CIPHER_fetch"), fetchMAC: lib.function("EVP_MAC_fetch"))
        }
        guard case .success(var library) = loaded, let chacha20 = library.fetchCipher(nil, "ChaCha20", nil),
            let poly1305 = library.fetchMAC(nil, "POLY1305", nil)
        else { return nil }
        library.chacha20 = chacha20
        library.poly1305 = poly1305
        return library
    }()

    enum Outcome: Equatable {
        /// Done: the chunk's size (ciphertext for a push, plaintext for a pull) and its tag.
        case done(count: Int, tag: UInt8)
        /// The chunk does not authenticate (pull only); nothing was written and the state is unchanged.
        case forged
        /// libcrypto failed a call: the state is unchanged, libsodium does this chunk.
        case unavailable
    }

    private let lib: Library
    private let cipher: OpaquePointer
    private let mac: OpaquePointer
    /// The ChaCha20 block being built (64 bytes), the iv (16), the computed MAC (16) and the length block
    /// (16): key-derived bytes, so in `sodium_malloc` memory (locked, wiped when freed) and wiped after each chunk.
    private let scratch: UnsafeMutablePointer<UInt8>
    private static let scratchBytes = 112
    /// Zeros, for the Poly1305 key's keystream block and the padding (not secret).
    private static let zeros = [UInt8](repeating: 0, count: 64)

    /// Nil when libcrypto 3 is not there or a context cannot be made.
    init?() {
        guard let lib = Self.library, let cipher = lib.cipherContextNew() else { return nil }
        guard let mac = lib.macContextNew(lib.poly1305) else {
            lib.cipherContextFree(cipher)
            return nil
        }
        guard let raw = sodium_malloc(Self.scratchBytes) else {
            lib.cipherContextFree(cipher)
            lib.macContextFree(mac)
            return nil
        }
        self.lib = lib
        self.cipher = cipher
        self.mac = mac
        scratch = raw.bindMemory(to: UInt8.self, capacity: Self.scratchBytes)
    }

    deinit {
        // EVP_CIPHER_CTX_free and EVP_MAC_CTX_free cleanse the key schedules they hold.
        lib.cipherContextFree(cipher)
        lib.macContextFree(mac)
        sodium_free(scratch)
    }

    private var block: UnsafeMutablePointer<UInt8> { scratch }
    private var iv: UnsafeMutablePointer<UInt8> { scratch + 64 }
    private var computedMAC: UnsafeMutablePointer<UInt8> { scratch + 80 }
    private var lengths: UnsafeMutablePointer<UInt8> { scratch + 96 }

    /// Encrypts `m` into `out` (room for `m.count + 17` bytes, not overlapping `m`) as libsodium's push does.
    func push(_ state: State, _ m: UnsafeRawBufferPointer, into out: UnsafeMutablePointer<UInt8>, ad: UnsafeRawBufferPointer, tag: UInt8)
        -> Outcome
    {
        defer { sodium_memzero(scratch, Self.scratchBytes) }
        guard m.count <= Int(Int32.max) - 128, begin(state, ad: ad) else { return .unavailable }
        memset(block, 0, 64)
        block[0] = tag
        guard xor(block, block, 64), macUpdate(block, 64) else { return .unavailable }
        out[0] = block[0]
        let c = out + 1
        if let plain = m.baseAddress, m.count > 0 {
            guard xor(plain.assumingMemoryBound(to: UInt8.self), c, m.count), macUpdate(c, m.count) else { return .unavailable }
        }
        guard finishMAC(messageCount: m.count, adCount: ad.count, into: c + m.count) else { return .unavailable }
        advance(state, mac: c + m.count, tag: tag)
        return .done(count: m.count + SecretStream.abytes, tag: tag)
    }

    /// Verifies the sealed chunk `sealed` (at least 17 bytes) and decrypts it into `out` (room for
    /// `sealed.count - 17` bytes, not overlapping), as libsodium's pull does: nothing is decrypted unless the
    /// MAC matches.
    func pull(_ state: State, _ sealed: UnsafeRawBufferPointer, into out: UnsafeMutablePointer<UInt8>, ad: UnsafeRawBufferPointer)
        -> Outcome
    {
        defer { sodium_memzero(scratch, Self.scratchBytes) }
        guard sealed.count >= SecretStream.abytes, sealed.count <= Int(Int32.max) - 128, let base = sealed.baseAddress else {
            return .unavailable
        }
        let input = base.assumingMemoryBound(to: UInt8.self)
        let count = sealed.count - SecretStream.abytes
        guard begin(state, ad: ad) else { return .unavailable }
        memset(block, 0, 64)
        block[0] = input[0]
        guard xor(block, block, 64) else { return .unavailable }
        let tag = block[0]
        block[0] = input[0]
        let c = input + 1
        guard macUpdate(block, 64), count == 0 || macUpdate(c, count),
            finishMAC(messageCount: count, adCount: ad.count, into: computedMAC)
        else { return .unavailable }
        guard sodium_memcmp(computedMAC, c + count, 16) == 0 else { return .forged }
        if count > 0, !xor(c, out, count) { return .unavailable }
        advance(state, mac: computedMAC, tag: tag)
        return .done(count: count, tag: tag)
    }

    /// Keys ChaCha20 at counter 0 with the state's key and nonce, takes the first block's 32 bytes as the
    /// Poly1305 key (the keystream is then at counter 1), and MACs the additional data and its padding.
    private func begin(_ state: State, ad: UnsafeRawBufferPointer) -> Bool {
        let raw = UnsafeMutableRawPointer(state)
        memset(iv, 0, 4)
        memcpy(iv + 4, raw + Self.nonceOffset, 12)
        let key = UnsafePointer(raw.assumingMemoryBound(to: UInt8.self))
        guard lib.encryptInit(cipher, lib.chacha20, nil, key, iv) == 1 else { return false }
        guard Self.zeros.withUnsafeBufferPointer({ xor($0.baseAddress!, block, 64) }) else { return false }
        guard lib.macInit(mac, block, 32, nil) == 1 else { return false }
        guard let adBase = ad.baseAddress, ad.count > 0 else { return true }
        return macUpdate(adBase.assumingMemoryBound(to: UInt8.self), ad.count) && macZeros((16 - (ad.count & 15)) & 15)
    }

    /// The padding after the ciphertext, the two lengths (little-endian 64-bit: the additional data, then the
    /// tag block and the message), and the MAC into `out`. The padding is libsodium's
    /// `(0x10 - (sizeof block) + mlen) & 0xf` zero bytes — `mlen & 15`, not the complement that would round
    /// up to 16 — which the stream format fixed long ago; its bytes must be libsodium's.
    private func finishMAC(messageCount: Int, adCount: Int, into out: UnsafeMutablePointer<UInt8>) -> Bool {
        guard macZeros(messageCount & 15) else { return false }
        var ad = UInt64(adCount).littleEndian, total = UInt64(64 + messageCount).littleEndian
        memcpy(lengths, &ad, 8)
        memcpy(lengths + 8, &total, 8)
        var written = 0
        return macUpdate(lengths, 16) && lib.macFinal(mac, out, &written, 16) == 1 && written == 16
    }

    /// `count` zero bytes of padding into the MAC.
    private func macZeros(_ count: Int) -> Bool {
        count == 0 || Self.zeros.withUnsafeBufferPointer { macUpdate($0.baseAddress!, count) }
    }

    /// The next chunk's nonce: the MAC's first 8 bytes XORed into the inner nonce, the counter incremented,
    /// and libsodium's rekey when the chunk asked for it or the 32-bit counter wrapped.
    private func advance(_ state: State, mac: UnsafePointer<UInt8>, tag: UInt8) {
        let nonce = (UnsafeMutableRawPointer(state) + Self.nonceOffset).assumingMemoryBound(to: UInt8.self)
        for i in 0..<8 { nonce[4 + i] ^= mac[i] }
        sodium_increment(nonce, 4)
        if tag & crypto_secretstream_xchacha20poly1305_tag_rekey() != 0 || sodium_is_zero(nonce, 4) == 1 {
            crypto_secretstream_xchacha20poly1305_rekey(state)
        }
    }

    private func xor(_ input: UnsafePointer<UInt8>, _ output: UnsafeMutablePointer<UInt8>, _ count: Int) -> Bool {
        var written: Int32 = 0
        return lib.encryptUpdate(cipher, output, &written, input, Int32(count)) == 1 && Int(written) == count
    }

    private func macUpdate(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> Bool {
        lib.macUpdate(mac, bytes, count) == 1
    }

    /// Where the 12-byte nonce (4-byte counter, then 8-byte inner nonce) sits in libsodium's state struct,
    /// after the 32-byte key.
    static let nonceOffset = MemoryLayout<crypto_secretstream_xchacha20poly1305_state>.offset(of: \.nonce) ?? 32
}
