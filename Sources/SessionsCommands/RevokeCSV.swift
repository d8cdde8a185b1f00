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

    /// The header row: where the id and user columns are.
    struct Header {
        let columns: Int
        let id: Int
        let user: Int?

        init(line: Int, _ bytes: ArraySlice<UInt8>) throws {
            guard let names = RevokeCSV.fields(bytes)?.map({ $0.lowercased() }), let id = names.firstIndex(of: "id") else {
                throw StarlineError(
                    .data, "line \(line): CSV input needs a header row with an id column (id,user)",
                    details: .object([("line", .int(line))]))
            }
            columns = names.count
            self.id = id
            user = names.firstIndex { ["user", "userid", "user_id"].contains($0) }
        }

        /// One data row.
        func row(_ line: Int, _ bytes: ArraySlice<UInt8>, found: RevokeInput.Collected, into events: inout [RevokeInputEvent]) {
            guard let values = RevokeCSV.fields(bytes) else {
                return found.bad(line, bytes, "unbalanced quotes, or not UTF-8", into: &events)
            }
            guard values.count == columns else {
                return found.bad(line, bytes, "\(values.count) fields where the header has \(columns)", into: &events)
            }
            let userValue = self.user.map { values[$0].trimmingWhitespace() }.flatMap { $0.isEmpty ? nil : $0 }
            found.add(line, values[id].trimmingWhitespace(), userValue, bytes, into: &events)
        }
    }

    /// The fields of one line; nil when a quote is left open or a field is not UTF-8.
    static func fields(_ line: ArraySlice<UInt8>) -> [String]? {
        var fields: [String] = []
        var field: [UInt8] = []
        var quoted = false, inQuotes = false
        var index = line.startIndex
        func finish() -> Bool {
            guard let text = String(utf8Validating: field) else { return false }
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
