import StarlineCore
@testable import StarlineWorkspace
import Testing

/// Parsers and formats that do not depend on the local time zone.
@Suite struct TimestampTests {
    @Test("RFC 3339 output is UTC with whole seconds")
    func formatsUTC() {
        #expect(Timestamp(seconds: 0).rfc3339 == "1970-01-01T00:00:00Z")
        #expect(Timestamp(seconds: 1_796_025_600).rfc3339 == "2026-11-30T08:00:00Z")
        #expect(Timestamp(seconds: 951_782_400).rfc3339 == "2000-02-29T00:00:00Z")
        #expect(Timestamp(seconds: -1).rfc3339 == "1969-12-31T23:59:59Z")
    }

    @Test(
        "RFC 3339 input: zones, fractions, lowercase, space separator",
        arguments: [
            ("2026-11-30T08:00:00Z", Int64(1_796_025_600)),
            ("2026-11-30t08:00:00z", 1_796_025_600),
            ("2026-11-30 08:00:00Z", 1_796_025_600),
            ("2026-11-30T09:00:00+01:00", 1_796_025_600),
            ("2026-11-30T03:30:00-04:30", 1_796_025_600),
            ("2026-11-30T08:00:00.999Z", 1_796_025_600),
            ("2000-02-29T00:00:00Z", 951_782_400)
        ])
    func parses(text: String, seconds: Int64) {
        #expect(Timestamp(rfc3339: text)?.seconds == seconds)
    }

    @Test(
        "RFC 3339 input that is not a valid date-time is refused",
        arguments: [
            "", "2026-11-30", "2026-11-30T08:00:00", "2026-02-29T00:00:00Z", "2026-13-01T00:00:00Z",
            "2026-11-31T00:00:00Z", "2026-11-30T24:00:00Z", "2026-11-30T08:60:00Z", "2026-11-30T08:00:00+0100",
            "2026-11-30T08:00:00.Z", "2026-11-30T08:00:00Zjunk", "26-11-30T08:00:00Z", "2026-11-30X08:00:00Z"
        ])
    func refuses(text: String) {
        #expect(Timestamp(rfc3339: text) == nil)
    }

    @Test func taskwarriorDates() {
        #expect(Timestamp(seconds: 1_796_025_600).taskwarrior == "20261130T080000Z")
        #expect(Timestamp(taskwarrior: "20261130T080000Z")?.seconds == 1_796_025_600)
        #expect(Timestamp(taskwarrior: "2026-11-30T08:00:00Z")?.seconds == 1_796_025_600)
        #expect(Timestamp(taskwarrior: "20261131T080000Z") == nil)
        #expect(Timestamp(taskwarrior: "tomorrow") == nil)
    }

    @Test("durations: days and weeks are calendar days, hours minutes seconds are exact")
    func durations() {
        #expect(TimeSpan(parsing: "1d") == TimeSpan(days: 1))
        #expect(TimeSpan(parsing: "+2w") == TimeSpan(days: 14))
        #expect(TimeSpan(parsing: "36h") == TimeSpan(seconds: 36 * 3600))
        #expect(TimeSpan(parsing: "1d12h30m5s") == TimeSpan(days: 1, seconds: 12 * 3600 + 30 * 60 + 5))
        #expect(TimeSpan(parsing: "90M") == TimeSpan(seconds: 5400))
        // Bare seconds, as every duration option takes them.
        #expect(TimeSpan(parsing: "5") == TimeSpan(seconds: 5))
        for bad in ["", "d", "1x", "+", "1d2", "-1d", "1.5h", "１d"] {
            #expect(TimeSpan(parsing: bad) == nil, "\(bad) should be refused")
        }
    }

    @Test("date input with an explicit zone or relative hours does not depend on TZ")
    func zoneIndependentDateInput() {
        let now = Timestamp(seconds: 1_796_025_600)  // 2026-11-30T08:00:00Z
        #expect(DateInput.resolve("now", now: now) == now)
        #expect(DateInput.resolve("+36h", now: now) == now + 36 * 3600)
        #expect(DateInput.resolve("-90m", now: now) == now - 5400)
        #expect(DateInput.resolve("2026-12-24T18:00:00+01:00", now: now) == Timestamp(rfc3339: "2026-12-24T17:00:00Z"))
        #expect(DateInput.resolve("2026-12-24T18:00Z", now: now) == Timestamp(rfc3339: "2026-12-24T18:00:00Z"))
        #expect(DateInput.resolve("2026-12-24 18:00-05:00", now: now) == Timestamp(rfc3339: "2026-12-24T23:00:00Z"))
        for bad in ["", "soon", "2026-02-30", "2026-12-24T25:00", "+3x", "tomorrow 9", "friday 25:00", "2026-12-24T18:00+1"] {
            #expect(DateInput.resolve(bad, now: now) == nil, "\(bad) should be refused")
        }
    }
}

