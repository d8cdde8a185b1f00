#if canImport(Glibc)
import Glibc
#endif
import CQREncode
import StarlineCore

/// Encodes bytes into a QR symbol with libqrencode.
///
/// How the payload is put into the symbol depends on what it is (see `Encoding`):
/// plain ASCII is left to libqrencode's mode optimiser, other UTF-8 text gets a UTF-8 ECI
/// header so readers need not guess the character set, and anything else is stored as
/// raw 8-bit data, byte for byte.
public enum QREncoder {
    /// The three ways a payload is encoded, chosen from the whole payload.
    public enum Encoding: String, Sendable, CaseIterable {
        /// Bytes 0x01–0x7F only: `QRcode_encodeString`, numeric/alphanumeric/8-bit segments, no ECI.
        case ascii
        /// Valid UTF-8 with at least one non-ASCII byte and no NUL: one 8-bit segment after ECI 26 (UTF-8).
        case utf8
        /// Everything else (invalid UTF-8, or a NUL anywhere): one 8-bit segment, no ECI.
        case binary
    }

    /// The ECI assignment number of UTF-8 (ISO/IEC 18004 / AIM ECI table).
    static let utf8ECI: UInt32 = 26

    /// The most bytes any QR payload can have: 7 089 digits in numeric mode at 40-L.
    /// Longer payloads are rejected without asking libqrencode (this also keeps sizes in `Int32`).
    public static let absoluteMaxBytes = 7089

    /// How many leading bytes of `payload` fit at `maxVersion` (the figure CAPACITY_EXCEEDED names), for
    /// a caller that stopped reading at `absoluteMaxBytes + 1`.
    public static func capacity(level: QRErrorCorrection, minVersion: Int = 1, maxVersion: Int, payload: [UInt8]) -> Int {
        (try? capacity(of: payload, encoding: encoding(for: payload), level: level, minVersion: minVersion, maxVersion: maxVersion)) ?? 0
    }

    /// Which encoding `encode` uses for `payload`.
    public static func encoding(for payload: [UInt8]) -> Encoding {
        var ascii = true
        for byte in payload {
            if byte == 0 { return .binary }
            if byte >= 0x80 { ascii = false }
        }
        if ascii { return .ascii }
        return String(validating: payload, as: UTF8.self) != nil ? .utf8 : .binary
    }

    /// Encodes the UTF-8 bytes of `text`; see `encode(_:level:minVersion:maxVersion:)`.
    public static func encode(
        _ text: String, level: QRErrorCorrection = .M,
        minVersion: Int = 1, maxVersion: Int = 40
    ) throws -> QRMatrix {
        try encode(Array(text.utf8), level: level, minVersion: minVersion, maxVersion: maxVersion)
    }

    /// Encodes `payload` in the smallest symbol of version `minVersion…maxVersion` that holds it.
    ///
    /// - Throws: `USAGE` for an empty payload or bad version bounds; `CAPACITY_EXCEEDED` when the
    ///   payload does not fit at `maxVersion` (message and `details` carry the capacity: the largest
    ///   prefix of this payload, encoded the same way, that fits); `INTERNAL` when libqrencode fails
    ///   otherwise.
    public static func encode(
        _ payload: [UInt8], level: QRErrorCorrection = .M,
        minVersion: Int = 1, maxVersion: Int = 40
    ) throws -> QRMatrix {
        guard !payload.isEmpty else {
            throw StarlineError(.usage, "cannot encode an empty payload")
        }
        guard (1...40).contains(minVersion), (1...40).contains(maxVersion) else {
            throw StarlineError(
                .usage, "QR versions run from 1 to 40 (got min \(minVersion), max \(maxVersion))",
                details: .object([("minVersion", .int(minVersion)), ("maxVersion", .int(maxVersion))]))
        }
        guard minVersion <= maxVersion else {
            throw StarlineError(
                .usage, "minimum version \(minVersion) is larger than maximum version \(maxVersion)",
                details: .object([("minVersion", .int(minVersion)), ("maxVersion", .int(maxVersion))]))
        }
        let encoding = encoding(for: payload)
        if payload.count <= absoluteMaxBytes,
            let matrix = try attempt(payload[...], encoding: encoding, level: level, minVersion: minVersion),
            matrix.version <= maxVersion
        {
            return matrix
        }
        let capacity = try capacity(
            of: payload, encoding: encoding, level: level,
            minVersion: minVersion, maxVersion: maxVersion)
        throw StarlineError(
            .capacityExceeded,
            "payload of \(payload.count) bytes does not fit in a QR code at version ≤ \(maxVersion), "
                + "level \(level.rawValue) (capacity \(capacity) bytes)",
            details: .object([
                ("length", .int(payload.count)),
                ("capacity", .int(capacity)),
                ("maxVersion", .int(maxVersion)),
                ("level", .string(level.rawValue))
            ]))
    }

