import StarlineCore

/// An item's line in a revoke run's journal, typed: what `revoke` writes as an item ends (and prints as its
/// result line, without `at`), and what `--resume`, `journal verify` and `journal merge` read back — one
/// definition of the fields, so the writer and its readers cannot drift apart.
///
/// `{"line","id","user","status","attempts","error":{"code","message","serverCode"}?,"fromJournal"?,"at"?}`
public struct BulkJournalEntry: Sendable, Equatable {
    public var line: Int
    /// Nil for an input line that named no session (it is reported, never journaled as an item).
    public var id: String?
    public var user: String?
    public var status: BulkItemStatus
    public var attempts: Int
    public var error: Failure?
    /// The item was finished by an earlier run of this journal (a resumed run's result line).
    public var fromJournal = false
    /// Unix seconds when the item ended (journal records only).
    public var at: Int64?

    /// Why an item failed: the error's code and message, and the server's own code when it gave one.
    public struct Failure: Sendable, Equatable {
        public var code: String
        public var message: String
        public var serverCode: JSON?

        public init(code: String, message: String, serverCode: JSON? = nil) {
            self.code = code
            self.message = message
            self.serverCode = serverCode
        }

        public init(_ error: StarlineError) {
            self.init(code: error.code.rawValue, message: error.message, serverCode: error.details?["serverCode"])
        }
    }

    public init(
        line: Int, id: String?, user: String?, status: BulkItemStatus, attempts: Int, error: Failure? = nil,
        fromJournal: Bool = false, at: Int64? = nil
    ) {
        self.line = line
        self.id = id
        self.user = user
        self.status = status
        self.attempts = attempts
        self.error = error
        self.fromJournal = fromJournal
        self.at = at
    }

    /// An item record of a journal: one with an id and a known status (a header, a planned record, a torn or
    /// foreign line is nil).
    public init?(_ record: JSON) {
        guard let id = record["id"]?.stringValue, let status = record["status"]?.stringValue.flatMap(BulkItemStatus.init) else {
            return nil
        }
        line = record["line"]?.intValue.flatMap { Int(exactly: $0) } ?? 0
        self.id = id
        user = record["user"]?.stringValue
        self.status = status
        attempts = record["attempts"]?.intValue.flatMap { Int(exactly: $0) } ?? 0
        if let code = record["error"]?["code"]?.stringValue {
            error = Failure(
                code: code, message: record["error"]?["message"]?.stringValue ?? "", serverCode: record["error"]?["serverCode"])
        }
        fromJournal = record["fromJournal"]?.boolValue ?? false
        at = record["at"]?.stringValue.flatMap { Timestamp(rfc3339: $0) }.map(\.seconds)
    }

    /// The record: the result line's fields in their order, then `at` when set.
    public var json: JSON {
        var fields: [(String, JSON)] = [
            ("line", .int(line)), ("id", .optional(id)), ("user", .optional(user)), ("status", .string(status.rawValue)),
            ("attempts", .int(attempts))
        ]
        if let error {
            var described: [(String, JSON)] = [("code", .string(error.code)), ("message", .string(error.message))]
            if let server = error.serverCode { described.append(("serverCode", server)) }
            fields.append(("error", .object(described)))
        }
        if fromJournal { fields.append(("fromJournal", .bool(true))) }
        if let at { fields.append(("at", .string(Timestamp.rfc3339String(at)))) }
        return .object(fields)
    }
}

/// A planned item of a journal (`{"planned":{"line","id","user"}}`), written as the input is read: what a resumed
/// run owes besides its new input, and what `journal verify` checks the finished items against.
public struct BulkJournalPlan: Sendable, Equatable {
    public var line: Int
    public var target: RevocationTarget

    public init(line: Int, target: RevocationTarget) {
        self.line = line
        self.target = target
    }

    /// A planned record; nil for anything else.
    public init?(_ record: JSON) {
        guard let planned = record["planned"], let id = planned["id"]?.stringValue, let number = planned["line"]?.intValue,
            let line = Int(exactly: number)
        else { return nil }
        self.init(line: line, target: RevocationTarget(id: id, user: planned["user"]?.stringValue))
    }

    public var json: JSON {
        .object([("planned", .object([("line", .int(line)), ("id", .string(target.id)), ("user", .optional(target.user))]))])
    }
}
