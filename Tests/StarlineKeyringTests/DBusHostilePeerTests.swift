import Foundation
import Glibc
import StarlineCore
@testable import StarlineKeyring
import StarlineTestSupport
import Testing

/// The direct reader against buses written in the test (`FakeBus`): a reply that would make the parser spin,
/// replies forged by a client that does not own the Secret Service's name, a bus socket served by another
/// uid, and an abstract socket address.
@Suite struct DBusHostilePeerTests {
    let secret = Array("the owner's key".utf8)
    let forgedSecret = Array("a forger's key".utf8)

    typealias Lookup = Result<SecretServiceReader.Outcome, StarlineError>

    /// `SecretServiceReader.lookup` on `address`, on a thread of its own (see `finishing`).
    func lookup(_ address: String, timeout: Duration = .seconds(10)) -> Lookup {
        finishing("the lookup on \(address)") {
            do throws(StarlineError) {
                return .success(
                    try SecretServiceReader.lookup(
                        busOf: Environment(["DBUS_SESSION_BUS_ADDRESS": address]),
                        schemaName: "org.starline.Secret", attributes: ["k": "v"], timeout: timeout))
            } catch {
                return .failure(error)
            }
        }
    }

    func found(_ result: Lookup) -> [UInt8]? {
        if case .success(.answered(.found(let secret))) = result { return secret.copyBytes() }
        return nil
    }

    func failure(_ result: Lookup) -> StarlineError? {
        if case .failure(let error) = result { return error }
        Issue.record("expected an error, got \(result)")
        return nil
    }

    /// The body of an array of `count` bytes of elements that occupy no bytes (`a()`, `a(())`): the length,
    /// the padding to the first element's 8-byte boundary, the bytes.
    static func elementsOfNoBytes(_ count: Int) -> [UInt8] {
        withUnsafeBytes(of: UInt32(count).littleEndian) { Array($0) } + [0, 0, 0, 0] + [UInt8](repeating: 0, count: count)
    }

    // MARK: Zero progress and unbounded work

    @Test(
        """
        a SearchItems reply of a() or a(()) — arrays of empty structures, which D-Bus forbids — ends at once in \
        DATA_ERROR
        """,
        arguments: ["a()", "a(())", "a(()y)"])
    func arraysOfEmptyStructures(_ signature: String) throws {
        let service = FakeSecretService(secret: secret)
        let bus = try FakeBus { call in
            call.member == "SearchItems"
                ? [service.raw(call, from: service.owner, signature, body: Self.elementsOfNoBytes(8))] : service.replies(to: call)
        }
        defer { bus.stop() }
        let error = failure(lookup(bus.address))
        #expect(error?.code == .data, "\(String(describing: error))")
        #expect(!bus.calls.contains { $0.member == "GetSecrets" })
    }

    @Test("a header field (any message's, here Hello's reply) holding a variant of a() ends in DATA_ERROR, not a spin")
    func emptyStructuresInAHeaderField() throws {
        let service = FakeSecretService(secret: secret)
        let bus = try FakeBus { call in
            guard call.member == "Hello" else { return service.replies(to: call) }
            // An unknown field code: receivers must ignore its value, but must still read past it.
            return [
                addingHeaderField(
                    service.reply(call, from: FakeSecretService.bus, "s", [.string(service.client)]), code: 0x50, signature: "a()"
                ) { writer in
                    writer.uint32(8)
                    writer.align(8)
                    writer.bytes += [UInt8](repeating: 0, count: 8)
                }
            ]
        }
        defer { bus.stop() }
        #expect(failure(lookup(bus.address))?.code == .data)
    }

    @Test("variants of (), and more values than one message may hold (ag of 300,000 empty signatures), are DATA_ERROR")
    func forbiddenOrTooManyValues() throws {
        let service = FakeSecretService(secret: secret)
        // av: each element the signature "()" (length 2, the codes, NUL) and a value of no bytes.
        let variants =
            withUnsafeBytes(of: UInt32(4 * 100).littleEndian) { Array($0) }
            + Array(repeating: [2, 0x28, 0x29, 0], count: 100).flatMap { $0 }
        let count = 300_000
        let signatures = withUnsafeBytes(of: UInt32(2 * count).littleEndian) { Array($0) } + [UInt8](repeating: 0, count: 2 * count)
        for (signature, body) in [("av", variants), ("ag", signatures)] {
            let bus = try FakeBus { call in
                call.member == "SearchItems" ? [service.raw(call, from: service.owner, signature, body: body)] : service.replies(to: call)
            }
            defer { bus.stop() }
            let error = failure(lookup(bus.address))
            #expect(error?.code == .data, "\(signature): \(String(describing: error))")
        }
    }

