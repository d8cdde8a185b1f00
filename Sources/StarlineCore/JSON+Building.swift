// Making and editing values: the constructors for optional and Int values, and in-place member edits
// that keep an object's key order.

extension JSON {
    public static func int(_ value: Int) -> JSON { .int(Int64(value)) }

    /// `.string(value)` or `.null` for nil.
    public static func optional(_ value: String?) -> JSON { value.map(JSON.string) ?? .null }

    /// Sets `key`, replacing an existing member in place or appending a new one.
    public mutating func set(_ key: String, _ value: JSON) {
        guard case .object(var members) = self else { return }
        if let i = members.lastIndex(where: { $0.0 == key }) { members[i].1 = value } else { members.append((key, value)) }
        self = .object(members)
    }

    public mutating func remove(_ key: String) {
        guard case .object(var members) = self else { return }
        members.removeAll { $0.0 == key }
        self = .object(members)
    }
}
