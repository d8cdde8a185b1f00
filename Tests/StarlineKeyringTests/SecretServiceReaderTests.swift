import Foundation
import Glibc
import StarlineCore
import StarlineCrypto
@testable import StarlineKeyring
import StarlineTestSupport
import Testing

/// The direct D-Bus read path against the same private gnome-keyring (in the serialized suite: the lock
/// tests there and here must not overlap).
extension SecretServiceKeyringTests {
    func direct(
        _ keyring: TestKeyring, _ attributes: [String: String], schema: String = "org.starline.Secret",
        timeout: Duration = .seconds(10)
    ) throws -> KeyringLookup? {
        switch try SecretServiceReader.lookup(
            busOf: Environment(keyring.environment), schemaName: schema, attributes: attributes, timeout: timeout)
        {
        case .answered(let result): return result
        case .useLibsecret(let reason):
            Issue.record("gnome-keyring should be read directly: \(reason)")
            return nil
        }
    }

    @Test("S2 the direct reader returns the bytes libsecret stored, absent for other attributes or another schema")
    func s2DirectReaderFindsWhatLibsecretStored() throws {
        let testKeyring = try SharedKeyring.unlocked()
        let keyring = try SecretServiceKeyring.open(environment: testKeyring.environment)
        let attributes = uniqueAttributes("direct")
        let secret = SecretBytes(count: 32)
        try keyring.store(secret: secret, label: "direct read", attributes: attributes)
        #expect(try direct(testKeyring, attributes).flatMap(secretBytes) == secret.copyBytes())
        #expect(
            secretBytes(
                try SecretServiceKeyring.read(
                    busOf: Environment(testKeyring.environment), schemaName: "org.starline.Secret",
                    attributes: attributes)) == secret.copyBytes())
        var other = attributes
        other["run"] = UUID().uuidString
        #expect(try direct(testKeyring, other).map(isAbsent) == true)
        #expect(try direct(testKeyring, attributes, schema: "org.starline.Other").map(isAbsent) == true)
        #expect(try keyring.delete(attributes: attributes) == .deleted(1))
        #expect(try direct(testKeyring, attributes).map(isAbsent) == true)
    }

    @Test("S17 the direct reader says locked without prompting or unlocking, and reads again once unlocked")
    func s17DirectReaderNeverUnlocks() throws {
        let testKeyring = try SharedKeyring.unlocked()
        let keyring = try SecretServiceKeyring.open(environment: testKeyring.environment)
        let attributes = uniqueAttributes("direct-locked")
        let secret = SecretBytes(count: 32)
        try keyring.store(secret: secret, label: "direct locked", attributes: attributes)
        try testKeyring.lock()
        let prompts = testKeyring.promptCount
        #expect(try direct(testKeyring, attributes).map(isLocked) == true)
        #expect(testKeyring.promptCount == prompts, "no prompt")
        #expect(try testKeyring.isLocked(), "nothing unlocked it")
        try testKeyring.unlock()
        #expect(try direct(testKeyring, attributes).flatMap(secretBytes) == secret.copyBytes())
        #expect(try keyring.delete(attributes: attributes) == .deleted(1))
    }

    @Test("a wedged daemon (SIGSTOP) ends the direct read with a retryable KEYRING_UNAVAILABLE, not a hang")
    func directReaderIsBounded() throws {
        let testKeyring = try SharedKeyring.unlocked()
        let pid = try #require(testKeyring.daemonPID)
        kill(pid, SIGSTOP)
        let error = thrown { _ = try direct(testKeyring, uniqueAttributes("wedged-direct"), timeout: .seconds(1)) }
        kill(pid, SIGCONT)
        #expect(error?.code == .keyringUnavailable)
        #expect(error?.retryable == true)
    }

    @Test("a bus address that names no socket, or a socket nobody listens on, is KEYRING_UNAVAILABLE")
    func directReaderWithoutABus() throws {
        for address in ["tcp:host=127.0.0.1,port=1", "unix:path=/nonexistent/bus", ""] {
            let error = thrown {
                _ = try SecretServiceReader.lookup(
                    busOf: Environment(["DBUS_SESSION_BUS_ADDRESS": address]), schemaName: "s", attributes: ["a": "b"])
            }
            #expect(error?.code == .keyringUnavailable, "\(address)")
            #expect(error?.exitStatus == .storage)
        }
    }
}

