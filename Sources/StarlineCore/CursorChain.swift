/// The cursors one page chain has passed through (`GET /v1/sync`, the history pages a gap is backfilled
/// from, the admin user list), so that a server handing back a cursor it gave before — a cycle of any length,
/// c1 → c2 → c1 as well as c1 → c1 — stops the client with DATA_ERROR instead of paging forever.
///
/// Memory is bounded two ways. A chain that drains (it ends at an empty page or a page without a next cursor)
/// remembers every cursor, and one longer than `maximumPages` is DATA_ERROR too: a legitimate drain that long
/// is rerun to go on (`sync` commits as it goes). A chain that follows (`tail --follow`, which may run for
/// months and legitimately sees a new cursor after every long poll) remembers the newest `window` cursors: a
/// cycle through at most that many is caught; a longer one costs at least `window` requests per round, and a
/// follower backs off from answers that bring no new events, so it cannot turn into a hot loop.
///
/// Cursors are remembered as 128-bit keyed digests of their UTF-8 bytes (SipHash with this process's random
/// seed: a server cannot aim for a collision), so a server sending long cursors cannot grow the memory.
public struct CursorChain: Sendable {
    /// The most pages one draining chain may have.
    public static let maximumPages = 100_000
    /// The cursors a following chain remembers.
    public static let followWindow = 100_000

    /// The route the cursors come from (for the error).
    public let route: String
    /// The cursor of the page asked for next (nil: from the start).
    public private(set) var current: String?
    /// Pages moved through since the chain (re)started.
    public private(set) var pages = 0
    private let following: Bool
    private let capacity: Int
    private var seen: Set<Digest> = []
    /// Following chains: the remembered digests in the order they came, as a ring (`oldest` is the next to go).
    private var order: [Digest] = []
    private var oldest = 0

    /// A chain starting at `start`; `following` remembers a window of cursors instead of failing past `capacity`.
    public init(route: String, start: String?, following: Bool = false, capacity: Int? = nil) {
        self.route = route
        self.following = following
        self.capacity = max(1, capacity ?? (following ? Self.followWindow : Self.maximumPages))
        restart(at: start)
    }

    /// Forgets every cursor and starts again at `start` — after the server expired the cursor (a gap): a server
    /// that was reset issues its numbers again, so cursors before the gap say nothing about those after it.
    public mutating func restart(at start: String?) {
        seen.removeAll()
        order.removeAll()
        oldest = 0
        pages = 0
        current = start
        if let start { remember(Self.digest(start)) }
    }

    /// The cursor a page pointed to next. False when it is the current one (no move: the caller decides what
    /// that means — the end of a drain, a quiet long poll, or a page that failed to move); true when it moved
    /// on. A cursor this chain passed through before is a cycle: DATA_ERROR, naming the route and the cursor.
    @discardableResult
    public mutating func move(to next: String) throws(StarlineError) -> Bool {
        if let current, current.utf8.elementsEqual(next.utf8) { return false }
        let digest = Self.digest(next)
        guard !seen.contains(digest) else { throw cycle(next) }
        if !following && pages >= capacity {
            throw StarlineError(
                .data,
                "\(route) goes on past \(capacity) pages in one run; stopped paging (what was stored is kept: run it again to go on)",
                details: .object([("route", .string(route)), ("pages", .int(pages))]))
        }
        remember(digest)
        pages += 1
        current = next
        return true
    }

    /// `move(to:)` for a chain whose every page must lead on (a list's next cursor, a full page of a drain):
    /// the current cursor again is a cycle of length one.
    public mutating func advance(to next: String) throws(StarlineError) {
        guard try move(to: next) else { throw cycle(next) }
    }

    private func cycle(_ cursor: String) -> StarlineError {
        StarlineError(
            .data,
            "the server's cursors on \(route) go round in a cycle: \(Self.shown(cursor)) came back after \(pages) pages; stopped paging",
            details: .object([("route", .string(route)), ("cursor", .string(Self.shown(cursor, quoted: false))), ("pages", .int(pages))]))
    }

    private mutating func remember(_ digest: Digest) {
        guard seen.insert(digest).inserted, following else { return }
        if order.count < capacity {
            order.append(digest)
        } else {
            seen.remove(order[oldest])
            order[oldest] = digest
            oldest = (oldest + 1) % capacity
        }
    }

    struct Digest: Hashable, Sendable {
        var low: Int
        var high: Int
    }

    static func digest(_ cursor: String) -> Digest {
        var low = Hasher(), high = Hasher()
        low.combine(0 as UInt8)
        high.combine(1 as UInt8)
        var bytes = cursor
        bytes.withUTF8 { buffer in
            low.combine(bytes: UnsafeRawBufferPointer(buffer))
            high.combine(bytes: UnsafeRawBufferPointer(buffer))
        }
        return Digest(low: low.finalize(), high: high.finalize())
    }

    /// At most 80 characters of a cursor, for messages (a hostile cursor may be long).
    static func shown(_ cursor: String, quoted: Bool = true) -> String {
        let text = cursor.count > 80 ? String(cursor.prefix(80)) + "…" : cursor
        return quoted ? "'\(text)'" : text
    }
}
