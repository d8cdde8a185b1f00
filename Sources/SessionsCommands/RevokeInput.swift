import StarlineCore

/// One item of a revoke run, as read from the arguments or stdin (issue 11 item 2).
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
/// skipped). Parsed from the bytes (CRLF is one Character in Swift; bytes are not), in one pass, bounded.
enum RevokeInput {
    enum Format: String, Sendable { case lines, jsonl, json, csv }

    /// 256 MiB: `list --all-users --jsonl` prints ~200 bytes a session, so this is about the item limit.
    static let maxInputBytes = 256 << 20
    static let maxItems = 1_000_000
    static let maxLineBytes = 64 << 10
    static let maxIdBytes = 128

    static func parse(_ bytes: [UInt8], defaultUser: String?) throws -> (format: Format, items: [RevokeItem], malformed: [MalformedInput]) {
        guard bytes.count <= maxInputBytes else {
            throw StarlineError(.data, "the input is larger than \(maxInputBytes >> 20) MiB; split it (the journal makes runs resumable)",
                                details: .object([("limit", .int(maxInputBytes))]))
        }
        var body = bytes[...]
        if body.starts(with: [0xEF, 0xBB, 0xBF]) { body = body.dropFirst(3) }
        let lines = splitLines(body)
        guard let first = lines.first(where: { !isBlank($0.bytes) }) else { return (.lines, [], []) }
        let format: Format
        if let start = first.bytes.first(where: { !isSpace($0) }), start == UInt8(ascii: "[") {
            format = .json
        } else if first.bytes.first(where: { !isSpace($0) }) == UInt8(ascii: "{") {
            format = .jsonl
        } else if first.bytes.contains(UInt8(ascii: ",")) || RevokeCSV.isHeader(first.bytes) {
            format = .csv
        } else {
            format = .lines
        }
        var found = Collected(defaultUser: defaultUser)
        switch format {
        case .json:
            let document: JSON
            do { document = try JSON.parse(Array(body)) } catch let error as StarlineError {
                throw StarlineError(.data, "the input starts like a JSON array but is not one: \(error.message)")
            }
            guard let elements = document.arrayValue else { throw StarlineError(.data, "the input is JSON but not an array") }
            for (index, element) in elements.enumerated() {
                let text = ArraySlice(element.serialized().utf8)
                if let id = element.stringValue { found.add(index + 1, id, nil, text) } else { found.addObject(index + 1, element, text) }
            }
        case .jsonl:
            for line in lines where !isBlank(line.bytes) {
                guard line.bytes.count <= maxLineBytes, let object = try? JSON.parse(Array(line.bytes)) else {
                    found.bad(line.number, line.bytes, line.bytes.count > maxLineBytes ? "the line is longer than \(maxLineBytes) bytes" : "not a JSON object")
                    continue
                }
                found.addObject(line.number, object, line.bytes)
            }
        case .csv:
            try RevokeCSV.read(lines, into: &found)
        case .lines:
            for line in lines {
                let trimmed = trim(line.bytes)
                if trimmed.isEmpty || trimmed.first == UInt8(ascii: "#") { continue }
                found.add(line.number, line.bytes.count > maxLineBytes ? nil : String(validating: trimmed, as: UTF8.self), nil, line.bytes)
            }
        }
        guard found.items.count <= maxItems else {
            throw StarlineError(.data, "more than \(maxItems) items; split the input (the journal makes runs resumable)",
                                details: .object([("limit", .int(maxItems))]))
        }
        return (format, found.items, found.malformed)
    }

    static func fromArguments(_ ids: [String], defaultUser: String?) -> (items: [RevokeItem], malformed: [MalformedInput]) {
        var items: [RevokeItem] = [], malformed: [MalformedInput] = []
        for (index, id) in ids.enumerated() {
            switch validate(id: id, user: defaultUser) {
            case .success(let item): items.append(RevokeItem(line: index + 1, id: item.id, user: item.user))
            case .failure(let reason): malformed.append(MalformedInput(line: index + 1, text: excerpt(ArraySlice(id.utf8)), reason: reason.description))
            }
        }
        return (items, malformed)
    }

    /// What the reading found so far.
    struct Collected {
        let defaultUser: String?
        var items: [RevokeItem] = []
        var malformed: [MalformedInput] = []

        init(defaultUser: String?) { self.defaultUser = defaultUser }

        mutating func add(_ line: Int, _ id: String?, _ user: String?, _ text: ArraySlice<UInt8>) {
            switch RevokeInput.validate(id: id, user: user ?? defaultUser) {
            case .success(let item): items.append(RevokeItem(line: line, id: item.id, user: item.user))
            case .failure(let reason): bad(line, text, reason.description)
            }
        }

        mutating func bad(_ line: Int, _ text: ArraySlice<UInt8>, _ reason: String) {
            malformed.append(MalformedInput(line: line, text: RevokeInput.excerpt(text), reason: reason))
        }

        mutating func addObject(_ line: Int, _ object: JSON, _ text: ArraySlice<UInt8>) {
            guard case .object = object else { return bad(line, text, "not a JSON object or a string") }
            guard let id = object["id"]?.stringValue else { return bad(line, text, "no \"id\" string") }
            if let user = object["user"], user != .null, user.stringValue == nil { return bad(line, text, "\"user\" is not a string") }
            add(line, id, object["user"]?.stringValue, text)
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
                || b == UInt8(ascii: "-") || b == UInt8(ascii: "_") || b == UInt8(ascii: ".") || b == UInt8(ascii: ":") || b == UInt8(ascii: "@")
                || b == UInt8(ascii: "~") || b == UInt8(ascii: "+") || b == UInt8(ascii: "=")
        }
        if !allowed { return "\(what) '\(value.prefix(60))' has characters an id never has (letters, digits and -_.:@~+= only)" }
        if value == "." || value == ".." { return "\(what) '\(value)' is not an id" }
        return nil
    }

    // MARK: Bytes

    struct Line {
        var number: Int
        var bytes: ArraySlice<UInt8>
    }

    /// Lines at LF, with a CR before it dropped.
    static func splitLines(_ bytes: ArraySlice<UInt8>) -> [Line] {
        var lines: [Line] = []
        var start = bytes.startIndex
        var number = 1
        for index in bytes.indices where bytes[index] == 0x0A {
            lines.append(Line(number: number, bytes: dropCR(bytes[start..<index])))
            start = index + 1
            number += 1
        }
        if start < bytes.endIndex { lines.append(Line(number: number, bytes: dropCR(bytes[start...]))) }
        return lines
    }

    private static func dropCR(_ line: ArraySlice<UInt8>) -> ArraySlice<UInt8> { line.last == 0x0D ? line.dropLast() : line }
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
