import CFuzzer
import Glibc

/// The entry point of a fuzz target: `Fuzz.run { bytes in … }` from its main.swift. The body must return
/// normally on every input (throwing is returning): a trap, a sanitizer report, a hang or unbounded memory
/// is what libFuzzer reports.
public enum Fuzz {
    nonisolated(unsafe) static var body: ([UInt8]) -> Void = { _ in }

    public static func run(_ body: @escaping ([UInt8]) -> Void) -> Never {
        Fuzz.body = body
        var argc = CommandLine.argc
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
        exit(LLVMFuzzerRunDriver(&argc, &argv, testOneInput))
    }
}

/// libFuzzer's callback. Also exported under its libFuzzer name: the archive's own `main` (FuzzerMain.o, linked
/// by -sanitize=fuzzer but not used, since SwiftPM points `main` at the target's entry point) refers to it.
@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = size == 0 ? [] : Array(UnsafeBufferPointer(start: data, count: size))
    Fuzz.body(bytes)
    return 0
}

/// Splits an input into pieces at the first `separator` bytes (a fuzz input carrying several fields).
public struct FuzzInput {
    public var rest: ArraySlice<UInt8>

    public init(_ bytes: [UInt8]) { rest = bytes[...] }

    /// The first byte (0 when none), consumed.
    public mutating func byte() -> UInt8 {
        guard let b = rest.first else { return 0 }
        rest = rest.dropFirst()
        return b
    }

    /// The bytes up to the next `separator` (or the end), consumed with the separator.
    public mutating func field(_ separator: UInt8 = 0x0A) -> [UInt8] {
        guard let i = rest.firstIndex(of: separator) else { defer { rest = [] }; return Array(rest) }
        defer { rest = rest[(i + 1)...] }
        return Array(rest[..<i])
    }

    public var remaining: [UInt8] { Array(rest) }
}

extension String {
    /// The bytes as UTF-8, invalid sequences replaced (what the tools do with their input text).
    public init(fuzz bytes: some Collection<UInt8>) { self = String(decoding: bytes, as: UTF8.self) }
}
