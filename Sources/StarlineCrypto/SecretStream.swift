import CSodium
import StarlineCore

/// Sizes of `crypto_secretstream_xchacha20poly1305`, shared by the encryptor and decryptor.
public enum SecretStream {
    public static var keyBytes: Int { crypto_secretstream_xchacha20poly1305_keybytes() }
    public static var headerBytes: Int { crypto_secretstream_xchacha20poly1305_headerbytes() }
    /// Per-chunk overhead: each encrypted chunk is this much longer than its plaintext.
    public static var abytes: Int { crypto_secretstream_xchacha20poly1305_abytes() }

    /// Bytes a stream takes through the bulk `push`/`pull` on libsodium before it moves to libcrypto's
    /// ChaCha20 and Poly1305 (`SecretStreamAccelerator`): loading libcrypto costs ~2.5 ms, what libsodium
    /// takes for ~4 MiB, so a small stream never loads it.
    public static let acceleratedAfter = 4 << 20

    /// A chunk that does not authenticate, whichever engine checked it.
    static func forgedChunk() -> StarlineError {
        StarlineError(.authenticationFailed, "encrypted stream chunk failed authentication (altered, reordered or wrong key)")
    }

    static let tagFinal = crypto_secretstream_xchacha20poly1305_tag_final()
    static let tagMessage = crypto_secretstream_xchacha20poly1305_tag_message()

    /// The stream state holds the subkey and nonce: it lives in `sodium_malloc` memory, zeroed when freed.
    /// "sodium_malloc() can be used to allocate any libsodium data structure"; the state is an array of
    /// bytes (alignment 1), so the unaligned addresses `sodium_malloc` may return are fine.
    static func allocateState() -> UnsafeMutablePointer<crypto_secretstream_xchacha20poly1305_state> {
        Sodium.initialize()
        guard let raw = sodium_malloc(crypto_secretstream_xchacha20poly1305_statebytes()) else {
            fatalError("sodium_malloc failed: out of memory")
        }
        return raw.bindMemory(to: crypto_secretstream_xchacha20poly1305_state.self, capacity: 1)
    }
}

/// Encrypts a stream of chunks (`crypto_secretstream_xchacha20poly1305`): each chunk is authenticated
/// along with its position, so chunks cannot be reordered, dropped, duplicated or truncated undetected,
/// provided the last one is pushed with `final: true`.
///
/// Noncopyable on purpose: two copies of one stream state would encrypt different chunks under the same
/// key and nonce. `@unchecked Sendable` because the state is uniquely owned — moving the encryptor to another
/// thread moves the only handle to it, and `push` needs exclusive (`mutating`) access.
public struct SecretStreamEncryptor: ~Copyable, @unchecked Sendable {
    private let state: UnsafeMutablePointer<crypto_secretstream_xchacha20poly1305_state>
    /// Written before the first chunk; the decryptor needs it. Not secret.
    public let header: [UInt8]
    public private(set) var isFinished = false
    /// The bulk `push` moves to libcrypto once the stream is past `SecretStream.acceleratedAfter` bytes.
    private var acceleration: SecretStreamAcceleration

    /// `accelerated: false` keeps every chunk on libsodium (the tests compare the two engines' bytes).
    public init(key: SecretBytes, accelerated: Bool = true) {
        acceleration = SecretStreamAcceleration(enabled: accelerated)
        precondition(key.count == SecretStream.keyBytes, "secret stream key must be \(SecretStream.keyBytes) bytes")
        let state = SecretStream.allocateState()
        self.state = state
        self.header = [UInt8](unsafeUninitializedCapacity: SecretStream.headerBytes) { out, initialized in
            // init_push picks a random nonce and writes it to the header; it cannot fail.
            _ = key.withUnsafeUInt8Pointer { k in
                crypto_secretstream_xchacha20poly1305_init_push(state, out.baseAddress!, k)
            }
            initialized = SecretStream.headerBytes
        }
    }

    deinit {
        sodium_free(state)
    }

