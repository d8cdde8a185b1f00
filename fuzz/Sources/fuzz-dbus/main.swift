import FuzzSupport
import StarlineCore
@testable import StarlineKeyring

// The D-Bus wire reader of the Secret Service client, two ways:
// 1. one whole message from the bus, any bytes (framing, header fields, body by its signature);
// 2. values by any signature: the first byte is the signature's length, then the signature, then the values
//    (little-endian, from an 8-aligned start as in a body) — so signatures that no well-formed header carries
//    (empty structures, deep nesting, dict entries out of place) reach the reader's loops directly.
// A hang or runaway memory (libFuzzer's -timeout and -rss_limit_mb) is a finding like a crash.
Fuzz.run { bytes in
    if bytes.count >= 16 { _ = try? DBusMessage.frameLength(Array(bytes.prefix(16))) }
    _ = try? DBusMessage.decode(bytes)

    var input = bytes[...]
    let length = Int(input.popFirst() ?? 0)
    let signature = String(decoding: input.prefix(length), as: UTF8.self)
    input = input.dropFirst(length)
    guard let types = try? DBusSignature.split(signature),
          var reader = try? DBusReader([UInt8(ascii: "l"), 0, 0, 0, 0, 0, 0, 0] + input),
          (try? reader.seek(to: 8)) != nil else { return }
    for type in types {
        if (try? reader.read(type)) == nil { break }
    }
}
