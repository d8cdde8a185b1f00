import Foundation
import StarlineCore
import StarlineTestSupport
import Testing

/// A platform behind a private CA: a CA and a server certificate for 127.0.0.1 made with openssl here, a real
/// HTTPS reverse proxy (Python's ssl) in front of sl-devserver, and the built tools talking to it over https.
/// Trust comes from STARLINE_CA_BUNDLE > the profile key caBundle > SSL_CERT_FILE > the system store; a
/// certificate that does not verify is TLS_ERROR (exit 7, never retried) saying how to trust the CA.
@Suite struct PrivateCATests {
    /// An HTTPS reverse proxy: every request goes to the dev server with its Host rewritten (the dev server
    /// answers only its own loopback Host). Each accepted connection is logged ("connect"), and each failed
    /// handshake ("handshake-failed …"), so a test can count how often a client tried.
    static let proxy = #"""
        import http.client, http.server, socket, ssl, sys
        cert, key, upstream, log = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        def note(line):
            with open(log, "a") as f: f.write(line + "\n")
        class Server(http.server.ThreadingHTTPServer):
            daemon_threads = True
            def get_request(self):
                sock, addr = self.socket.accept()
                note("connect")
                sock.settimeout(20)
                try:
                    return ctx.wrap_socket(sock, server_side=True), addr
                except (ssl.SSLError, OSError) as e:
                    note("handshake-failed " + type(e).__name__)
                    sock.close()
                    raise
        class Proxy(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            def log_message(self, *args): pass
            def relay(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection", "content-length")}
                headers["Host"] = "127.0.0.1:%d" % upstream
                conn = http.client.HTTPConnection("127.0.0.1", upstream, timeout=60)
                conn.request(self.command, self.path, body=body if body or self.command in ("POST", "PUT") else None, headers=headers)
                answer = conn.getresponse()
                data = answer.read()
                self.send_response(answer.status)
                for k, v in answer.getheaders():
                    if k.lower() not in ("connection", "transfer-encoding", "content-length", "keep-alive"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                conn.close()
            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = relay
        server = Server(("127.0.0.1", 0), Proxy)
        print(server.server_address[1], flush=True)
        server.serve_forever()
        """#

    /// The CA, a server certificate it signed for IP 127.0.0.1 only, and an unrelated CA.
    struct Certificates {
        let directory: TemporaryDirectory
        var ca: String { directory.file("ca.pem") }
        var otherCA: String { directory.file("other-ca.pem") }
        var serverCert: String { directory.file("server.pem") }
        var serverKey: String { directory.file("server.key") }

        init() throws {
            directory = TemporaryDirectory("private-ca")
            let script = """
                set -e
                cd '\(directory.path)'
                ec='-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes'
                openssl req -x509 $ec -keyout ca.key -out ca.pem -days 2 -subj '/CN=Starline Test Private CA'
                openssl req -x509 $ec -keyout other-ca.key -out other-ca.pem -days 2 -subj '/CN=Some Other CA'
                openssl req $ec -keyout server.key -out server.csr -subj '/CN=127.0.0.1'
                printf 'subjectAltName=IP:127.0.0.1\\nbasicConstraints=CA:FALSE\\nextendedKeyUsage=serverAuth\\n' > server.ext
                openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 2 -extfile server.ext
                """
            let run = try Tools.run("/bin/sh", ["-c", script], home: directory.path)
            guard run.status == 0 else { throw StarlineError(.internalError, "openssl failed: \(run.stderrText)") }
        }
    }

    /// The proxy, running until the test ends.
    final class HTTPSProxy: @unchecked Sendable {
        let process: RunningTool
        let port: Int
        let log: String
        let scratch = TemporaryDirectory("https-proxy")

        init(_ certificates: Certificates, upstream: Int) throws {
            let script = scratch.file("proxy.py")
            log = scratch.file("connections.log")
            try PrivateCATests.proxy.write(toFile: script, atomically: true, encoding: .utf8)
            process = try Tools.spawn(
                "/usr/bin/python3", [script, certificates.serverCert, certificates.serverKey, String(upstream), log],
                home: scratch.path)
            guard process.waitForStdout(seconds: 30, { $0.contains("\n") }), let port = Int(process.stdoutSoFar.trimmingWhitespace()) else {
                throw StarlineError(.internalError, "the HTTPS proxy did not start: \(process.stderrSoFar)")
            }
            self.port = port
        }

        var url: String { "https://127.0.0.1:\(port)" }
        var logLines: [String] { ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init) }

        deinit { process.signal(SIGKILL) }
    }

    struct Setup {
        let certificates: Certificates
        let harness: SessionToolsHarness
        let proxy: HTTPSProxy
        let token: String

        /// The harness's environment with the platform and chat behind the proxy, plus `extra`.
        func environment(_ extra: [String: String] = [:]) -> [String: String] {
            var env = ["STARLINE_API_BASE_URL": proxy.url, "STARLINE_CHAT_BASE_URL": proxy.url + "/chat"]
            for (k, v) in extra { env[k] = v }
            return env
        }

        func run(_ tool: String, _ arguments: [String], stdin: [UInt8]? = nil, _ extra: [String: String] = [:]) throws -> ToolRun {
            try harness.run(tool, arguments, stdin: stdin, environment: environment(extra))
        }

        /// Signs bob in over https (sl-login --with-token verifies the token with GET /api/me).
        func signIn(_ extra: [String: String]) throws -> ToolRun {
            try run("sl-login", ["--with-token"], stdin: Array(token.utf8), extra)
        }

        func writeProfile(_ members: String) throws {
            let config = harness.home.file("starline/config")
            try FileManager.default.createDirectory(
                atPath: config, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            try #"{"profiles":{"default":{\#(members)}}}"#.write(toFile: config + "/config.json", atomically: true, encoding: .utf8)
            #expect(chmod(config + "/config.json", 0o600) == 0)
        }
    }

    func setup() throws -> Setup {
        let certificates = try Certificates()
        let harness = try SessionToolsHarness(server: try DevServerProcess())
        let proxy = try HTTPSProxy(certificates, upstream: harness.server.port)
        return Setup(certificates: certificates, harness: harness, proxy: proxy, token: try harness.server.login("bob").token)
    }

    @Test("S4 W4: without the private CA the certificate is TLS_ERROR (exit 7), tried once, with the way to trust the CA")
    func s4W4UntrustedCertificateIsTLSErrorNotRetried() throws {
        let s = try setup()
        let before = s.proxy.logLines.count
        let run = try s.signIn([:])
        #expect(run.status == 7, "\(run.stderrText)")
        let error = try run.error()["error"]
        #expect(error?["code"]?.stringValue == "TLS_ERROR")
        #expect(error?["retryable"] == .bool(false))
        let message = error?["message"]?.stringValue ?? ""
        #expect(
            message.contains("STARLINE_CA_BUNDLE=/path/ca.pem") && message.contains("caBundle") && message.contains("127.0.0.1"),
            "\(message)")
        #expect(message.contains("the system's CA store"), "\(message)")
        #expect(error?["details"]?["curlCode"]?.intValue == 60)
        // Never retried: one connection, one failed handshake (a NETWORK_ERROR would have been tried 3 times).
        let attempts = s.proxy.logLines.dropFirst(before)
        #expect(attempts.filter { $0 == "connect" }.count == 1, "\(attempts)")
        #expect(attempts.contains { $0.hasPrefix("handshake-failed") }, "\(attempts)")
        // Nothing was stored.
        #expect(try s.harness.run("sl-login", ["status"]).status == 3)

        // SSL_CERT_FILE alone is ignored by Debian's libcurl; CURL_CA_BUNDLE (curl's own variable) is not read.
        let curlOnly = try s.signIn(["CURL_CA_BUNDLE": s.certificates.ca])
        #expect(curlOnly.status == 7 && curlOnly.errorCode == "TLS_ERROR", "\(curlOnly.stderrText)")
    }

    @Test("S4 W4: STARLINE_CA_BUNDLE trusts the private CA for sign-in, restore and chat")
    func s4W4StarlineCABundleTrustsThePrivateCA() throws {
        let s = try setup()
        let trust = ["STARLINE_CA_BUNDLE": s.certificates.ca]
        let login = try s.signIn(trust)
        #expect(login.status == 0, "\(login.stderrText)")
        let restore = try s.run("sl-restore", [], trust)
        #expect(restore.status == 0, "\(restore.stderrText)")
        #expect(try restore.json()["state"]?.stringValue == "valid")
        // sl-chat builds its own transport: it trusts the same bundle.
        let chat = try s.run("sl-chat", ["conversations"], trust)
        #expect(chat.status == 0, "\(chat.stderrText)")
        #expect(try chat.jsonLines().contains { $0["id"]?.stringValue == "c_team" })
        #expect(try s.run("sl-chat", ["sync"], trust).status == 0)
        // sync always asks the server (conversations may answer from the fresh cache).
        let untrusted = try s.run("sl-chat", ["sync"])
        #expect(untrusted.status == 7 && untrusted.errorCode == "TLS_ERROR", "\(untrusted.stderrText)")
    }

    @Test("S4: SSL_CERT_FILE and the profile key caBundle trust the CA; STARLINE_CA_BUNDLE > profile > SSL_CERT_FILE")
    func s4SSLCertFileProfileKeyAndTheirPrecedence() throws {
        let s = try setup()
        let ca = s.certificates.ca, other = s.certificates.otherCA
        let viaSSLCertFile = try s.signIn(["SSL_CERT_FILE": ca])
        #expect(viaSSLCertFile.status == 0, "\(viaSSLCertFile.stderrText)")
        func restore(_ extra: [String: String]) throws -> ToolRun { try s.run("sl-restore", [], extra) }

        // STARLINE_CA_BUNDLE wins over SSL_CERT_FILE, whichever of the two is right.
        let envWrong = try restore(["STARLINE_CA_BUNDLE": other, "SSL_CERT_FILE": ca])
        #expect(envWrong.status == 7 && envWrong.errorCode == "TLS_ERROR", "\(envWrong.stderrText)")
        let message = try envWrong.error()["error"]?["message"]?.stringValue ?? ""
        #expect(message.contains("the CA bundle \(other) (from STARLINE_CA_BUNDLE)"), "\(message)")
        #expect(try restore(["STARLINE_CA_BUNDLE": ca, "SSL_CERT_FILE": other]).status == 0)

        // The profile key: used alone, over SSL_CERT_FILE, and under STARLINE_CA_BUNDLE.
        try s.writeProfile(#""caBundle":"\#(ca)""#)
        #expect(try restore([:]).status == 0)
        #expect(try restore(["SSL_CERT_FILE": other]).status == 0)
        let envOverProfile = try restore(["STARLINE_CA_BUNDLE": other])
        #expect(envOverProfile.status == 7 && envOverProfile.errorCode == "TLS_ERROR")
        try s.writeProfile(#""caBundle":"\#(other)""#)
        let profileWrong = try restore(["SSL_CERT_FILE": ca])
        #expect(profileWrong.status == 7, "\(profileWrong.stderrText)")
        #expect(try profileWrong.error()["error"]?["message"]?.stringValue?.contains("(from the profile key caBundle)") == true)
    }

    @Test("W4: a bundle that is missing, a directory or not PEM is a clear error; a wrong host name is TLS_ERROR")
    func w4BadBundlesAndAHostNameMismatch() throws {
        let s = try setup()
        let ca = s.certificates.ca
        #expect(try s.signIn(["STARLINE_CA_BUNDLE": ca]).status == 0)

        let missing = try s.run("sl-restore", [], ["STARLINE_CA_BUNDLE": "/nonexistent/ca.pem"])
        #expect(missing.status == 2 && missing.errorCode == "CONFIG_ERROR", "\(missing.stderrText)")
        let missingError = try missing.error()["error"]
        #expect(
            missingError?["message"]?.stringValue?.contains("cannot read the CA bundle /nonexistent/ca.pem (from STARLINE_CA_BUNDLE)")
                == true)
        #expect(missingError?["details"]?["source"]?.stringValue == "STARLINE_CA_BUNDLE")

        let directory = try s.run("sl-restore", [], ["SSL_CERT_FILE": s.certificates.directory.path])
        #expect(directory.status == 2 && directory.errorCode == "CONFIG_ERROR", "\(directory.stderrText)")
        #expect(try directory.error()["error"]?["message"]?.stringValue?.contains("not a regular file") == true)

        let junk = s.certificates.directory.file("junk.pem")
        try "not a certificate\n".write(toFile: junk, atomically: true, encoding: .utf8)
        let notPEM = try s.run("sl-restore", [], ["STARLINE_CA_BUNDLE": junk])
        #expect(notPEM.status == 7 && notPEM.errorCode == "TLS_ERROR", "\(notPEM.stderrText)")
        #expect(try notPEM.error()["error"]?["message"]?.stringValue?.contains("cannot load the CA bundle \(junk)") == true)

        // The certificate names 127.0.0.1 only: localhost (a loopback name W4 allows) does not match it.
        let mismatch = try s.harness.run(
            "sl-restore", [],
            environment: [
                "STARLINE_API_BASE_URL": "https://localhost:\(s.proxy.port)",
                "STARLINE_CA_BUNDLE": ca, "STARLINE_TOKEN": s.token
            ])
        #expect(mismatch.status == 7 && mismatch.errorCode == "TLS_ERROR", "\(mismatch.stderrText)")
        #expect(try mismatch.error()["error"]?["message"]?.stringValue?.contains("localhost") == true)

        // Local commands do not read the bundle; plain http to the loopback dev server ignores it.
        let status = try s.run("sl-login", ["status"], ["STARLINE_CA_BUNDLE": "/nonexistent/ca.pem"])
        #expect(status.status == 0, "\(status.stderrText)")
        let plain = try s.harness.run(
            "sl-restore", [], environment: ["STARLINE_TOKEN": s.token, "STARLINE_CA_BUNDLE": "/nonexistent/ca.pem"])
        #expect(plain.status == 0, "\(plain.stderrText)")
    }

    @Test("S4 W4: a CA bundle group or others may write is refused before anything is sent (INSECURE_PERMISSIONS)")
    func s4W4AWritableCABundleIsNotTrusted() throws {
        let s = try setup()
        let shared = s.harness.home.file("shared-ca.pem")
        try Data(contentsOf: URL(fileURLWithPath: s.certificates.ca)).write(to: URL(fileURLWithPath: shared))
        for mode: mode_t in [0o666, 0o664] {
            #expect(chmod(shared, mode) == 0)
            let before = s.proxy.logLines.count
            for variable in ["STARLINE_CA_BUNDLE", "SSL_CERT_FILE"] {
                let run = try s.signIn([variable: shared])
                #expect(run.status == 10 && run.errorCode == "INSECURE_PERMISSIONS", "\(variable) \(mode): \(run.stderrText)")
                #expect(run.stderrText.contains(shared) && run.stderrText.contains(variable), "\(run.stderrText)")
            }
            #expect(s.proxy.logLines.count == before, "nothing was sent: \(s.proxy.logLines.dropFirst(before))")
        }
        #expect(chmod(shared, 0o644) == 0)
        let trusted = try s.signIn(["STARLINE_CA_BUNDLE": shared])
        #expect(trusted.status == 0, "the same bundle, writable only by its owner: \(trusted.stderrText)")
    }

    @Test("S4 W4: a relative caBundle in a profile is the file beside config.json, never one in the working directory")
    func s4W4RelativeProfileBundleIsBesideTheProfile() throws {
        let s = try setup()
        try s.writeProfile(#""caBundle":"ca.pem""#)
        let configDirectory = s.harness.home.file("starline/config")
        let elsewhere = TemporaryDirectory("working-directory")
        // The working directory holds a bundle of another CA under the same name.
        try Data(contentsOf: URL(fileURLWithPath: s.certificates.otherCA)).write(to: URL(fileURLWithPath: elsewhere.file("ca.pem")))
        func signIn() throws -> ToolRun {
            var environment = s.harness.environment
            for (k, v) in s.environment() { environment[k] = v }
            return try Tools.run(
                "sl-login", ["--with-token"], stdin: Array(s.token.utf8), home: s.harness.home.path, environment: environment,
                workingDirectory: elsewhere.path)
        }
        let missing = try signIn()
        #expect(
            missing.status == 2 && missing.errorCode == "CONFIG_ERROR" && missing.stderrText.contains(configDirectory + "/ca.pem"),
            "no ca.pem beside the profile: \(missing.stderrText)")
        try Data(contentsOf: URL(fileURLWithPath: s.certificates.ca)).write(to: URL(fileURLWithPath: configDirectory + "/ca.pem"))
        let beside = try signIn()
        #expect(beside.status == 0, "the bundle beside the profile, whatever the working directory holds: \(beside.stderrText)")
    }
}
