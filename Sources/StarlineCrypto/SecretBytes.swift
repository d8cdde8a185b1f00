import CSodium
import StarlineCore

/// Secret bytes (a key, a passphrase-derived key, a decrypted secret) in memory from `sodium_malloc`:
/// "a region ... immediately followed by a guard page", preceded by a canary, locked with `mlock` so it is
/// not swapped out, and zeroed when freed.
///
/// The contents are fixed at initialisation and the region is then made read-only with
/// `sodium_mprotect_readonly`, so a stray write crashes instead of silently changing a key.
///
/// `@unchecked Sendable`: the only state is a pointer to memory that is never written after `init` (it is
/// even write-protected) and freed only in `deinit`, when no other reference can exist; concurrent reads of
/// immutable memory are safe.
public final class SecretBytes: @unchecked Sendable {
    private let pointer: UnsafeMutableRawPointer
    public let count: Int

    /// Allocates `count` bytes and lets `initializer` fill them (for example as the output buffer of a
    /// libsodium call), then write-protects them. If `initializer` throws, the memory is freed (and zeroed)
    /// and the error is rethrown.
    public init<E: Error>(count: Int, initializingWith initializer: (UnsafeMutableRawBufferPointer) throws(E) -> Void) throws(E) {
        precondition(count >= 0, "negative byte count")
        Sodium.initialize()
        // sodium_malloc(0) is valid, but keep at least one byte so the pointer is always usable.
        guard let pointer = sodium_malloc(Swift.max(count, 1)) else {
            // Only fails when mmap does (out of memory / address space), like a Swift allocation failure.
            fatalError("sodium_malloc(\(count)) failed: out of memory")
        }
        do {
            try initializer(UnsafeMutableRawBufferPointer(start: pointer, count: count))
        } catch {
            // "The sodium_free() function ... fills the memory region with zeros before the deallocation."
            sodium_free(pointer)
            throw error
        }
        // Best effort: fails only where the platform has no mprotect, and then the memory is merely writable.
        _ = sodium_mprotect_readonly(pointer)
        self.pointer = pointer
        self.count = count
    }

    /// `count` random bytes, e.g. a new key.
    public convenience init(count: Int) {
        self.init(count: count) { (buffer: UnsafeMutableRawBufferPointer) in
            if let base = buffer.baseAddress, buffer.count > 0 { randombytes_buf(base, buffer.count) }
        }
    }

    /// A protected copy of `bytes`. The caller still owns `bytes` and should `Sodium.wipe` it when done.
    public convenience init(copying bytes: [UInt8]) {
        self.init(count: bytes.count) { (buffer: UnsafeMutableRawBufferPointer) in
            buffer.copyBytes(from: bytes)
        }
    }

    deinit {
        // sodium_free makes the region writable again, checks the canary, and zeroes it before unmapping
        // ("sodium_munlock() ... zeroes the memory before unlocking it").
        sodium_free(pointer)
    }

    /// Read access to the bytes for the duration of `body`. Do not let the pointer escape, and avoid copying
    /// the bytes into ordinary arrays that outlive the call.
    public func withUnsafeBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try body(UnsafeRawBufferPointer(start: pointer, count: count))
    }

    /// Typed variant of `withUnsafeBytes` for C APIs that take `const unsigned char *`.
    func withUnsafeUInt8Pointer<R, E: Error>(_ body: (UnsafePointer<UInt8>) throws(E) -> R) throws(E) -> R {
        try body(UnsafeRawPointer(pointer).assumingMemoryBound(to: UInt8.self))
    }

    /// An ordinary array copy of the bytes, for writing them somewhere (e.g. a key file). The copy is not
    /// protected: wipe it when done.
    public func copyBytes() -> [UInt8] {
        Array(UnsafeRawBufferPointer(start: pointer, count: count))
    }
}

extension SecretBytes: Equatable {
    /// Constant-time comparison of the contents (`sodium_memcmp`); the lengths are compared first.
    public static func == (lhs: SecretBytes, rhs: SecretBytes) -> Bool {
        guard lhs.count == rhs.count else { return false }
        if lhs.count == 0 { return true }
        return sodium_memcmp(lhs.pointer, rhs.pointer, lhs.count) == 0
    }
}

extension SecretBytes: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// Only the length: secrets never reach logs, error messages or `print`.
    public var description: String { "SecretBytes(\(count) bytes)" }
    public var debugDescription: String { description }
    /// `dump` and debuggers see the length only.
    public var customMirror: Mirror { Mirror(self, children: ["count": count], displayStyle: .class) }
}
