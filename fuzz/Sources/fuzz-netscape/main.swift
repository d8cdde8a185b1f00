import FuzzSupport
import StarlineCore
import StarlineWorkspace

// `sl-tasks import --format netscape`: bookmark HTML, and what it renders back.
Fuzz.run { bytes in
    guard let bookmarks = try? NetscapeBookmarks.parse(String(fuzz: bytes)) else { return }
    for b in bookmarks { _ = URLNormalizer.normalize(b.url) }
    let sites: [JSON] = bookmarks.map { .object([("url", .string($0.url)), ("title", .optional($0.title))]) }
    _ = try? NetscapeBookmarks.parse(NetscapeBookmarks.render(sites))
}
