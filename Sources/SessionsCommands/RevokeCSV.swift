import StarlineCore

/// CSV input of `sl-sessions revoke -` (GAM's idiom): a header row naming an `id` column and optionally a
/// `user` one (`userId`, `user_id` too; names are case-insensitive; other columns are ignored), then one row per
/// session. RFC 4180 fields: quoted with `"`, a quote inside doubled. A quoted field that runs past the end
/// of its line is refused for that row (ids never hold line breaks), so line numbers stay exact.
enum RevokeCSV {
    static func isHeader(_ line: ArraySlice<UInt8>) -> Bool {
        guard let fields = fields(line) else { return false }
        return fields.contains { $0.lowercased() == "id" }
    }

    static func read(_ lines: [RevokeInput.Line], into found: inout RevokeInput.Collected) throws {
        var rows = lines.filter { !RevokeInput.isBlank($0.bytes) }[...]
        guard let header = rows.popFirst() else { return }
        guard let names = fields(header.bytes)?.map({ $0.lowercased() }), let idColumn = names.firstIndex(of: "id") else {
            throw StarlineError(.data, "line \(header.number): CSV input needs a header row with an id column (id,user)",
                                details: .object([("line", .int(header.number))]))
        }
        let userColumn = names.firstIndex { ["user", "userid", "user_id"].contains($0) }
        for row in rows {
            guard row.bytes.count <= RevokeInput.maxLineBytes else {
                found.bad(row.number, row.bytes, "the line is longer than \(RevokeInput.maxLineBytes) bytes")
                continue
            }
            guard let values = fields(row.bytes) else {
                found.bad(row.number, row.bytes, "unbalanced quotes, or not UTF-8")
                continue
            }
            guard values.count == names.count else {
                found.bad(row.number, row.bytes, "\(values.count) fields where the header has \(names.count)")
                continue
            }
            let user = userColumn.map { values[$0].trimmingWhitespace() }.flatMap { $0.isEmpty ? nil : $0 }
            found.add(row.number, values[idColumn].trimmingWhitespace(), user, row.bytes)
        }
    }

    /// The fields of one line; nil when a quote is left open or a field is not UTF-8.
    static func fields(_ line: ArraySlice<UInt8>) -> [String]? {
        var fields: [String] = []
        var field: [UInt8] = []
        var quoted = false, inQuotes = false
        var index = line.startIndex
        func finish() -> Bool {
            guard let text = String(validating: field, as: UTF8.self) else { return false }
            fields.append(text)
            field.removeAll(keepingCapacity: true)
            quoted = false
            return true
        }
        while index < line.endIndex {
            let b = line[index]
            if inQuotes {
                if b == UInt8(ascii: "\"") {
                    if index + 1 < line.endIndex, line[index + 1] == UInt8(ascii: "\"") {
                        field.append(b)
                        index += 1
                    } else {
                        inQuotes = false
                    }
                } else {
                    field.append(b)
                }
            } else if b == UInt8(ascii: ",") {
                guard finish() else { return nil }
            } else if b == UInt8(ascii: "\"") && field.allSatisfy(RevokeInput.isSpace) && !quoted {
                field.removeAll()
                inQuotes = true
                quoted = true
            } else {
                field.append(b)
            }
            index += 1
        }
        guard !inQuotes, finish() else { return nil }
        return fields
    }
}