    /// The length of the longest prefix of `payload` that, encoded the same way, fits at
    /// `maxVersion`. Only used on the error path, so it simply binary-searches with real encodes
    /// (about a dozen at most) rather than re-deriving libqrencode's segment arithmetic.
    ///
    /// Invariant: the prefix of length `fitting` fits, the one of length `failing` does not
    /// (the empty prefix counts as fitting; the whole payload is known not to fit). The result
    /// therefore satisfies "capacity fits, capacity + 1 does not" even where the mode optimiser
    /// makes fit-by-length not perfectly monotonic.
    static func capacity(
        of payload: [UInt8], encoding: Encoding, level: QRErrorCorrection,
        minVersion: Int, maxVersion: Int
    ) throws -> Int {
        var fitting = 0
        var failing = min(payload.count, absoluteMaxBytes + 1)
        while failing - fitting > 1 {
            let middle = fitting + (failing - fitting) / 2
            if let matrix = try attempt(payload[..<middle], encoding: encoding, level: level, minVersion: minVersion),
                matrix.version <= maxVersion
            {
                fitting = middle
            } else {
                failing = middle
            }
        }
        return fitting
    }

    /// One libqrencode encode. Returns nil when libqrencode reports the data too large for any
    /// version (`ERANGE`); throws `INTERNAL` for any other failure.
    ///
    /// The encode functions carry "@warning This function is THREAD UNSAFE when pthread is
    /// disabled"; Debian's libqrencode4 is built with pthread, so concurrent calls are safe.
    static func attempt(
        _ bytes: ArraySlice<UInt8>, encoding: Encoding, level: QRErrorCorrection,
        minVersion: Int
    ) throws -> QRMatrix? {
        precondition(!bytes.isEmpty && bytes.count <= absoluteMaxBytes)
        let version = Int32(minVersion)
        // libqrencode reports failures as "NULL is returned, and errno is set to indicate the
        // error"; clear errno first so a stale value is never mistaken for the cause, and read
        // it right after the call, before any cleanup can touch it.
        errno = 0
        let (code, error): (UnsafeMutablePointer<QRcode>?, Int32) =
            switch encoding {
            case .ascii:
                // What QRcode_encodeString(text, version, level, QR_MODE_8, 1) does — "all of
                // non-alphanumerical characters will be encoded as is", digits and upper-case runs split into
                // numeric / alphanumeric segments, lower case never folded — with libqrencode's split ported
                // (QRSegmentSplit) so that the mask can be chosen here (QRMaskChoice).
                try encodeSegments(bytes, version: version, level: level)
            case .utf8:
                try encodeWithUTF8ECI(bytes, version: version, level: level)
            case .binary:
                // As QRcode_encodeData: "Encode byte stream (may include '\0') in 8-bit mode." — the
                // length is explicit, so nothing is cut at a NUL.
                try encodeEightBit(bytes, version: version, level: level)
            }
        guard let code else {
            if error == ERANGE { return nil }
            throw libqrencodeFailure(error, "encoding \(bytes.count) bytes")
        }
        defer { QRcode_free(code) }
        return matrix(from: code.pointee, level: level)
    }

    /// Byte mode preceded by an ECI header selecting UTF-8, built as a `QRinput` by hand since
    /// the string helpers never emit ECI.
    ///
    /// Known libqrencode 4.1.1 quirk: its version *estimate* counts an ECI entry 16 bits too long (the 4
    /// stored designator bytes are charged a mode indicator each), and the estimate only ever raises the
    /// version. So text within 2 bytes of a version boundary may get the next version up; at version 40 the
    /// estimate can go no higher and the real bit count decides, so the absolute capacities are exact (e.g.
    /// 2952 bytes at 40-L).
    private static func encodeWithUTF8ECI(
        _ bytes: ArraySlice<UInt8>, version: Int32,
        level: QRErrorCorrection
    ) throws -> (UnsafeMutablePointer<QRcode>?, Int32) {
        try encodeInput(version: version, level: level) { input in
            guard QRinput_appendECIheader(input, utf8ECI) == 0 else {
                throw libqrencodeFailure(errno, "appending the UTF-8 ECI header")
            }
            try append(bytes, mode: QR_MODE_8, to: input)
        }
    }

