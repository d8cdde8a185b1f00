import StarlineCore

/// Reads fields of an answer, with `DATA_ERROR` naming the route and field when the shape is wrong.
package struct AnswerReader {
    package let json: JSON
    package let route: String
    package var prefix = ""

    package init(json: JSON, route: String, prefix: String = "") {
        self.json = json
        self.route = route
        self.prefix = prefix
    }

    package func malformed(_ what: String) -> StarlineError {
        StarlineError(.data, "unexpected answer from \(route): \(what)", details: .object([("route", .string(route))]))
    }

    package func string(_ key: String) throws -> String {
        guard let value = json[key]?.stringValue else { throw malformed("'\(prefix)\(key)' is missing or not a string") }
        return value
    }

    package func int(_ key: String) throws -> Int64 {
        guard let value = json[key]?.intValue else { throw malformed("'\(prefix)\(key)' is missing or not an integer") }
        return value
    }

    package func bool(_ key: String) throws -> Bool {
        guard let value = json[key]?.boolValue else { throw malformed("'\(prefix)\(key)' is missing or not a boolean") }
        return value
    }

    package func object(_ key: String) throws -> JSON {
        guard let value = json[key], case .object = value else { throw malformed("'\(prefix)\(key)' is missing or not an object") }
        return value
    }

    package func array(_ key: String) throws -> [JSON] {
        guard let value = json[key]?.arrayValue else { throw malformed("'\(prefix)\(key)' is missing or not an array") }
        return value
    }

    package func strings(_ key: String) throws -> [String] {
        let items = try array(key)
        let strings = items.compactMap(\.stringValue)
        guard strings.count == items.count else { throw malformed("'\(prefix)\(key)' is not an array of strings") }
        return strings
    }
}
