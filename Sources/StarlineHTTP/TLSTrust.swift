#if canImport(Glibc)
import Glibc
#endif
import StarlineCore

/// The certificate authorities HTTPS connections trust: the system's, or a CA bundle the user names for a
/// private deployment (a platform whose certificate a private CA issued), without installing that CA for the
/// whole machine. Verification of the peer and its host name is never turned off; there is no "insecure" mode.
///
/// Where the bundle comes from, first found wins (as `AWS_CA_BUNDLE` and gcloud's `custom_ca_certs_file`):
/// `STARLINE_CA_BUNDLE`, the profile key `caBundle`, `SSL_CERT_FILE` (as gh honours it), else the system store.
/// The bundle is given to libcurl as `CURLOPT_CAINFO`, in place of the system bundle file (as `curl --cacert`).
///
/// `SSL_CERT_FILE` has to be read here: Debian 12's libcurl (7.88, OpenSSL 3.0) sets its compiled-in
/// CAINFO `/etc/ssl/certs/ca-certificates.crt` and CAPATH `/etc/ssl/certs` on every handle, so OpenSSL's
/// default store — the one `SSL_CERT_FILE` and `SSL_CERT_DIR` configure — is never consulted, and a transfer
/// with only `SSL_CERT_FILE` set fails verification (checked with a private CA: CURLE_PEER_FAILED_VERIFICATION).
/// `CURL_CA_BUNDLE` is deliberately not read: it belongs to the curl program (libcurl ignores it too), and
/// a variable set for one tool should not silently change whom another trusts.
public struct TLSTrust: Sendable, Equatable {
    /// Where a CA bundle came from, as messages name it.
    public enum Source: String, Sendable, Equatable {
        case environment = "STARLINE_CA_BUNDLE"
        case profile = "the profile key caBundle"
        case sslCertFile = "SSL_CERT_FILE"
    }

    /// The PEM file of trusted CA certificates; nil for the system store.
    public let caBundle: String?
    public let source: Source?

    public static let system = TLSTrust(caBundle: nil, source: nil)

    public init(caBundle: String, source: Source) {
        self.caBundle = caBundle
        self.source = source
    }

    private init(caBundle: String?, source: Source?) {
        self.caBundle = caBundle
        self.source = source
    }

    /// The profile key naming a CA bundle (`{"profiles":{"corp":{"caBundle":"/etc/corp/ca.pem"}}}`).
    public static let profileKey = "caBundle"

    /// The trust a run's environment and profile ask for. Reads no file: a bad path is reported by the first
    /// request (`loadBundle`), so local commands (`sl-login status`) work whatever it names.
    public static func resolve(environment: Environment, profile: ConfigProfile?) -> TLSTrust {
        if let path = environment["STARLINE_CA_BUNDLE"], !path.isEmpty { return TLSTrust(caBundle: path, source: .environment) }
        // A relative path in a profile is beside the profile, never in the working directory.
        if let path = profile?.path(profileKey) { return TLSTrust(caBundle: path, source: .profile) }
        if let path = environment["SSL_CERT_FILE"], !path.isEmpty { return TLSTrust(caBundle: path, source: .sslCertFile) }
        return .system
    }

    /// What to do about a certificate that does not verify, for `TLS_ERROR` messages.
    public static let privateCAHint = """
        to trust a private CA, name its PEM file: STARLINE_CA_BUNDLE=/path/ca.pem, or \"caBundle\" in the profile \
        (config.json); verification is never turned off
        """

    /// The largest CA bundle read (Debian's whole system bundle is about 200 KiB).
    public static let maxBundleBytes = 16 << 20

    /// The bundle's bytes, read once from one descriptor after the trust rule of a file that decides whom we
    /// trust (`FileTrust.trustDeciding`: regular, owned by root or by us, writable by nobody else); nil for the
    /// system store. The transport hands these bytes to libcurl (CURLOPT_CAINFO_BLOB): the file checked is the
    /// file trusted, never opened again by path. A missing, unreadable or special file is `CONFIG_ERROR`
    /// (exit 2) naming the source, one anyone else may write `INSECURE_PERMISSIONS` (exit 10).
    func loadBundle() throws(StarlineError) -> [UInt8]? {
        guard let path = caBundle, let source else { return nil }
        let failure = "cannot read the CA bundle \(path) (from \(source.rawValue))"
        let bytes: [UInt8]?
        do {
            bytes = try AtomicFile.read(path, what: "CA bundle", trust: .trustDeciding, maxBytes: Self.maxBundleBytes)
        } catch  where error.code == .insecurePermissions {
            throw StarlineError(
                .insecurePermissions, "\(error.message) (from \(source.rawValue)): it decides which servers are trusted",
                details: details(path, source, error.details))
        } catch {
            let code = error.details?["errno"]?.intValue.map { Int32($0) }
            let reason =
                error.details?["maxBytes"] != nil
                ? "it is larger than \(Self.maxBundleBytes >> 20) MiB"
                : code.flatMap { $0 == EISDIR ? nil : String(cString: strerror($0)) } ?? "it is not a regular file"
            throw StarlineError(.config, "\(failure): \(reason)", details: details(path, source, error.details))
        }
        guard let bytes else {
            throw StarlineError(
                .config, "\(failure): \(String(cString: strerror(ENOENT)))",
                details: details(path, source, .object([("errno", .int(Int64(ENOENT)))])))
        }
        return bytes
    }

    private func details(_ path: String, _ source: Source, _ more: JSON?) -> JSON {
        var fields: [(String, JSON)] = [("path", .string(path)), ("source", .string(source.rawValue))]
        if let errno = more?["errno"] { fields.append(("errno", errno)) }
        return .object(fields)
    }

    // MARK: The run's trust

    /// The trust of this run, which every `HTTPTransport` created without one of its own uses. The networked
    /// tools set it once, from their environment and profile, before their command runs (`configure`): like
    /// the environment variables it comes from, it belongs to the process.
    public static var configured: TLSTrust { configuredTrust.withLock { $0 } }

    public static func configure(_ trust: TLSTrust) { configuredTrust.withLock { $0 = trust } }
}

private let configuredTrust = Locked(TLSTrust.system)
