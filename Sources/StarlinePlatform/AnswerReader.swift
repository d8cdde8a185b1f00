import StarlineCore

/// Reads fields of an answer, with `DATA_ERROR` naming the route and field when the shape is wrong.
struct AnswerReader {
    let json: JSON
    let route: String
    var prefix = ""

    func malformed(_ what: String) -> StarlineError {
        StarlineError(.data, "unexpected answer from \(route): \(what)", details: .object([("route", .string(route))]))
    }

    func string(_ key: String) throws -> String {
        guard let value = json[key]?.stringValue else { throw malformed("'\(prefix)\(key)' is missing or not a string") }
        return value
    }

    func int(_ key: String) throws -> Int64 {
        guard let value = json[key]?.intValue else { throw malformed("'\(prefix)\(key)' is missing or not an integer") }
        return value
    }

    func bool(_ key: String) throws -> Bool {
        guard let value = json[key]?.boolValue else { throw malformed("'\(prefix)\(key)' is missing or not a boolean") }
        return value
    }

    func object(_ key: String) throws -> JSON {
        guard let value = json[key], case .object = value else { throw malformed("'\(prefix)\(key)' is missing or not an object") }
        return value
    }

    func array(_ key: String) throws -> [JSON] {
        guard let value = json[key]?.arrayValue else { throw malformed("'\(prefix)\(key)' is missing or not an array") }
        return value
    }

    func strings(_ key: String) throws -> [String] {
        let items = try array(key)
        let strings = items.compactMap(\.stringValue)
        guard strings.count == items.count else { throw malformed("'\(prefix)\(key)' is not an array of strings") }
        return strings
    }
}
