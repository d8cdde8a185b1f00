import StarlineCore

/// One item of a revoke run, as read from the arguments or stdin (plain ids, JSON Lines, a JSON array or CSV).
struct RevokeItem: Sendable, Equatable {
    /// 1-based: the line of stdin, the element of a JSON array, or the position among the arguments.
    var line: Int
    var id: String
    var user: String?
}

/// An input line that could not be read: reported on its own result line; the run goes on.
struct MalformedInput: Sendable, Equatable {
    var line: Int
    /// The offending text, cut to 200 characters.
    var text: String
    var reason: String
}

/// The items of `sl-sessions revoke -`, whatever form they come in: a JSON array (first byte `[`), JSON Lines
/// (first line starts with `{` — what `list --jsonl` prints, extra fields ignored), CSV with a header row
/// naming an `id` column (and optionally `user`), or plain lines (one id each; blank lines and `#` comments
/// skipped). Parsed from the bytes (CRLF is one Character in Swift; bytes are not), as they arrive
/// (`RevokeInputStream`), each line or element bounded; the input as a whole has no size limit.
enum RevokeInput {
    enum Format: String, Sendable { case lines, jsonl, json, csv }

    static let maxLineBytes = 64 << 10
    static let maxIdBytes = 128

    /// Everything in `bytes` at once (tests; the tool streams).
    static func parse(_ bytes: [UInt8], defaultUser: String?) throws -> (format: Format, items: [RevokeItem], malformed: [MalformedInput]) {
        let stream = RevokeInputStream(
            LineReader(bytes: bytes, name: "standard input", maxLineBytes: maxLineBytes), defaultUser: defaultUser)
        var items: [RevokeItem] = [], malformed: [MalformedInput] = []
        while let event = try stream.next() {
            switch event {
            case .item(let item): items.append(item)
            case .malformed(let bad): malformed.append(bad)
            }
        }
        return (stream.format ?? .lines, items, malformed)
    }

    static func fromArguments(_ ids: [String], defaultUser: String?) -> (items: [RevokeItem], malformed: [MalformedInput]) {
        var items: [RevokeItem] = [], malformed: [MalformedInput] = []
        for (index, id) in ids.enumerated() {
            switch validate(id: id, user: defaultUser) {
            case .success(let item): items.append(RevokeItem(line: index + 1, id: item.id, user: item.user))
            case .failure(let reason):
                malformed.append(MalformedInput(line: index + 1, text: excerpt(ArraySlice(id.utf8)), reason: reason.description))
            }
        }
        return (items, malformed)
    }

    /// Turns what was read into events, with the default user for items that name none.
    struct Collected {
        let defaultUser: String?

        init(defaultUser: String?) { self.defaultUser = defaultUser }

        func add(_ line: Int, _ id: String?, _ user: String?, _ text: ArraySlice<UInt8>, into events: inout [RevokeInputEvent]) {
            switch RevokeInput.validate(id: id, user: user ?? defaultUser) {
            case .success(let item): events.append(.item(RevokeItem(line: line, id: item.id, user: item.user)))
            case .failure(let reason): bad(line, text, reason.description, into: &events)
            }
        }

        func bad(_ line: Int, _ text: ArraySlice<UInt8>, _ reason: String, into events: inout [RevokeInputEvent]) {
            events.append(.malformed(MalformedInput(line: line, text: RevokeInput.excerpt(text), reason: reason)))
        }

        func addObject(_ line: Int, _ object: JSON, _ text: ArraySlice<UInt8>, into events: inout [RevokeInputEvent]) {
            guard case .object = object else { return bad(line, text, "not a JSON object or a string", into: &events) }
            guard let id = object["id"] else { return bad(line, text, "no \"id\"", into: &events) }
            guard let idText = id.stringValue else {
                return bad(line, text, "\"id\" is not a string (it is \(RevokeInput.kind(id))): session ids are strings", into: &events)
            }
            if let user = object["user"], user != .null, user.stringValue == nil {
                return bad(line, text, "\"user\" is not a string (it is \(RevokeInput.kind(user)))", into: &events)
            }
            add(line, idText, object["user"]?.stringValue, text, into: &events)
        }
    }

    /// "a number", "an object"…: what a JSON value is, for a message about the wrong kind.
    static func kind(_ value: JSON) -> String {
        switch value {
        case .null: "null"
        case .bool: "a boolean"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        default: "a number"
        }
    }

    // MARK: Validation

    /// Ids and users go into URL path segments: 1…128 characters of letters, digits and `-_.:@~+=`.
    static func validate(id: String?, user: String?) -> Result<(id: String, user: String?), Reason> {
        guard let id else { return .failure(Reason("not valid UTF-8, or too long")) }
        if let problem = problem(id, "id") { return .failure(Reason(problem)) }
        if let user, let problem = problem(user, "user") { return .failure(Reason(problem)) }
        return .success((id, user))
    }

    struct Reason: Error, CustomStringConvertible {
        var description: String
        init(_ text: String) { description = text }
    }

    /// What is wrong with `value` as an id or user id (`what` names it in the message); nil when nothing is.
    static func problem(_ value: String, _ what: String) -> String? {
        let bytes = value.utf8
        if bytes.isEmpty { return "empty \(what)" }
        if bytes.count > maxIdBytes { return "\(what) longer than \(maxIdBytes) characters" }
        let allowed = bytes.allSatisfy { b in
            (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A)
                || b == UInt8(ascii: "-") || b == UInt8(ascii: "_") || b == UInt8(ascii: ".") || b == UInt8(ascii: ":")
                || b == UInt8(ascii: "@")
                || b == UInt8(ascii: "~") || b == UInt8(ascii: "+") || b == UInt8(ascii: "=")
        }
        if !allowed { return "\(what) '\(value.prefix(60))' has characters an id never has (letters, digits and -_.:@~+= only)" }
        if value == "." || value == ".." { return "\(what) '\(value)' is not an id" }
        return nil
    }

    // MARK: Bytes

    static func isSpace(_ b: UInt8) -> Bool { b == 0x20 || b == 0x09 || b == 0x0D || b == 0x0A }
    static func isBlank(_ line: ArraySlice<UInt8>) -> Bool { line.allSatisfy(isSpace) }

    static func trim(_ line: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        var slice = line
        while let f = slice.first, isSpace(f) { slice = slice.dropFirst() }
        while let l = slice.last, isSpace(l) { slice = slice.dropLast() }
        return slice
    }

    static func excerpt(_ bytes: ArraySlice<UInt8>) -> String {
        let text = String(decoding: bytes.prefix(400), as: UTF8.self)
        return text.count > 200 ? String(text.prefix(200)) + "…" : text
    }
}