    @Test(
        """
        a bus that floods the reader with messages that are not the reply makes it give up (retryable), not read \
        forever
        """)
    func floodOfOtherMessages() throws {
        let service = FakeSecretService(secret: secret)
        let bus = try FakeBus { call in
            call.member == "Hello" ? Array(repeating: service.signal(), count: 500) + service.replies(to: call) : service.replies(to: call)
        }
        defer { bus.stop() }
        let error = failure(lookup(bus.address))
        #expect(error?.code == .keyringUnavailable)
        #expect(error?.retryable == true)
        #expect(error?.message.contains("gave up") == true, "\(String(describing: error))")
    }

    // MARK: Who answers

    @Test(
        """
        replies forged by another client (or with no sender, or a method return 'from the bus') are ignored: the \
        owner's secret is read
        """)
    func forgedRepliesIgnored() throws {
        let service = FakeSecretService(secret: secret)
        let forged = forgedSecret
        let bus = try FakeBus { call in
            let senders: [String?] = [":1.66", nil, FakeSecretService.bus]
            // Each forgery arrives before the owner's answer, with the serial of the call.
            let forgeries: [[UInt8]] =
                switch call.member {
                case "OpenSession":
                    senders.map {
                        service.reply(call, from: $0, "vo", [.variant(signature: "s", .string("")), .objectPath("/forged/session")])
                    }
                case "SearchItems":
                    senders.map {
                        service.reply(
                            call, from: $0, "aoao",
                            [.array(elementSignature: "o", [.objectPath("/forged/item")]), .array(elementSignature: "o", [])])
                    }
                case "GetSecrets":
                    senders.map { sender in
                        guard case .array(_, let items) = call.body.first, case .objectPath(let item) = items.first else { return [] }
                        var forger = service
                        forger.item = item
                        return forger.secrets(call, from: sender, forged)
                    }
                default: []
                }
            return forgeries + service.replies(to: call)
        }
        defer { bus.stop() }
        let result = lookup(bus.address)
        #expect(found(result) == secret, "\(result)")
        // The calls went to the owner's unique name, asked of the bus first.
        let calls = bus.calls
        #expect(calls.first { $0.member == "GetNameOwner" }?.body == [.string("org.freedesktop.secrets")])
        let serviceCalls = calls.filter { ["OpenSession", "SearchItems", "GetSecrets"].contains($0.member ?? "") }
        #expect(serviceCalls.count == 3)
        #expect(serviceCalls.allSatisfy { $0.destination == service.owner })
    }

    @Test("when only a forger answers GetSecrets, the read fails (timeout) instead of returning the forged secret")
    func onlyForgerAnswers() throws {
        let service = FakeSecretService(secret: secret)
        let forged = forgedSecret
        let bus = try FakeBus { call in
            call.member == "GetSecrets" ? [service.secrets(call, from: ":1.66", forged)] : service.replies(to: call)
        }
        defer { bus.stop() }
        let error = failure(lookup(bus.address, timeout: .seconds(2)))
        #expect(error?.code == .keyringUnavailable)
        #expect(error?.retryable == true)
    }

    @Test(
        """
        nobody owns org.freedesktop.secrets and it cannot be started: KEYRING_UNAVAILABLE, and no Secret Service call \
        is sent
        """)
    func noOwner() throws {
        let service = FakeSecretService(secret: secret)
        let bus = try FakeBus { call in
            switch call.member {
            case "GetNameOwner": [service.error(call, from: FakeSecretService.bus, "org.freedesktop.DBus.Error.NameHasNoOwner")]
            case "StartServiceByName": [service.error(call, from: FakeSecretService.bus, "org.freedesktop.DBus.Error.ServiceUnknown")]
            default: service.replies(to: call)
            }
        }
        defer { bus.stop() }
        let error = failure(lookup(bus.address))
        #expect(error?.code == .keyringUnavailable)
        #expect(bus.calls.map(\.member) == ["Hello", "GetNameOwner", "StartServiceByName"])
    }

    // MARK: Who serves the socket

