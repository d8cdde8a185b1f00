import StarlineCore

/// The tasks a listing kept (`TaskFilter`), in its order, each with its working-set number, ready to print.
///
/// A filter over a mapped file (`WorkspaceScanner`) decides most tasks from the raw bytes of `due` and `done`
/// alone; such a task stays `stored`, undecoded. Printed compact (JSON Lines, or one compact array, the form
/// scripts and cron jobs read), a stored task in the shape sl-tasks writes goes out as its own bytes without
/// the whitespace, its number put after the id (`StoredTaskText`): the text `TaskRecord.output` and the JSON
/// writer give, without a tree per task (bench/tasks: `list --overdue` over 10,000 tasks against jq). Every
/// other task, and every other output form, goes through `TaskRecord.output`.
package struct TaskListing {
    enum Source {
        case decoded(JSON)
        /// The task's bytes in `bytes`.
        case stored(Range<Int>)
    }

    struct Entry {
        var source: Source
        var number: Int?
    }

    let bytes: [UInt8]
    let entries: [Entry]

    package var count: Int { entries.count }

    /// The tasks, decoded where they were not.
    package func listed() throws -> [TaskFilter.Listed] {
        try bytes.withUnsafeBufferPointer { buffer in
            try entries.map { entry in (try TaskListing.task(entry.source, buffer), entry.number) }
        }
    }

    /// The printed records (`TaskRecord.output` with the number): tables, CSV, `--fields`, pretty JSON.
    package func records() throws -> [JSON] {
        try listed().map { TaskRecord.output($0.task, number: $0.number) }
    }

    /// Appends every record compact: one per line (`lines`), or one array and a newline. The same bytes as
    /// `records()` written by the JSON writer.
    package func writeCompact(lines: Bool, into out: inout [UInt8]) throws {
        if !lines { out.append(UInt8(ascii: "[")) }
        try bytes.withUnsafeBufferPointer { buffer in
            for (i, entry) in entries.enumerated() {
                if !lines, i > 0 { out.append(UInt8(ascii: ",")) }
                if case .stored(let range) = entry.source,
                    StoredTaskText.appendCompact(UnsafeBufferPointer(rebasing: buffer[range]), number: entry.number, to: &out)
                {
                } else {
                    let task = try TaskListing.task(entry.source, buffer)
                    TaskRecord.output(task, number: entry.number).write(to: &out, style: .compact, indent: 0)
                }
                if lines { out.append(0x0A) }
            }
        }
        if !lines { out += [UInt8(ascii: "]"), 0x0A] }
    }

    static func task(_ source: Source, _ buffer: UnsafeBufferPointer<UInt8>) throws -> JSON {
        switch source {
        case .decoded(let task): task
        case .stored(let range): try JSON.parse(bytes: UnsafeBufferPointer(rebasing: buffer[range]))
        }
    }
}

/// A stored task object printed compact straight from its bytes, when that gives exactly what
/// `TaskRecord.output` does: the members `TaskRecord.make` writes, in its order and no others; strings whose
/// escapes are the ones the JSON writer uses itself (`\"`, `\\`, `\n`, `\r`, `\t`, `\b`, `\f`) and with no
/// character it would escape (DEL, and what `TerminalText.isHidden` names); times null or already `…Z` with
/// whole seconds, which `outputTime` passes through. Anything else — an extra or kept Taskwarrior field, a
/// number, a `\u` escape, an offset time — is left to the general path. The walk is `WorkspaceScanner`'s cursor
/// over the task's bytes (its white space and literals; the file was validated by it already).
enum StoredTaskText {
    static let keys: [[UInt8]] = ["id", "title", "notes", "tags", "due", "done", "doneAt", "createdAt", "updatedAt"].map {
        Array($0.utf8)
    }

    /// Appends the compact record and returns true; or appends nothing and returns false.
    static func appendCompact(_ task: UnsafeBufferPointer<UInt8>, number: Int?, to out: inout [UInt8]) -> Bool {
        let start = out.count
        var cursor = WorkspaceScanner(b: task)
        if cursor.compactStoredTask(number: number, into: &out) { return true }
        out.removeSubrange(start...)
        return false
    }
}

