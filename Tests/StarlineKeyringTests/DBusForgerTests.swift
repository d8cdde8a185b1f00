import Foundation
import Glibc
import StarlineCore
import StarlineCrypto
@testable import StarlineKeyring
import StarlineTestSupport
import Testing

/// A forger on the real bus: a client of the same uid that does not own `org.freedesktop.secrets` answers
/// the reader's GetSecrets before gnome-keyring can (in the serialized suite: it stops the shared daemon).
extension SecretServiceKeyringTests {
    @Test("a same-uid client that forges the GetSecrets reply on a real dbus-daemon is ignored: its secret is never used")
    func forgedReplyOnARealBusIgnored() throws {
        let testKeyring = try SharedKeyring.unlocked()
        let daemon = try #require(testKeyring.daemonPID)
        let keyring = try SecretServiceKeyring.open(environment: testKeyring.environment)
        let attributes = uniqueAttributes("forged")
        let secret = SecretBytes(count: 32)
        try keyring.store(secret: secret, label: "forged read", attributes: attributes)
        defer { _ = try? keyring.delete(attributes: attributes) }
        let forgedSecret = Array("a forger's key".utf8)

        // The forger eavesdrops (the test bus allows it) on SearchItems calls and their replies; when the
        // victim's reply names an item, it stops gnome-keyring and answers the GetSecrets the victim is about to
        // send (the next serial) with its own secret for that item.
        let forged = Locked<String?>(nil)
        // Set once the test is past the lookup: from then on the forger stops no daemon. The forger's SIGSTOP is
        // sent under this lock, so the test's SIGCONT (after setting it) always comes after any SIGSTOP. Before,
        // a forger thread that ran late stopped the daemon after the SIGCONT, and the next unlock waited forever.
        let over = Locked(false)
        let forger = try DBusConnection(address: testKeyring.address, timeoutNanoseconds: 30_000_000_000)
        for rule in ["eavesdrop='true',type='method_call',member='SearchItems'", "eavesdrop='true',type='method_return'"] {
            let added = try forger.call(
                .call(
                    serial: 0, destination: DBusConnection.bus, path: DBusConnection.busPath, interface: DBusConnection.bus,
                    member: "AddMatch", signature: "s", body: [.string(rule)]), replyFrom: DBusConnection.bus)
            #expect(added.kind == .methodReturn)
        }
        let handOver = HandOver(forger)
        let forgerThread = Thread {
            let forger = handOver.value
            var search: DBusMessage?
            do throws(StarlineError) {
                while true {
                    let message = try forger.nextMessage()
                    if message.member == "SearchItems", message.sender != forger.uniqueName { search = message; continue }
                    guard let call = search, message.kind == .methodReturn, message.replySerial == call.serial,
                        message.destination == call.sender,
                        case .array(_, let items) = message.body.first, case .objectPath(let item) = items.first
                    else { continue }
                    guard over.withLock({ isOver in isOver ? false : kill(daemon, SIGSTOP) == 0 }) else {
                        forged.withLockNotifying { $0 = "too late: the lookup had ended" }
                        return
                    }
                    var reply = DBusMessage.reply(
                        to: call, serial: 0, sender: nil, signature: "a{o(oayays)}",
                        body: [
                            .array(
                                elementSignature: "{o(oayays)}",
                                [
                                    .dictEntry(
                                        .objectPath(item),
                                        .structure([
                                            .objectPath("/org/freedesktop/secrets/session/forged"), .bytes([]), .bytes(forgedSecret),
                                            .string("text/plain")
                                        ]))
                                ])
                        ])
                    reply.replySerial = call.serial + 1
                    try forger.post(reply)
                    forged.withLockNotifying { $0 = "sent to \(call.sender ?? "?") for serial \(call.serial + 1)" }
                    return
                }
            } catch {
                forged.withLockNotifying { $0 = "failed: \(error)" }
            }
        }
        forgerThread.start()

        let result: Result<SecretServiceReader.Outcome, StarlineError>
        do {
            result = .success(
                try SecretServiceReader.lookup(
                    busOf: Environment(testKeyring.environment), schemaName: "org.starline.Secret",
                    attributes: attributes, timeout: .seconds(3)))
        } catch {
            result = .failure(error)
        }
        let what = forged.await(deadline: MonotonicClock.nanoseconds() + 10_000_000_000) { $0 }
        over.withLock { $0 = true }
        kill(daemon, SIGCONT)
        #expect(what?.hasPrefix("sent") == true, "the forger did its part: \(what ?? "nothing")")
        switch result {
        case .success(.answered(.found(let read))):
            #expect(read.copyBytes() != forgedSecret, "the forged secret was used")
            #expect(read.copyBytes() == secret.copyBytes())
        case .failure(let error):
            // gnome-keyring was stopped before it could answer: a timeout, never the forger's bytes.
            #expect(error.code == .keyringUnavailable)
        case .success(let other):
            Issue.record("unexpected outcome \(other)")
        }
        // The daemon serves again once continued.
        try testKeyring.unlock()
        #expect(try direct(testKeyring, attributes).flatMap(secretBytes) == secret.copyBytes())
    }
}

/// A value handed to one other thread, which alone uses it from then on.
final class HandOver<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