@Suite struct IdentifierTests {
    @Test("UUIDs are random v4, lowercase, canonical")
    func uuids() {
        var seen = Set<String>()
        for _ in 0..<1000 {
            let id = RandomUUID.make()
            #expect(RandomUUID.isValid(id))
            #expect(id == id.lowercased())
            let chars = Array(id)
            #expect(chars[14] == "4")
            #expect("89ab".contains(chars[19]))
            seen.insert(id)
        }
        #expect(seen.count == 1000)
        #expect(!RandomUUID.isValid("not-a-uuid"))
        #expect(!RandomUUID.isValid("0123456789abcdef0123456789abcdef0123"))
    }

    @Test("id prefixes: exact id wins, unique prefix found, ambiguity lists every candidate")
    func prefixes() {
        let ids: [String?] = [
            "aaaa1111-0000-4000-8000-000000000001", "aaaa2222-0000-4000-8000-000000000002",
            "bbbb0000-0000-4000-8000-000000000003", nil
        ]
        #expect(IDPrefix.match("aaaa1", in: ids) == .found(0))
        #expect(IDPrefix.match("AAAA2", in: ids) == .found(1))
        #expect(IDPrefix.match("b", in: ids) == .found(2))
        #expect(IDPrefix.match("aaaa", in: ids) == .ambiguous([0, 1]))
        #expect(IDPrefix.match("c", in: ids) == .none)
        #expect(IDPrefix.match("", in: ids) == .none)
        let nested: [String?] = ["abc", "abcd"]
        #expect(IDPrefix.match("abc", in: nested) == .found(0))
    }
}

@Suite struct URLNormalizerTests {
    @Test(
        "normalisation for dedup",
        arguments: [
            ("HTTPS://Example.COM/", "https://example.com/"),
            ("https://example.com", "https://example.com/"),
            ("https://example.com:443/a", "https://example.com/a"),
            ("http://example.com:80/a", "http://example.com/a"),
            ("http://example.com:8080/a", "http://example.com:8080/a"),
            ("https://example.com:80/a", "https://example.com:80/a"),
            ("https://example.com/docs/", "https://example.com/docs"),
            ("https://example.com/docs/#intro", "https://example.com/docs"),
            ("https://example.com/a/./b/../c", "https://example.com/a/c"),
            ("https://example.com/Path/Case", "https://example.com/Path/Case"),
            ("https://example.com/?utm_source=x&b=2&UTM_Medium=y&a=1&fbclid=z&gclid=q", "https://example.com/?b=2&a=1"),
            ("https://example.com/?z=1&a=2", "https://example.com/?z=1&a=2"),
            ("https://example.com/p?utm_campaign=only", "https://example.com/p"),
            ("https://example.com/p?a=1&&b=2&", "https://example.com/p?a=1&b=2"),
            ("https://example.com./p", "https://example.com/p"),
            ("https://user:Secret@Example.com/p", "https://user:Secret@example.com/p"),
            ("https://[2001:DB8::1]:443/x", "https://[2001:db8::1]/x"),
            ("https://example.com/a%2fb?q=%e4", "https://example.com/a%2Fb?q=%E4"),
            ("ftp://Files.example.com:21/pub/", "ftp://files.example.com/pub"),
            ("file:///home/me/notes.html", "file:///home/me/notes.html"),
            ("http://example.com/?msclkid=1&ref=keep", "http://example.com/?ref=keep")
        ])
    func normalizes(input: String, expected: String) {
        #expect(URLNormalizer.normalize(input) == expected)
    }

    @Test("scheme is kept: http and https are different sites")
    func schemeKept() {
        #expect(URLNormalizer.normalize("http://example.com/") != URLNormalizer.normalize("https://example.com/"))
    }

    @Test(
        "not absolute URLs are refused",
        arguments: [
            "", "example.com", "/path", "javascript:alert(1)", "place:sort=8",
            "https://", "https://exa mple.com/", "https://example.com:8x/", "1http://a.com/",
            "mailto:me@example.com"
        ])
    func refuses(input: String) {
        #expect(URLNormalizer.normalize(input) == nil)
    }
}
