import CZlib
import Foundation
import StarlineTestSupport
import StarlineCore
@testable import StarlineCrypto

func hex(_ bytes: [UInt8]) -> String {
    bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
}

func bytes(hex: String) -> [UInt8] {
    let chars = Array(hex.utf8)
    return stride(from: 0, to: chars.count, by: 2).map { UInt8(String(decoding: chars[$0..<($0 + 2)], as: UTF8.self), radix: 16)! }
}

func sha256Hex(_ bytes: [UInt8]) -> String { hex(SHA256.hash(bytes)) }

func secret(_ text: String) -> SecretBytes { SecretBytes(copying: Array(text.utf8)) }

/// Deterministic pseudo-random bytes (the suites' one generator), so a failure reproduces.
func pseudoRandomBytes(_ count: Int, seed: UInt64 = 0x9E37_79B9_7F4A_7C15) -> [UInt8] {
    SeededRandom.bytes(count: count, seed: seed)
}

/// This test target's directory (fixtures live beside the tests, not as SwiftPM resources).
let cryptoTestsDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().path

/// Inflates zlib data (RFC 1950) with zlib's `uncompress`, growing the buffer until it fits.
func zlibInflate(_ data: [UInt8]) -> [UInt8] {
    var capacity = Swift.max(data.count * 16, 1 << 16)
    while true {
        var out = [UInt8](repeating: 0, count: capacity)
        var length = uLongf(capacity)
        let rc = out.withUnsafeMutableBufferPointer { o in
            data.withUnsafeBufferPointer { i in uncompress(o.baseAddress, &length, i.baseAddress, uLong(data.count)) }
        }
        if rc == Z_OK { return Array(out.prefix(Int(length))) }
        precondition(rc == Z_BUF_ERROR, "zlib uncompress failed: \(rc)")
        capacity *= 4
    }
}

/// An error's code, or "success" (closures infer untyped `throws`, so these take any error).
func outcome(_ body: () throws -> Void) -> String {
    do {
        try body()
        return "success"
    } catch let error as StarlineError {
        return error.code.rawValue
    } catch {
        return "not a StarlineError: \(error)"
    }
}

/// The StarlineError `body` threw; nil when it did not throw (or threw something else).
func thrown<R>(_ body: () throws -> R) -> StarlineError? {
    do {
        _ = try body()
        return nil
    } catch {
        return error as? StarlineError
    }
}
