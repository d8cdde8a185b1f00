import StarlineCore

/// Accumulates JSON documents and records as bytes (StarlineCore's linear writer), for the big outputs of
/// this tool: the whole workspace file and listings of thousands of records.
package struct JSONWriter {
    package var bytes: [UInt8] = []

    package init(capacity: Int = 64 * 1024) { bytes.reserveCapacity(capacity) }

    package mutating func write(_ value: JSON, pretty: Bool, indent: Int = 0) {
        value.write(to: &bytes, style: pretty ? .pretty : .compact, indent: indent)
    }

    /// One document followed by a newline.
    package static func document(_ value: JSON, pretty: Bool) -> [UInt8] {
        var w = JSONWriter()
        w.write(value, pretty: pretty)
        w.bytes.append(0x0A)
        return w.bytes
    }
}
