import StarlineCore

/// What one unit of `revoke -`'s input came to.
enum RevokeInputEvent: Sendable, Equatable {
    case item(RevokeItem)
    case malformed(MalformedInput)
}

/// `sl-sessions revoke -`'s input read as it arrives: `… | sl-sessions revoke -` starts
/// revoking before the producer ends, and no input is too large — memory holds one chunk and one line (or one
/// array element), never the whole input. The format is decided by the first byte that is not white space
/// (`[` a JSON array, `{` JSON Lines) or the first line (a CSV header, else plain ids), as `RevokeInput` says.
final class RevokeInputStream {
    private let reader: LineReader
    private var found: RevokeInput.Collected
    private var queued: [RevokeInputEvent] = []
    private var taken = 0
    private(set) var format: RevokeInput.Format?
    private var csv: RevokeCSV.Header?
    private var array: JSONArrayElements?
    /// An error met in a chunk after some of its elements: thrown once those were handed out.
    private var deferred: StarlineError?

    init(_ reader: LineReader, defaultUser: String?) {
        self.reader = reader
        found = RevokeInput.Collected(defaultUser: defaultUser)
    }

    /// The next item or malformed unit; nil at the end. Throws for input that cannot go on (a JSON array that
    /// breaks off, a CSV without an id column): the events before it were already handed out.
    func next() throws -> RevokeInputEvent? {
        while true {
            if taken < queued.count {
                defer { taken += 1 }
                return queued[taken]
            }
            queued.removeAll(keepingCapacity: true)
            taken = 0
            guard try readMore() else { return nil }
        }
    }

    /// Reads until at least one event is queued or the input ends (false).
    private func readMore() throws -> Bool {
        if let deferred {
            self.deferred = nil
            throw deferred
        }
        if format == nil {
            guard let first = try reader.skipWhitespace() else { return false }
            if first == UInt8(ascii: "[") {
                format = .json
                array = JSONArrayElements(limit: RevokeInput.maxLineBytes)
            } else if first == UInt8(ascii: "{") {
                format = .jsonl
            }
        }
        if format == .json { return try readArray() }
        while queued.isEmpty {
            guard let line = try reader.next() else { return false }
            guard let bytes = line.bytes else {
                found.bad(line.number, [], "the line is longer than \(RevokeInput.maxLineBytes) bytes", into: &queued)
                continue
            }
            if RevokeInput.isBlank(bytes[...]) { continue }
            if format == nil {
                format = bytes.contains(UInt8(ascii: ",")) || RevokeCSV.isHeader(bytes[...]) ? .csv : .lines
                if format == .csv {
                    csv = try RevokeCSV.Header(line: line.number, bytes[...])
                    continue
                }
            }
            switch format {
            case .jsonl:
                guard let object = try? JSON.parse(bytes) else {
                    found.bad(line.number, bytes[...], "not a JSON object", into: &queued)
                    continue
                }
                found.addObject(line.number, object, bytes[...], into: &queued)
            case .csv:
                csv?.row(line.number, bytes[...], found: found, into: &queued)
            default:
                let trimmed = RevokeInput.trim(bytes[...])
                if trimmed.isEmpty || trimmed.first == UInt8(ascii: "#") { continue }
                found.add(line.number, String(utf8Validating: trimmed), nil, bytes[...], into: &queued)
            }
        }
        return true
    }

    private func readArray() throws -> Bool {
        while queued.isEmpty {
            guard var elements = array else { return false }
            guard let chunk = try reader.nextChunk() else {
                try elements.finish()
                return false
            }
            do {
                try elements.feed(chunk) { index, element in
                    guard let bytes = element else {
                        found.bad(index, [], "the element is longer than \(RevokeInput.maxLineBytes) bytes", into: &queued)
                        return
                    }
                    guard let value = try? JSON.parse(bytes) else {
                        found.bad(index, bytes[...], "not a JSON string or object", into: &queued)
                        return
                    }
                    if let id = value.stringValue {
                        found.add(index, id, nil, bytes[...], into: &queued)
                    } else {
                        found.addObject(index, value, bytes[...], into: &queued)
                    }
                }
            } catch {
                // The array is over either way; what came before the break is handed out first.
                array = nil
                guard !queued.isEmpty else { throw error }
                deferred = (error as? StarlineError) ?? StarlineError(.data, "\(error)")
                return true
            }
            array = elements
        }
        return true
    }
}

/// The top-level elements of a JSON array, cut from chunks as they come: strings (with escapes) and nesting
/// are followed, so commas and brackets inside them do not split. An element over `limit` bytes is reported
/// as nil and not held. A document that is not one array (text after `]`, the end before it) throws DATA.
struct JSONArrayElements {
    let limit: Int
    private var opened = false, closed = false
    private var depth = 0, inString = false, escaped = false
    private var element: [UInt8] = []
    private var tooLong = false
    private var index = 0

    init(limit: Int) { self.limit = limit }

    mutating func feed(_ chunk: [UInt8], _ emit: (Int, [UInt8]?) throws -> Void) throws {
        for b in chunk {
            if closed {
                guard RevokeInput.isSpace(b) else { throw Self.notAnArray("there is text after the closing ]") }
                continue
            }
            if !opened {
                if RevokeInput.isSpace(b) { continue }
                guard b == UInt8(ascii: "[") else { throw Self.notAnArray("it does not start with [") }
                opened = true
                continue
            }
            if inString {
                if escaped {
                    escaped = false
                } else if b == UInt8(ascii: "\\") {
                    escaped = true
                } else if b == UInt8(ascii: "\"") {
                    inString = false
                }
                append(b)
                continue
            }
            switch b {
            case UInt8(ascii: "\""): inString = true; append(b)
            case UInt8(ascii: "["), UInt8(ascii: "{"): depth += 1; append(b)
            case UInt8(ascii: "]") where depth == 0:
                closed = true
                if index > 0 || !RevokeInput.isBlank(element[...]) { try end(emit) }
            case UInt8(ascii: "]"), UInt8(ascii: "}"): depth -= 1; append(b)
            case UInt8(ascii: ",") where depth == 0: try end(emit)
            default: append(b)
            }
        }
    }

    mutating func finish() throws {
        if !closed { throw Self.notAnArray(opened ? "it ends before its closing ]" : "it is empty") }
    }

    private mutating func append(_ b: UInt8) {
        guard !tooLong else { return }
        if element.count >= limit {
            tooLong = true
            element.removeAll()
        } else if !(element.isEmpty && RevokeInput.isSpace(b)) {
            element.append(b)
        }
    }

    private mutating func end(_ emit: (Int, [UInt8]?) throws -> Void) throws {
        index += 1
        try emit(index, tooLong ? nil : element)
        element.removeAll(keepingCapacity: true)
        tooLong = false
    }

    static func notAnArray(_ why: String) -> StarlineError {
        StarlineError(.data, "the input starts like a JSON array but is not one: \(why)")
    }
}
