import FuzzSupport
import StarlineCore

// The base-URL rules (W4), the URL parser under them, friend links (W6) and the percent decoders.
let chatBase = try! BaseURL(validating: "https://chat.example.test/base")

Fuzz.run { bytes in
    let text = String(fuzz: bytes)
    if let base = try? BaseURL(validating: text) {
        _ = base.description
        // What validated validates again, as itself.
        guard let again = try? BaseURL(validating: base.description), again == base else {
            fatalError("a validated base URL does not validate as itself: \(base)")
        }
    }
    if let url = WebURL(text) {
        _ = chatBase.sameOrigin(url)
        _ = FriendLink.code(in: url, chatBase: chatBase)
    }
    _ = try? FriendLink.make(text, chatBase: chatBase)
    _ = FriendLink.isValidCode(text)
    _ = PercentEncoding.decodeForm(text)
    _ = PercentEncoding.encode(text)
    if let t = Timestamp(rfc3339: text) {
        guard Timestamp(rfc3339: t.rfc3339) == t else { fatalError("an RFC 3339 time does not read back: \(text)") }
        _ = t.taskwarrior
    }
}
