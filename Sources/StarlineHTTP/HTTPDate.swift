#if canImport(Glibc)
import Glibc
#endif

/// HTTP-date as senders write it, IMF-fixdate: "Sun, 06 Nov 1994 08:49:37 GMT". Read here only for
/// `Retry-After`, so only parsed.
///
/// RFC 9110 §5.6.7 asks more of a recipient ("MUST accept all three HTTP-date formats"); the obsolete
/// RFC 850 and asctime forms are not read. Senders "MUST generate those timestamps in the IMF-fixdate
/// format", and a `Retry-After` we cannot read only means our own backoff is used instead.
enum HTTPDate {
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// `Sun, 06 Nov 1994 08:49:37 GMT` → Unix seconds; nil for anything else.
    static func parseIMFFixdate(_ text: String) -> Int64? {
        let b = Array(text.utf8)
        guard b.count == 29, b[3] == UInt8(ascii: ","), b[4] == 0x20, b[7] == 0x20, b[11] == 0x20, b[16] == 0x20,
            b[19] == UInt8(ascii: ":"), b[22] == UInt8(ascii: ":"), b[25] == 0x20, String(decoding: b[26...], as: UTF8.self) == "GMT"
        else { return nil }
        func number(_ range: Range<Int>) -> Int32? {
            var value: Int32 = 0
            for i in range {
                guard (48...57).contains(b[i]) else { return nil }
                value = value * 10 + Int32(b[i] - 48)
            }
            return value
        }
        guard let month = months.firstIndex(of: String(decoding: b[8..<11], as: UTF8.self)),
            let day = number(5..<7), let year = number(12..<16), let hour = number(17..<19), let minute = number(20..<22),
            let second = number(23..<25), (1...31).contains(day), hour < 24, minute < 60, second < 61
        else { return nil }
        var parts = tm()
        parts.tm_year = year - 1900
        parts.tm_mon = Int32(month)
        parts.tm_mday = day
        parts.tm_hour = hour
        parts.tm_min = minute
        parts.tm_sec = second
        // timegm, not mktime: the fields are UTC ("GMT"), whatever TZ says.
        return Int64(timegm(&parts))
    }
}
