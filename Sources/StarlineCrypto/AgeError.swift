import StarlineCore

/// The error codes of the age format, each with its exit status (README, Exit codes): a damaged or foreign
/// file is DATA (12); only a wrong passphrase is LOCKED (13), the status of "wrong passphrase" everywhere.
extension ErrorCode {
    /// The passphrase does not open the file's scrypt stanza (age's "no identity matched" for scrypt).
    public static let ageWrongPassphrase = ErrorCode("AGE_WRONG_PASSPHRASE", exit: .locked)
    /// The file is encrypted only to recipients other than a passphrase (X25519, post-quantum, plugins):
    /// nothing here can open it.
    public static let ageUnsupportedRecipient = ErrorCode("AGE_UNSUPPORTED_RECIPIENT", exit: .data)
    /// The header breaks the format: version line, stanza syntax, non-canonical base64, a scrypt stanza
    /// with others, a missing or short payload nonce.
    public static let ageHeaderInvalid = ErrorCode("AGE_HEADER_INVALID", exit: .data)
    /// The header parses and the file key was unwrapped, but the header MAC does not match: the header was
    /// altered after it was written.
    public static let ageHeaderMACInvalid = ErrorCode("AGE_HEADER_MAC_INVALID", exit: .data)
    /// The scrypt work factor is above the accepted limit; refused before any scrypt work is done.
    public static let ageWorkFactorTooHigh = ErrorCode("AGE_WORK_FACTOR_TOO_HIGH", exit: .data)
    /// The encrypted payload is damaged, truncated, reordered, or followed by extra data.
    public static let agePayloadInvalid = ErrorCode("AGE_PAYLOAD_INVALID", exit: .data)
    /// The ASCII armor is not the strict PEM encoding age requires.
    public static let ageArmorInvalid = ErrorCode("AGE_ARMOR_INVALID", exit: .data)
}

extension StarlineError {
    static func ageHeader(_ message: String) -> StarlineError {
        StarlineError(.ageHeaderInvalid, "invalid age header: \(message)")
    }

    static func agePayload(_ message: String, chunk: UInt64) -> StarlineError {
        StarlineError(.agePayloadInvalid, "invalid age payload: \(message)", details: .object([("chunk", .int(Int64(clamping: chunk)))]))
    }

    static func ageArmor(_ message: String) -> StarlineError {
        StarlineError(.ageArmorInvalid, "invalid age armor: \(message)")
    }
}