/// The wire format, in-process: what the reader writes reads back, and hostile bytes are DATA_ERROR.
@Suite struct DBusWireTests {
    @Test func aMethodCallRoundTrips() throws {
        let call = DBusMessage.call(
            serial: 7, destination: "org.freedesktop.secrets", path: "/org/freedesktop/secrets",
            interface: "org.freedesktop.Secret.Service", member: "SearchItems", signature: "a{ss}aosv",
            body: [
                .array(elementSignature: "{ss}", [.dictEntry(.string("k"), .string("v")), .dictEntry(.string("xdg:schema"), .string("s"))]),
                .array(elementSignature: "o", [.objectPath("/a"), .objectPath("/b/c")]), .string("plain"),
                .variant(signature: "ay", .bytes([1, 2, 3]))
            ])
        let decoded = try DBusMessage.decode(try call.encoded())
        #expect(decoded.serial == 7 && decoded.member == "SearchItems" && decoded.path == "/org/freedesktop/secrets")
        #expect(decoded.signature == "a{ss}aosv")
        #expect(decoded.body == call.body)
    }

    @Test func theSocketAddressComesFromThePathOrAbstractEntry() throws {
        #expect(DBusConnection.socketAddress("unix:path=/tmp/dbus-x,guid=abc") != nil)
        #expect(DBusConnection.socketAddress("tcp:host=a;unix:abstract=/tmp/dbus-y") != nil)
        #expect(DBusConnection.socketAddress("tcp:host=a,port=1") == nil)
        #expect(DBusConnection.socketAddress("unix:path=" + String(repeating: "a", count: 200)) == nil, "longer than sun_path")
    }

    @Test(arguments: [
        ("truncated", Array([UInt8(ascii: "l"), 2, 0, 1, 0, 0, 0, 0])),
        ("bad byte order", Array([UInt8(ascii: "x"), 2, 0, 1] + [UInt8](repeating: 0, count: 12))),
        ("an array longer than the message", Array([UInt8(ascii: "l"), 2, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0xFF, 0xFF, 0, 0]))
    ])
    func hostileMessagesAreDataErrors(_ name: String, _ bytes: [UInt8]) {
        #expect(throws: StarlineError.self, "\(name)") { _ = try DBusMessage.decode(bytes) }
    }

    @Test func sixteenBitValuesDecodeInEitherByteOrder() throws {
        var little = try DBusReader([UInt8(ascii: "l"), 0, 0, 0, 0xFE, 0xFF, 0x34, 0x12])
        try little.seek(to: 4)
        #expect(try little.read("n") == .int32(-2))
        #expect(try little.read("q") == .uint32(0x1234))
        var big = try DBusReader([UInt8(ascii: "B"), 0, 0, 0, 0xFF, 0xFE, 0x12, 0x34])
        try big.seek(to: 4)
        #expect(try big.read("n") == .int32(-2))
        #expect(try big.read("q") == .uint32(0x1234))
    }

    @Test(
        """
        signatures are validated as the specification says: no (), dict entries only in arrays with a basic key, \
        32/32 nesting, 255 bytes
        """)
    func invalidSignaturesAreRefused() throws {
        for valid in [
            "a{sv}", "a{o(oayays)}", "(y)", "aoao", String(repeating: "a", count: 32) + "y",
            String(repeating: "(", count: 32) + "y" + String(repeating: ")", count: 32)
        ] {
            #expect((try? DBusSignature.split(valid)) != nil, "\(valid)")
        }
        for invalid in [
            "()", "a()", "a(())", "(y())", "av()", "{ss}", "a{vs}", "a{(y)s}", "a{s}", "a{sss}", "(y", "y)", "a", "z", "a{ss",
            String(repeating: "a", count: 33) + "y", String(repeating: "(", count: 33) + "y" + String(repeating: ")", count: 33),
            String(repeating: "y", count: 256)
        ] {
            #expect(throws: StarlineError.self, "\(invalid)") { _ = try DBusSignature.split(invalid) }
        }
    }