    /// Encrypts one chunk; the last chunk must have `final: true` (it may be empty). Pushing after the final
    /// chunk is a programming error.
    public mutating func push(_ chunk: [UInt8], final: Bool = false, additionalData: [UInt8] = []) -> [UInt8] {
        precondition(!isFinished, "SecretStreamEncryptor.push after the final chunk")
        isFinished = final
        let state = self.state
        let total = chunk.count + SecretStream.abytes
        return [UInt8](unsafeUninitializedCapacity: total) { out, initialized in
            var clen: UInt64 = 0
            let rc = withNonNullBytes(chunk) { m, mlen in
                withNonNullBytes(additionalData) { ad, adlen in
                    crypto_secretstream_xchacha20poly1305_push(
                        state, out.baseAddress!, &clen, m, UInt64(mlen), ad, UInt64(adlen),
                        final ? SecretStream.tagFinal : SecretStream.tagMessage)
                }
            }
            // Fails only for chunks over messagebytes_max (about 256 GiB).
            precondition(rc == 0 && Int(clen) == total, "crypto_secretstream_xchacha20poly1305_push failed")
            initialized = total
        }
    }

    /// `push` without allocating, for bulk streams: encrypts `chunk` into `output`, which must have room for
    /// `chunk.count + SecretStream.abytes` bytes (it must not overlap `chunk`), and returns the bytes written.
    public mutating func push(
        _ chunk: UnsafeRawBufferPointer, into output: UnsafeMutableRawPointer, final: Bool,
        additionalData: UnsafeRawBufferPointer
    ) -> Int {
        precondition(!isFinished, "SecretStreamEncryptor.push after the final chunk")
        isFinished = final
        let tag = final ? SecretStream.tagFinal : SecretStream.tagMessage
        if let accelerator = acceleration.engine(after: chunk.count),
            case .done(let count, _) = accelerator.push(
                state, chunk, into: output.assumingMemoryBound(to: UInt8.self), ad: additionalData, tag: tag)
        {
            return count
        }
        var clen: UInt64 = 0
        let rc = withNonNullBytes(chunk) { m, mlen in
            withNonNullBytes(additionalData) { ad, adlen in
                crypto_secretstream_xchacha20poly1305_push(
                    state, output.assumingMemoryBound(to: UInt8.self), &clen, m, UInt64(mlen), ad, UInt64(adlen), tag)
            }
        }
        precondition(rc == 0 && Int(clen) == chunk.count + SecretStream.abytes, "crypto_secretstream_xchacha20poly1305_push failed")
        return Int(clen)
    }

    /// Whether the bulk chunks now run on libcrypto (`SecretStreamAccelerator`).
    public var isAccelerated: Bool { acceleration.isActive }
}

/// Decrypts what `SecretStreamEncryptor` produced, chunk by chunk, in order.
///
/// Call `finish()` at the end of the input: a stream cut short before its final chunk decrypts chunk by
/// chunk without error, and only `finish()` notices the missing end. See `SecretStreamEncryptor` for why
/// it is noncopyable and `@unchecked Sendable`.
public struct SecretStreamDecryptor: ~Copyable, @unchecked Sendable {
    private let state: UnsafeMutablePointer<crypto_secretstream_xchacha20poly1305_state>
    public private(set) var sawFinal = false
    /// The bulk `pull` moves to libcrypto once the stream is past `SecretStream.acceleratedAfter` bytes.
    private var acceleration: SecretStreamAcceleration

    /// `accelerated: false` keeps every chunk on libsodium (the tests compare the two engines).
    public init(key: SecretBytes, header: [UInt8], accelerated: Bool = true) throws(StarlineError) {
        acceleration = SecretStreamAcceleration(enabled: accelerated)
        precondition(key.count == SecretStream.keyBytes, "secret stream key must be \(SecretStream.keyBytes) bytes")
        guard header.count == SecretStream.headerBytes else {
            throw StarlineError(.authenticationFailed, "encrypted stream header has the wrong length (\(header.count) bytes)")
        }
        let state = SecretStream.allocateState()
        let rc = key.withUnsafeUInt8Pointer { k in
            crypto_secretstream_xchacha20poly1305_init_pull(state, header, k)
        }
        guard rc == 0 else {
            sodium_free(state)
            throw StarlineError(.authenticationFailed, "encrypted stream header is invalid")
        }
        self.state = state
    }

    deinit {
        sodium_free(state)
    }

