import CSodium
import StarlineCore

/// Incremental BLAKE2b (`crypto_generichash_init`/`update`/`final`): the hash of data too large to hold in
/// memory at once, such as a vault attachment streamed in chunks. Same result as `GenericHash.hash` over
/// the concatenated input.
///
/// The state (which holds the key of a keyed hash) lives in `sodium_malloc` memory, zeroed when freed.
/// Noncopyable: two copies of one state would finish two different hashes from one history.
public struct GenericHashStream: ~Copyable {
    /// `crypto_generichash_state *`: the struct is declared 64-byte aligned, which Swift imports as an
    /// opaque type, so the state is handled through its pointer only.
    private let state: OpaquePointer
    public let length: Int
    private var finished = false

    /// A hash of `length` (16…64) bytes, keyed when `key` (16…64 bytes) is given.
    public init(length: Int = 32, key: SecretBytes? = nil) {
        precondition((GenericHash.minimumLength...GenericHash.maximumLength).contains(length), "BLAKE2b output length must be 16...64")
        Sodium.initialize()
        // "crypto_generichash_statebytes() returns the rounded up structure size, and should be prefered to
        // sizeof(): state = sodium_malloc(crypto_generichash_statebytes())" (sodium/utils.h): sodium_malloc
        // places the block at the end of its pages, so a rounded-up size keeps it aligned.
        guard let raw = sodium_malloc(crypto_generichash_statebytes()) else { fatalError("sodium_malloc failed: out of memory") }
        state = OpaquePointer(raw)
        self.length = length
        if let key {
            precondition(
                (GenericHash.minimumKeyLength...GenericHash.maximumKeyLength).contains(key.count), "BLAKE2b key must be 16...64 bytes")
            _ = key.withUnsafeUInt8Pointer { crypto_generichash_init(state, $0, key.count, length) }
        } else {
            _ = crypto_generichash_init(state, nil, 0, length)
        }
    }

    deinit { sodium_free(UnsafeMutableRawPointer(state)) }

    /// Adds `bytes` to the hash.
    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        precondition(!finished, "GenericHashStream.update after finalize")
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        _ = crypto_generichash_update(state, base.assumingMemoryBound(to: UInt8.self), UInt64(bytes.count))
    }

    public mutating func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { update($0) }
    }

    public mutating func update(_ bytes: ArraySlice<UInt8>) {
        bytes.withUnsafeBytes { update($0) }
    }

    /// The hash of everything added. Call once.
    public mutating func finalize() -> [UInt8] {
        precondition(!finished, "GenericHashStream.finalize called twice")
        finished = true
        let state = self.state, length = self.length
        return [UInt8](unsafeUninitializedCapacity: length) { out, initialized in
            _ = crypto_generichash_final(state, out.baseAddress!, length)
            initialized = length
        }
    }
}