    @Test("messages whose values would read no bytes, or nest past 64 through variants, are DATA_ERROR and end at once")
    func zeroProgressMessagesEnd() throws {
        func reply(_ signature: String, _ body: [UInt8]) throws -> [UInt8] {
            var message = DBusMessage.reply(
                to: .call(serial: 1, destination: "d", path: "/", interface: "i", member: "m"), serial: 2, sender: ":1.1",
                signature: signature)
            message.destination = ":1.2"
            return try message.encoded(body: body)
        }
        let noBytes: [UInt8] = [8, 0, 0, 0, 0, 0, 0, 0] + [UInt8](repeating: 0, count: 8)
        // 65 variants, each holding the next: "v" signature (1, 'v', NUL), then finally a byte.
        let nested: [UInt8] = Array(repeating: [1, UInt8(ascii: "v"), 0], count: 65).flatMap { $0 } + [1, UInt8(ascii: "y"), 0, 7]
        for (signature, body) in [("a()", noBytes), ("a(())", noBytes), ("v", nested)] {
            let bytes = try reply(signature, body)
            let error = finishing("decoding \(signature)") { () -> StarlineError? in
                do throws(StarlineError) {
                    _ = try DBusMessage.decode(bytes)
                    return nil
                } catch {
                    return error
                }
            }
            #expect(error?.code == .data, "\(signature)")
        }
        // The reader itself, given a type nobody validated: an array whose elements read nothing stops.
        var reader = try DBusReader([UInt8(ascii: "l"), 0, 0, 0] + noBytes)
        try reader.seek(to: 4)
        let raw = reader
        let error = finishing("reading a() unvalidated") { () -> StarlineError? in
            var reader = raw
            do throws(StarlineError) {
                _ = try reader.read("a()")
                return nil
            } catch {
                return error
            }
        }
        #expect(error?.code == .data)
    }

    @Test("a method return's SENDER must be the one asked; the bus's own errors are accepted, its method returns are not")
    func repliesAreMatchedOnSenderAndSerial() throws {
        let call = DBusMessage.call(serial: 5, destination: ":1.7", path: "/", interface: "i", member: "m")
        func reply(_ sender: String?, error: String? = nil, serial: UInt32 = 5) -> DBusMessage {
            var message = DBusMessage.reply(to: call, serial: 9, sender: sender, errorName: error)
            message.replySerial = serial
            return message
        }
        #expect(DBusConnection.answers(reply(":1.7"), serial: 5, from: ":1.7"))
        #expect(!DBusConnection.answers(reply(":1.7", serial: 4), serial: 5, from: ":1.7"))
        #expect(!DBusConnection.answers(reply(":1.66"), serial: 5, from: ":1.7"))
        #expect(!DBusConnection.answers(reply(nil), serial: 5, from: ":1.7"))
        #expect(!DBusConnection.answers(reply("org.freedesktop.DBus"), serial: 5, from: ":1.7"))
        #expect(DBusConnection.answers(reply("org.freedesktop.DBus", error: "org.freedesktop.DBus.Error.NoReply"), serial: 5, from: ":1.7"))
        #expect(!DBusConnection.answers(reply(":1.66", error: "org.freedesktop.Secret.Error.IsLocked"), serial: 5, from: ":1.7"))
        // SENDER and REPLY_SERIAL survive the wire.
        let decoded = try DBusMessage.decode(try reply(":1.7").encoded())
        #expect(decoded.sender == ":1.7" && decoded.replySerial == 5 && decoded.kind == .methodReturn)
    }

    @Test func deeplyNestedOrOverlongValuesAreRefused() throws {
        let deep = String(repeating: "a", count: 40) + "y"
        #expect(throws: StarlineError.self) { _ = try DBusSignature.split(deep) }
        // A string whose length runs past the end.
        var reader = try DBusReader([UInt8(ascii: "l"), 0, 0, 0, 0xFF, 0xFF, 0xFF, 0x7F])
        try reader.seek(to: 4)
        #expect(throws: StarlineError.self) { _ = try reader.read("s") }
        // An ay that claims more than D-Bus allows.
        var huge = try DBusReader([UInt8(ascii: "l"), 0, 0, 0, 0, 0, 0, 0x10])
        try huge.seek(to: 4)
        #expect(throws: StarlineError.self) { _ = try huge.read("ay") }
    }
}