    /// ASCII text in libqrencode's segments (QRSegmentSplit).
    private static func encodeSegments(
        _ bytes: ArraySlice<UInt8>, version: Int32,
        level: QRErrorCorrection
    ) throws -> (UnsafeMutablePointer<QRcode>?, Int32) {
        let text = Array(bytes)
        return try encodeInput(version: version, level: level) { input in
            for segment in QRSegmentSplit.segments(text, version: Int(version)) {
                try append(text[segment.range], mode: segment.mode, to: input)
            }
        }
    }

    /// One 8-bit segment, as QRcode_encodeData builds it.
    private static func encodeEightBit(
        _ bytes: ArraySlice<UInt8>, version: Int32,
        level: QRErrorCorrection
    ) throws -> (UnsafeMutablePointer<QRcode>?, Int32) {
        try encodeInput(version: version, level: level) { input in try append(bytes, mode: QR_MODE_8, to: input) }
    }

    /// A `QRinput` of at least `version`, filled by `fill`, encoded with the mask libqrencode would choose.
    private static func encodeInput(
        version: Int32, level: QRErrorCorrection, _ fill: (OpaquePointer) throws -> Void
    ) throws -> (UnsafeMutablePointer<QRcode>?, Int32) {
        // QRinput_new2: "On error, NULL is returned and errno is set". The version stored in the
        // input is a minimum: encoding picks a larger one when the data needs it.
        guard let input = QRinput_new2(version, level.cLevel) else {
            throw libqrencodeFailure(errno, "creating the input")
        }
        // The input owns copies of the appended data ("The data is copied and appended");
        // QRinput_free releases them together with the input.
        defer { QRinput_free(input) }
        try fill(input)
        return encodeChoosingMask(input, level: level)
    }

    /// One segment of `mode` holding `bytes`.
    private static func append(_ bytes: ArraySlice<UInt8>, mode: QRencodeMode, to input: OpaquePointer) throws {
        let appended = bytes.withUnsafeBufferPointer { buffer in
            QRinput_append(input, mode, Int32(buffer.count), buffer.baseAddress)
        }
        guard appended == 0 else { throw libqrencodeFailure(errno, "appending \(bytes.count) bytes") }
    }

    /// `QRcode_encodeMask(input, mask)`: exported by libqrencode 4 (its own tests call it; declared in
    /// qrencode_inner.h, which is not installed), looked up rather than declared so that a libqrencode
    /// without it still works, with its own mask evaluation.
    private static let encodeMask: (@convention(c) (OpaquePointer?, Int32) -> UnsafeMutablePointer<QRcode>?)? =
        dlsym(nil, "QRcode_encodeMask").map {
            unsafeBitCast($0, to: (@convention(c) (OpaquePointer?, Int32) -> UnsafeMutablePointer<QRcode>?).self)
        }

    /// The symbol of `input` with the mask libqrencode would choose, chosen by QRMaskChoice on bit rows:
    /// encoded once with mask 0, then re-masked if another mask wins. Symbols wider than
    /// `QRMaskChoice.maxWidth` (version 12 and up) go through QRcode_encodeInput as they are.
    /// The second value is errno when the first is nil (read before any clean-up can touch it).
    private static func encodeChoosingMask(_ input: OpaquePointer, level: QRErrorCorrection) -> (UnsafeMutablePointer<QRcode>?, Int32) {
        errno = 0
        if let encodeMask {
            guard let code = encodeMask(input, 0) else { return (nil, errno) }
            let width = Int(code.pointee.width)
            if width <= QRMaskChoice.maxWidth {
                let levelIndex = Int(level.cLevel.rawValue)
                let best = QRMaskChoice.best(code.pointee.data, width: width, appliedMask: 0, level: levelIndex)
                if best != 0 { QRMaskChoice.remask(code.pointee.data, width: width, from: 0, to: best, level: levelIndex) }
                return (code, 0)
            }
            QRcode_free(code)
            errno = 0
        }
        let code = QRcode_encodeInput(input)
        return (code, code == nil ? errno : 0)
    }

    /// Copies the module colours out of a libqrencode symbol.
    private static func matrix(from code: QRcode, level: QRErrorCorrection) -> QRMatrix {
        let width = Int(code.width)
        let count = width * width
        // QRcode docs: "If the less significant bit of the uchar is 1, the corresponding module
        // is black. The other bits are meaningless for usual applications" — keep bit 0 only.
        let packed = [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            for i in 0..<count { buffer[i] = code.data[i] & 1 }
            initialized = count
        }
        return QRMatrix(version: Int(code.version), level: level, size: width, packed: packed)
    }

    private static func libqrencodeFailure(_ error: Int32, _ what: String) -> StarlineError {
        let reason = error == 0 ? "unknown error" : String(cString: strerror(error))
        return StarlineError(
            .internalError, "libqrencode failed \(what): \(reason)",
            details: .object([("errno", .int(Int(error)))]))
    }
}
