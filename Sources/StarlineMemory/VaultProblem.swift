import StarlineCore

/// One thing `verify` found wrong, naming what it concerns.
public struct VaultProblem: Sendable, Equatable, CustomStringConvertible {
    public enum Kind: String, Sendable {
        /// The manifest lists a record whose row is gone.
        case recordMissing
        /// A row the manifest does not list.
        case recordUnexpected
        /// A row whose version, key epoch or attachment files differ from the manifest's.
        case recordVersion
        /// A record that does not decrypt or parse.
        case recordCorrupt
        /// An attachment file that is missing, truncated, altered or has the wrong hash.
        case attachmentCorrupt
        /// The manifest itself does not authenticate or parse.
        case manifestCorrupt
        /// The header differs from the one the manifest was written with (an older header put back).
        case headerMismatch
        /// The vault's counter is below the pin, or the vault is not the pinned one.
        case rollback
        /// The search index lacks tokens of a record, or has tokens no record has.
        case indexMismatch
    }

    public var kind: Kind
    /// The record id, `record/attachment name`, `manifest`, `header`, `index` or `pin`.
    public var subject: String
    public var message: String

    public init(_ kind: Kind, subject: String, _ message: String) {
        self.kind = kind
        self.subject = subject
        self.message = message
    }

    public var description: String { "\(kind.rawValue) \(subject): \(message)" }

    /// The problem as the error a strict open throws.
    func error(path: String) -> StarlineError {
        let code: ErrorCode = kind == .rollback ? .rollbackDetected : .vaultCorrupt
        var details: [(String, JSON)] = [("problem", .string(kind.rawValue)), ("path", .string(path))]
        switch kind {
        case .recordMissing, .recordUnexpected, .recordVersion, .recordCorrupt: details.append(("record", .string(subject)))
        default: details.append(("part", .string(subject)))
        }
        return StarlineError(code, message, details: .object(details))
    }
}