    /// Verifies and decrypts the next chunk. Throws `AUTHENTICATION_FAILED` for a chunk that was altered,
    /// is out of order, belongs to another stream or key, or comes after the final chunk.
    public mutating func pull(_ chunk: [UInt8], additionalData: [UInt8] = []) throws(StarlineError) -> (plaintext: [UInt8], isFinal: Bool) {
        guard !sawFinal else {
            throw StarlineError(.authenticationFailed, "encrypted stream has data after its final chunk")
        }
        guard chunk.count >= SecretStream.abytes else {
            throw StarlineError(.authenticationFailed, "encrypted stream chunk is too short (\(chunk.count) bytes)")
        }
        let state = self.state
        var tag: UInt8 = 0
        var failed = false
        let count = chunk.count - SecretStream.abytes
        let plaintext = [UInt8](unsafeUninitializedCapacity: Swift.max(count, 1)) { out, initialized in
            var mlen: UInt64 = 0
            let rc = chunk.withUnsafeBufferPointer { c in
                withNonNullBytes(additionalData) { ad, adlen in
                    // "the function returns -1 if the ciphertext appears to be invalid"; on failure the state
                    // is unchanged and nothing is written to m.
                    crypto_secretstream_xchacha20poly1305_pull(
                        state, out.baseAddress!, &mlen, &tag, c.baseAddress!, UInt64(c.count), ad, UInt64(adlen))
                }
            }
            failed = rc != 0
            initialized = failed ? 0 : Int(mlen)
        }
        if failed {
            throw SecretStream.forgedChunk()
        }
        sawFinal = tag == SecretStream.tagFinal
        return (plaintext, sawFinal)
    }

    /// `pull` without allocating, for bulk streams: verifies `chunk` and decrypts it into `output`, which must
    /// have room for `chunk.count - SecretStream.abytes` bytes (it must not overlap `chunk`); returns the
    /// plaintext size and whether the chunk was the final one. Same errors as `pull`; on failure nothing is
    /// written to `output`.
    public mutating func pull(
        _ chunk: UnsafeRawBufferPointer, into output: UnsafeMutableRawPointer,
        additionalData: UnsafeRawBufferPointer
    ) throws(StarlineError) -> (count: Int, isFinal: Bool) {
        guard !sawFinal else {
            throw StarlineError(.authenticationFailed, "encrypted stream has data after its final chunk")
        }
        guard chunk.count >= SecretStream.abytes, let c = chunk.baseAddress else {
            throw StarlineError(.authenticationFailed, "encrypted stream chunk is too short (\(chunk.count) bytes)")
        }
        if let accelerator = acceleration.engine(after: chunk.count) {
            switch accelerator.pull(state, chunk, into: output.assumingMemoryBound(to: UInt8.self), ad: additionalData) {
            case .done(let count, let tag):
                sawFinal = tag == SecretStream.tagFinal
                return (count, sawFinal)
            case .forged:
                throw SecretStream.forgedChunk()
            case .unavailable: break
            }
        }
        var tag: UInt8 = 0
        var mlen: UInt64 = 0
        let rc = withNonNullBytes(additionalData) { ad, adlen in
            crypto_secretstream_xchacha20poly1305_pull(
                state, output.assumingMemoryBound(to: UInt8.self), &mlen, &tag, c.assumingMemoryBound(to: UInt8.self),
                UInt64(chunk.count), ad, UInt64(adlen))
        }
        if rc != 0 {
            throw SecretStream.forgedChunk()
        }
        sawFinal = tag == SecretStream.tagFinal
        return (Int(mlen), sawFinal)
    }

    /// Whether the bulk chunks now run on libcrypto (`SecretStreamAccelerator`).
    public var isAccelerated: Bool { acceleration.isActive }

    /// Call after the last chunk of input: throws `AUTHENTICATION_FAILED` ("truncated stream") when the
    /// final chunk was never seen.
    public func finish() throws(StarlineError) {
        if !sawFinal {
            throw StarlineError(.authenticationFailed, "truncated stream: the final chunk is missing")
        }
    }
}

/// When a stream's bulk chunks move from libsodium to libcrypto: after `SecretStream.acceleratedAfter`
/// bytes, once (a stream whose accelerator cannot be made stays on libsodium).
struct SecretStreamAcceleration {
    private var pending: Bool
    private var bytes = 0
    private var accelerator: SecretStreamAccelerator?

    init(enabled: Bool) { pending = enabled }

    var isActive: Bool { accelerator != nil }

    /// The accelerator for a chunk of `count` bytes, or nil while the stream is small (or has none).
    mutating func engine(after count: Int) -> SecretStreamAccelerator? {
        if pending {
            bytes += count
            if bytes > SecretStream.acceleratedAfter {
                pending = false
                accelerator = SecretStreamAccelerator()
            }
        }
        return accelerator
    }
}