    @Test(
        """
        a bus socket served by another uid (setpriv → nobody) is refused before anything is sent, not even the SASL \
        AUTH line
        """, .requiresRoot("serves the bus as nobody (setpriv)"))
    func foreignBusGetsNothing() throws {
        let setpriv = "/usr/bin/setpriv", perl = "/usr/bin/perl"
        #expect(FileManager.default.isExecutableFile(atPath: setpriv), "util-linux setpriv is needed for this test")
        let scratch = TemporaryDirectory("foreign-bus")
        let home = scratch.file("nobody")
        #expect(chmod(scratch.path, 0o711) == 0)
        #expect(mkdir(home, 0o700) == 0)
        #expect(chown(home, 65534, 65534) == 0)
        // Listens as nobody (SO_PEERCRED names whoever called listen), answers an AUTH line with OK as a bus
        // would, and prints what each connection sent, in hex, when it hangs up.
        let script = """
            use Socket; $| = 1; $SIG{PIPE} = 'IGNORE'; $SIG{ALRM} = sub { exit 0 }; alarm 60;
            socket(my $l, AF_UNIX, SOCK_STREAM, 0) or die "socket: $!";
            bind($l, pack_sockaddr_un($ARGV[0])) or die "bind: $!";
            listen($l, 5) or die "listen: $!";
            print "listening\\n";
            while (accept(my $c, $l)) {
                my ($all, $said) = ('', 0);
                while (sysread($c, my $d, 4096)) {
                    $all .= $d;
                    if (!$said && $all =~ /\\r\\n/) { syswrite($c, "OK 0123456789abcdef0123456789abcdef\\r\\n"); $said = 1; }
                }
                print "connection:" . unpack("H*", $all) . "\\n";
            }
            """
        let fake = try Tools.spawn(
            setpriv, ["--reuid=65534", "--regid=65534", "--clear-groups", perl, "-e", script, home + "/bus"], home: home)
        defer { _ = fake.waitOrKill(seconds: 0) }
        #expect(fake.waitForStdout { $0.contains("listening") }, "\(fake.stderrSoFar)")

        let address = "unix:path=" + home + "/bus"
        let error = failure(lookup(address, timeout: .seconds(3)))
        #expect(error?.code == .keyringUnavailable)
        #expect(error?.details?["peerUid"]?.intValue == 65534, "\(String(describing: error))")
        // The public read: the refusal is thrown, not a reason to ask libsecret (which would connect again).
        let viaRead = finishing("SecretServiceKeyring.read") { () -> StarlineError? in
            do throws(StarlineError) {
                _ = try SecretServiceKeyring.read(
                    busOf: Environment(["DBUS_SESSION_BUS_ADDRESS": address]), schemaName: "s", attributes: ["a": "b"])
                return nil
            } catch {
                return error
            }
        }
        #expect(viaRead?.details?["peerUid"]?.intValue == 65534)
        // Its libsecret twin: the same check, for the code that hands the bus to GDBus.
        let checked = finishing("checkListener") { () -> StarlineError? in
            do throws(StarlineError) {
                try DBusConnection.checkListener(address: address, timeoutNanoseconds: 3_000_000_000)
                return nil
            } catch {
                return error
            }
        }
        #expect(checked?.details?["peerUid"]?.intValue == 65534)

        #expect(fake.waitForStdout { $0.components(separatedBy: "connection:").count == 4 })
        // Three connections, and not one byte on any of them.
        #expect(fake.stdoutSoFar == "listening\nconnection:\nconnection:\nconnection:\n")
    }

    @Test("a bus served by root (or by us) is accepted: the same fake bus, run by this process, answers")
    func ownBusAccepted() throws {
        let bus = try FakeBus(respond: FakeSecretService(secret: secret).replies)
        defer { bus.stop() }
        #expect(found(lookup(bus.address)) == secret)
        #expect(
            bus.eventually {
                $0.authentication == ["AUTH EXTERNAL " + Array(String(geteuid()).utf8).map { String($0, radix: 16) }.joined()]
            })
    }

    // MARK: Addresses

    @Test("unix:abstract= addresses connect (the length covers the name only, not sun_path's trailing NULs)")
    func abstractAddressConnects() throws {
        let bus = try FakeBus(abstract: true, respond: FakeSecretService(secret: secret).replies)
        defer { bus.stop() }
        #expect(bus.address.hasPrefix("unix:abstract="))
        #expect(found(lookup(bus.address)) == secret)
        #expect(bus.connections == 1)
    }

    @Test("socket address lengths: offsetof(sun_path) + 1 + the abstract name; + the path + its NUL")
    func socketAddressLengths() throws {
        let offset = MemoryLayout<sockaddr_un>.offset(of: \sockaddr_un.sun_path)!
        #expect(DBusConnection.socketAddress("unix:abstract=starline")?.length == socklen_t(offset + 1 + 8))
        #expect(DBusConnection.socketAddress("unix:path=/tmp/b%2cus,guid=1")?.length == socklen_t(offset + "/tmp/b,us".utf8.count + 1))
        #expect(DBusConnection.socketAddress("unix:path=/tmp/a%00b") == nil, "a NUL would cut the path short")
        #expect(DBusConnection.socketAddress("unix:abstract=" + String(repeating: "a", count: 107)) != nil)
        #expect(DBusConnection.socketAddress("unix:abstract=" + String(repeating: "a", count: 108)) == nil)
    }
}
