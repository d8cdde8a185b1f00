import FuzzSupport
import StarlineCore

// JSON.parse on any bytes: a value or a thrown DATA_ERROR, never a trap; what parses serialises and parses
// back to the same value.
Fuzz.run { bytes in
    guard let value = try? JSON.parse(bytes) else { return }
    let text = value.serialized()
    guard let again = try? JSON.parse(text), again == value else { fatalError("JSON round trip changed the value: \(text)") }
    _ = value.serialized(.pretty)
}