extension WorkspaceScanner {
    /// `StoredTaskText`: the task at the cursor, compact, `number` after its id.
    mutating func compactStoredTask(number: Int?, into out: inout [UInt8]) -> Bool {
        guard take(UInt8(ascii: "{")) else { return false }
        out.append(UInt8(ascii: "{"))
        for (i, key) in StoredTaskText.keys.enumerated() {
            if i > 0 {
                guard take(UInt8(ascii: ",")) else { return false }
                out.append(UInt8(ascii: ","))
            }
            space()
            let keyStart = pos
            guard stringAsWritten(), pos - keyStart == key.count + 2, b[(keyStart + 1)..<(pos - 1)].elementsEqual(key) else { return false }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: b[keyStart..<pos]))
            guard take(UInt8(ascii: ":")) else { return false }
            space()
            out.append(UInt8(ascii: ":"))
            let valueStart = pos
            switch i {
            case 0, 1, 2: guard stringAsWritten() else { return false }
            case 3: guard compactTags(into: &out) else { return false }
            case 5: guard literal("true") || literal("false") else { return false }
            default: guard literal("null") || storedTime() else { return false }
            }
            if i != 3 { out.append(contentsOf: UnsafeBufferPointer(rebasing: b[valueStart..<pos])) }
            if i == 0 {
                out += Array(",\"number\":".utf8)
                if let number { out += String(number).utf8 } else { out += Array("null".utf8) }
            }
        }
        guard take(UInt8(ascii: "}")) else { return false }
        space()
        guard pos == b.count else { return false }
        out.append(UInt8(ascii: "}"))
        return true
    }

    /// Skips white space, then takes `c`.
    mutating func take(_ c: UInt8) -> Bool {
        space()
        guard pos < b.count, b[pos] == c else { return false }
        pos += 1
        return true
    }

    /// `["a", "b"]` written `["a","b"]`.
    mutating func compactTags(into out: inout [UInt8]) -> Bool {
        guard take(UInt8(ascii: "[")) else { return false }
        out.append(UInt8(ascii: "["))
        space()
        if pos < b.count, b[pos] == UInt8(ascii: "]") {
            pos += 1
        } else {
            while true {
                space()
                let start = pos
                guard stringAsWritten() else { return false }
                out.append(contentsOf: UnsafeBufferPointer(rebasing: b[start..<pos]))
                space()
                guard pos < b.count else { return false }
                if b[pos] == UInt8(ascii: ",") {
                    pos += 1
                    out.append(UInt8(ascii: ","))
                    continue
                }
                guard b[pos] == UInt8(ascii: "]") else { return false }
                pos += 1
                break
            }
        }
        out.append(UInt8(ascii: "]"))
        return true
    }

    /// A string of twenty characters ending in `Z` (`outputTime` prints it as it is).
    mutating func storedTime() -> Bool {
        let start = pos
        guard stringAsWritten(), pos - start == 22, b[pos - 2] == UInt8(ascii: "Z") else { return false }
        return !b[start..<pos].contains(UInt8(ascii: "\\"))
    }

    /// A string (already validated by `WorkspaceScanner`) that the JSON writer would write with the same bytes.
    mutating func stringAsWritten() -> Bool {
        guard pos < b.count, b[pos] == UInt8(ascii: "\"") else { return false }
        pos += 1
        while true {
            pos = JSONStringBytes.plainEnd(b, from: pos)
            guard pos < b.count else { return false }
            let c = b[pos]
            switch c {
            case UInt8(ascii: "\""):
                pos += 1
                return true
            case UInt8(ascii: "\\"):
                guard pos + 1 < b.count else { return false }
                switch b[pos + 1] {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"),
                    UInt8(ascii: "b"), UInt8(ascii: "f"):
                    pos += 2
                default: return false
                }
            case 0xC2...0xDF:
                guard pos + 1 < b.count else { return false }
                if TerminalText.isHidden(UInt32(c & 0x1F) << 6 | UInt32(b[pos + 1] & 0x3F)) { return false }
                pos += 2
            case 0xE0...0xEF:
                guard pos + 2 < b.count else { return false }
                let scalar = UInt32(c & 0x0F) << 12 | UInt32(b[pos + 1] & 0x3F) << 6 | UInt32(b[pos + 2] & 0x3F)
                if TerminalText.isHidden(scalar) { return false }
                pos += 3
            case 0xF0...0xF4:
                guard pos + 3 < b.count else { return false }
                pos += 4
            default: return false  // DEL, a control character, a stray byte
            }
        }
    }
}
