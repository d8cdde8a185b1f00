import StarlineCore
import StarlineCrypto

/// Which stored session (S2, S3): the platform API origin and the App ID, inside a *service* name that
/// separates host environments. Two keys that differ in any part never see each other's records.
public struct StoreKey: Sendable, Hashable, CustomStringConvertible {
    /// The API base URL as configured: `scheme://host[:port][/prefix]` (`BaseURL.description`).
    public let apiOrigin: String
    public let appId: String
    public let service: String

    public init(api: BaseURL, appId: String, service: String) {
        self.init(apiOrigin: api.description, appId: appId, service: service)
    }

    /// A key from already-validated parts (tests, or a store listing its records).
    public init(apiOrigin: String, appId: String, service: String) {
        self.apiOrigin = apiOrigin
        self.appId = appId
        self.service = service
    }

    /// The stable text id the records are keyed by: `service|apiOrigin|appId`, e.g.
    /// `default|https://account.thestarline.cn|workbench`. `%` and `|` inside a part are percent-escaped,
    /// so distinct keys always have distinct ids.
    public var id: String {
        "\(Self.escape(service))|\(Self.escape(apiOrigin))|\(Self.escape(appId))"
    }

    /// 32 lowercase hex digits (BLAKE2b-128 of `id`): names the per-key files (lock files, revocation
    /// marker) without putting the URL or App ID into a file name.
    public var digest: String {
        Self.hex(GenericHash.hash(Array(id.utf8), length: 16))
    }

    public var description: String { id }

    static func escape(_ part: String) -> String {
        guard part.utf8.contains(where: { $0 == UInt8(ascii: "|") || $0 == UInt8(ascii: "%") }) else { return part }
        var out = ""
        for c in part.unicodeScalars {
            switch c {
            case "%": out += "%25"
            case "|": out += "%7C"
            default: out.unicodeScalars.append(c)
            }
        }
        return out
    }

    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(bytes.count * 2)
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0x0f)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
