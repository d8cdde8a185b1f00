import Foundation
import Glibc
import StarlineCore
import StarlinePlatform
import Synchronization
import StarlineTestSupport
import Testing
import StarlineSQLite

/// The session store against real files in a private temporary directory; no mocks. The machine id is
/// pointed at a file of the test's own with `STARLINE_MACHINE_ID_FILE`, so "another machine" is another
/// file.
@Suite("SessionStore")
final class SessionStoreTests: Sendable {
    let fixture: StoreFixture
    init() throws { fixture = try StoreFixture() }

    var key: StoreKey { fixture.key }

    // MARK: - Round trip, keys, sealing

    @Test("S2 a saved candidate reads back unchanged, is replaced by a new save and is gone after delete")
    func candidateRoundTrip() throws {
        let store = try fixture.store()
        #expect(try store.withState { try $0.candidate() } == nil)

        let first = sampleCandidate(token: "tok-first", sessionId: "sess-1")
        try store.withState { try $0.saveCandidate(first) }
        #expect(try store.withState { try $0.candidate() } == first)

        // Another instance (another process would do the same) reads it too.
        #expect(try fixture.store().withState { try $0.candidate() } == first)

        var second = sampleCandidate(token: "tok-second", sessionId: "sess-2")
        second.verifiedAt = nil
        second.roles = []
        second.user = .object([("id", .string("bob")), ("tags", .array([.int(1), .null, .bool(true)]))])
        try store.withState { try $0.saveCandidate(second) }
        #expect(try store.withState { try $0.candidate() } == second)

        try store.withState { try $0.deleteCandidate() }
        #expect(try store.withState { try $0.candidate() } == nil)
        // Deleting nothing is fine.
        try store.withState { try $0.deleteCandidate() }
    }

    @Test("S3 tokens, verifiers and device codes are never in the database file in clear")
    func tokensAreSealed() throws {
        let token = "AT-clear-text-needle-7f3a9c"
        let verifier = "VERIFIER-needle-b81d2e"
        let deviceCode = "DEVICECODE-needle-55aa"
        let revokeToken = "RT-revoke-needle-0c0c"
        do {
            let store = try fixture.store()
            try store.withState { (state: SessionState) throws in
                try state.saveCandidate(sampleCandidate(token: token, sessionId: "sess-visible-1"))
                try state.savePendingLogin(
                    PendingLogin(
                        mode: .device, state: "st-1", verifier: verifier, redirectURI: "http://127.0.0.1:1/callback",
                        deviceCode: deviceCode, createdAt: 1, expiresAt: Int64(time(nil)) + 600))
                try state.addPendingRevocation(sessionId: "sess-old", accessToken: revokeToken)
            }
            // While open (data may still be in the WAL) ...
            try expectAbsent([token, verifier, deviceCode, revokeToken], present: "sess-visible-1", in: store.databasePath)
        }
        // ... and after a checkpoint copied the WAL into the main file (store connections do not checkpoint
        // when they close; a plain connection does, as the last one to close).
        _ = try SQLiteDatabase(path: fixture.state + "/sessions.db")
        try expectAbsent([token, verifier, deviceCode, revokeToken], present: "sess-visible-1", in: fixture.state + "/sessions.db")
        // The secrets still open.
        let back = try fixture.store().withState { (state: SessionState) throws in
            (
                try state.candidate()?.accessToken, try state.pendingLogin()?.verifier,
                try state.pendingLogin()?.deviceCode, try state.pendingRevocations().first?.accessToken
            )
        }
        #expect(back.0 == token)
        #expect(back.1 == verifier)
        #expect(back.2 == deviceCode)
        #expect(back.3 == revokeToken)
    }

    /// Reads the database and its WAL as raw bytes and checks that no secret occurs in them, and that a
    /// clear field does (so the search itself works).
    private func expectAbsent(_ secrets: [String], present clear: String, in path: String) throws {
        var bytes = try #require(try AtomicFile.read(path))
        if let wal = try AtomicFile.read(path + "-wal") { bytes += wal }
        #expect(contains(bytes, clear), "the clear session id should be found in \(path)")
        for secret in secrets {
            #expect(!contains(bytes, secret), "a secret is stored in clear in \(path)")
        }
    }

    @Test("S2 the storage key combines API origin and App ID (and the service name, S3)")
    func keysAreSeparate() throws {
        let api = try BaseURL(validating: "https://account.thestarline.cn")
        let keys = [
            StoreKey(api: api, appId: "workbench", service: "default"),
            StoreKey(api: api, appId: "com.example.game", service: "default"),  // other App ID
            StoreKey(api: try BaseURL(validating: "https://staging.thestarline.cn"), appId: "workbench", service: "default"),
            StoreKey(api: try BaseURL(validating: "https://account.thestarline.cn:8443"), appId: "workbench", service: "default"),
            StoreKey(api: try BaseURL(validating: "https://account.thestarline.cn/v2"), appId: "workbench", service: "default"),
            StoreKey(api: api, appId: "workbench", service: "ci")  // other service
        ]
        #expect(keys[0].id == "default|https://account.thestarline.cn|workbench")
        #expect(keys[3].apiOrigin == "https://account.thestarline.cn:8443")
        #expect(keys[4].apiOrigin == "https://account.thestarline.cn/v2")
        #expect(Set(keys.map(\.id)).count == keys.count)
        #expect(Set(keys.map(\.digest)).count == keys.count)

        // Only the first key has a candidate: nobody else sees it.
        try fixture.store(key: keys[0]).withState { try $0.saveCandidate(sampleCandidate(token: "tok-0", sessionId: "s-0")) }
        for other in keys.dropFirst() {
            #expect(try fixture.store(key: other).withState { try $0.candidate() } == nil, "\(other.id)")
        }
        // Each key keeps its own candidate, pending login, revocations, generation and marker.
        for (i, k) in keys.enumerated() {
            try fixture.store(key: k).withState { (state: SessionState) throws in
                try state.saveCandidate(sampleCandidate(token: "tok-\(i)", sessionId: "s-\(i)"))
                try state.savePendingLogin(samplePending(state: "state-\(i)"))
                for _ in 0...i { try state.bumpGeneration() }
                try state.addPendingRevocation(sessionId: "old-\(i)", accessToken: "rt-\(i)")
                if i % 2 == 1 { try state.setRevocationMarker(sessionId: "s-\(i)") }
            }
        }
        for (i, k) in keys.enumerated() {
            try fixture.store(key: k).withState { (state: SessionState) throws in
                #expect(try state.candidate()?.accessToken == "tok-\(i)")
                #expect(try state.candidate()?.sessionId == "s-\(i)")
                #expect(try state.pendingLogin()?.state == "state-\(i)")
                #expect(state.generation == Int64(i + 1))
                #expect(try state.pendingRevocations().map(\.accessToken) == ["rt-\(i)"])
                #expect(try state.revocationMarker() == (i % 2 == 1 ? "s-\(i)" : nil))
            }
        }
    }

    @Test("S2 a '|' inside a key part cannot make two keys share an id")
    func keyIdEscaping() {
        let a = StoreKey(apiOrigin: "https://a", appId: "x|y", service: "s")
        let b = StoreKey(apiOrigin: "https://a|x", appId: "y", service: "s")
        #expect(a.id != b.id)
        #expect(a.id == "s|https://a|x%7Cy")
        #expect(StoreKey(apiOrigin: "o", appId: "100%", service: "s").id == "s|o|100%25")
    }

    @Test("S3 a copied store does not open on another machine")
    func copiedStoreDoesNotOpen() throws {
        try fixture.store().withState { (state: SessionState) throws in
            try state.saveCandidate(sampleCandidate(token: "tok-copied", sessionId: "sess-c"))
            try state.savePendingLogin(samplePending(state: "st-c"))
            try state.addPendingRevocation(sessionId: "old", accessToken: "rt-copied")
        }
        // Copy the store to "another machine": the database with its WAL (connections do not checkpoint
        // when they close, so the rows may be in sessions.db-wal) and the device key.
        let other = try StoreFixture(machineId: "0123456789abcdef0123456789abcdef")
        for name in ["sessions.db", "sessions.db-wal", "device.key"] where access(fixture.state + "/" + name, F_OK) == 0 {
            try copyFile(fixture.state + "/" + name, other.state + "/" + name)
        }
        let store = try other.store()
        let error = catchError { _ = try store.withState { try $0.candidate() } }
        #expect(error?.code == .storage)
        #expect(error?.exitStatus == .storage)
        #expect(error?.message == "stored session cannot be decrypted on this machine (machine id changed or store copied)")
        #expect(error?.message.contains("tok-copied") == false)
        #expect(catchError { _ = try store.withState { try $0.pendingLogin() } }?.code == .storage)
        #expect(catchError { _ = try store.withState { try $0.pendingRevocations() } }?.code == .storage)

        // The same copy with the original machine id opens: it is the machine that differs.
        try AtomicFile.write(Array("\(fixture.machineId)\n".utf8), to: other.machineIdFile)
        #expect(try other.store().withState { try $0.candidate()?.accessToken } == "tok-copied")
    }

    @Test("S3 a changed machine id makes the stored session undecryptable (STORAGE_ERROR, not 'no session')")
    func machineIdChanged() throws {
        try fixture.store().withState { try $0.saveCandidate(sampleCandidate(token: "tok-m", sessionId: "sess-m")) }
        try AtomicFile.write(Array("ffffffffffffffffffffffffffffffff\n".utf8), to: fixture.machineIdFile)
        let error = catchError { _ = try self.fixture.store().withState { try $0.candidate() } }
        #expect(error?.code == .storage)
        #expect(error?.message == "stored session cannot be decrypted on this machine (machine id changed or store copied)")
        // Back to the original id: it opens again.
        try AtomicFile.write(Array("\(fixture.machineId)\n".utf8), to: fixture.machineIdFile)
        #expect(try fixture.store().withState { try $0.candidate()?.accessToken } == "tok-m")
    }

    @Test("S3 a record moved to another key does not open")
    func movedRecordDoesNotOpen() throws {
        let other = StoreKey(apiOrigin: "https://account.thestarline.cn", appId: "com.example.game", service: "default")
        try fixture.store().withState { try $0.saveCandidate(sampleCandidate(token: "tok-moved", sessionId: "sess-x")) }
        do {
            let db = try SQLiteDatabase(path: fixture.state + "/sessions.db")
            try db.run("UPDATE candidates SET store_key = ? WHERE store_key = ?", [.text(other.id), .text(key.id)])
        }
        let error = catchError { _ = try self.fixture.store(key: other).withState { try $0.candidate() } }
        #expect(error?.code == .storage)
        #expect(error?.message.contains("cannot be decrypted") == true)
        #expect(try fixture.store().withState { try $0.candidate() } == nil)
    }

    @Test(
        "S3 sessions.db or device.key readable by group or others is refused (INSECURE_PERMISSIONS, exit 10)",
        arguments: ["sessions.db", "device.key"])
    func insecurePermissionsRefused(file: String) throws {
        try fixture.store().withState { try $0.saveCandidate(sampleCandidate(token: "tok-p", sessionId: "sess-p")) }
        let path = fixture.state + "/" + file
        #expect(chmod(path, 0o644) == 0)
        let error = catchError { _ = try self.fixture.store() }
        #expect(error?.code == .insecurePermissions)
        #expect(error?.exitStatus == .storage)
        #expect(error?.message.contains("run chmod 600 \(path)") == true)
        #expect(chmod(path, 0o600) == 0)
        #expect(try fixture.store().withState { try $0.candidate()?.accessToken } == "tok-p")
    }

    @Test("S3 the state directory and lock directory are 0700; sessions.db, device.key and the marker 0600")
    func fileModes() throws {
        let store = try fixture.store()
        try store.withState { (state: SessionState) throws in
            try state.saveCandidate(sampleCandidate(token: "t", sessionId: "s"))
            try state.setRevocationMarker(sessionId: "s")
        }
        #expect(permissionBits(fixture.state) == 0o700)
        #expect(permissionBits(fixture.state + "/locks") == 0o700)
        #expect(permissionBits(store.databasePath) == 0o600)
        #expect(permissionBits(store.deviceKeyPath) == 0o600)
        #expect(permissionBits(store.revocationMarkerPath) == 0o600)
        #expect(store.databasePath == fixture.state + "/sessions.db")
        #expect(store.deviceKeyPath == fixture.state + "/device.key")
        #expect(store.revocationMarkerPath == fixture.state + "/sessions.db.revoked-" + key.digest)
        #expect(store.lockPath == fixture.state + "/locks/" + key.digest + ".lock")
        #expect(try AtomicFile.read(store.deviceKeyPath)?.count == 32)
    }

    @Test("secrets never show in descriptions of the records")
    func descriptionsRedactSecrets() {
        let c = sampleCandidate(token: "tok-desc-secret", sessionId: "sess-d")
        let p = PendingLogin(
            mode: .device, state: "st", verifier: "ver-desc-secret", redirectURI: "r",
            deviceCode: "dc-desc-secret", createdAt: 0, expiresAt: 1)
        let r = PendingRevocation(id: 1, sessionId: "s", accessToken: "rt-desc-secret", createdAt: 0)
        for text in ["\(c)", String(reflecting: c), "\(p)", String(reflecting: p), "\(r)", String(reflecting: r)] {
            #expect(!text.contains("desc-secret"), "\(text)")
        }
        var dumped = ""
        dump(c, to: &dumped)
        dump(p, to: &dumped)
        dump(r, to: &dumped)
        #expect(!dumped.contains("desc-secret"))
    }

    // MARK: - Generation, pending login, pending revocations

    @Test("S6 S9 generation bumps persist across instances and roll back with a failed body")
    func generationPersists() throws {
        #expect(try fixture.store().withState { $0.generation } == 0)
        let first = try fixture.store().withState { state -> Int64 in
            try state.bumpGeneration()
            return try state.bumpGeneration()
        }
        #expect(first == 2)
        #expect(try fixture.store().withState { $0.generation } == 2)
        #expect(try fixture.store().withState { try $0.bumpGeneration() } == 3)

        // A body that throws commits nothing.
        let store = try fixture.store()
        let error = catchError {
            try store.withState { (state: SessionState) throws in
                try state.bumpGeneration()
                throw StarlineError(.network, "offline")
            }
        }
        #expect(error?.code == .network)
        #expect(try fixture.store().withState { $0.generation } == 3)
    }

    @Test("S6 a pending login round-trips until it expires; an expired one reads as nil and is deleted")
    func pendingLoginRoundTripAndExpiry() throws {
        let store = try fixture.store()
        #expect(try store.withState { try $0.pendingLogin() } == nil)
        let now = Int64(time(nil))
        let paste = PendingLogin(
            mode: .paste, state: "st-paste", verifier: "v-paste",
            redirectURI: "starline-workbench://auth/callback", createdAt: now, expiresAt: now + 600)
        try store.withState { try $0.savePendingLogin(paste) }
        #expect(try store.withState { try $0.pendingLogin() } == paste)

        let device = PendingLogin(
            mode: .device, state: "st-device", verifier: "v-device", redirectURI: "",
            deviceCode: "dc-1", createdAt: now, expiresAt: now + 300)
        try store.withState { try $0.savePendingLogin(device) }
        #expect(try fixture.store().withState { try $0.pendingLogin() } == device)

        // With the clock at or past expiresAt it is gone, for good.
        #expect(try store.withState { try $0.pendingLogin(now: now + 299) } == device)
        #expect(try store.withState { try $0.pendingLogin(now: now + 300) } == nil)
        #expect(try store.withState { try $0.pendingLogin(now: now) } == nil)

        // Already expired by the real clock.
        var stale = paste
        stale.expiresAt = now - 1
        try store.withState { try $0.savePendingLogin(stale) }
        #expect(try store.withState { try $0.pendingLogin() } == nil)

        try store.withState { try $0.savePendingLogin(paste) }
        try store.withState { try $0.clearPendingLogin() }
        #expect(try store.withState { try $0.pendingLogin() } == nil)
        try store.withState { try $0.clearPendingLogin() }
    }

    @Test("S12 pending revocations: add (idempotent per session), update attempts and error, remove")
    func pendingRevocations() throws {
        let store = try fixture.store()
        #expect(try store.withState { try $0.pendingRevocations() } == [])
        let (a, b, again) = try store.withState { (state: SessionState) throws in
            (
                try state.addPendingRevocation(sessionId: "sess-a", accessToken: "rt-a"),
                try state.addPendingRevocation(sessionId: "sess-b", accessToken: "rt-b"),
                try state.addPendingRevocation(sessionId: "sess-a", accessToken: "rt-a")
            )
        }
        #expect(a != b)
        #expect(again == a)
        let listed = try fixture.store().withState { try $0.pendingRevocations() }
        #expect(listed.map(\.id) == [a, b])
        #expect(listed.map(\.sessionId) == ["sess-a", "sess-b"])
        #expect(listed.map(\.accessToken) == ["rt-a", "rt-b"])
        #expect(listed.map(\.attempts) == [0, 0])
        #expect(listed.map(\.lastError) == [nil, nil])
        #expect(listed.allSatisfy { abs($0.createdAt - Int64(time(nil))) < 60 })

        try store.withState { try $0.updatePendingRevocation(id: a, attempts: 2, lastError: "NETWORK_ERROR: connection refused") }
        let updated = try store.withState { try $0.pendingRevocations() }
        #expect(updated[0].attempts == 2)
        #expect(updated[0].lastError == "NETWORK_ERROR: connection refused")
        #expect(updated[1] == listed[1])
        try store.withState { try $0.updatePendingRevocation(id: a, attempts: 3, lastError: nil) }
        #expect(try store.withState { try $0.pendingRevocations()[0].lastError } == nil)

        // Another key cannot touch them.
        let other = try fixture.store(key: StoreKey(apiOrigin: "https://x.example", appId: "workbench", service: "default"))
        try other.withState { (state: SessionState) throws in
            #expect(try state.pendingRevocations() == [])
            try state.removePendingRevocation(id: a)
            try state.updatePendingRevocation(id: b, attempts: 9, lastError: "x")
        }
        #expect(try store.withState { try $0.pendingRevocations().map(\.attempts) } == [3, 0])

        try store.withState { try $0.removePendingRevocation(id: a) }
        #expect(try store.withState { try $0.pendingRevocations().map(\.id) } == [b])
        try store.withState { try $0.removePendingRevocation(id: a) }  // already gone: fine
        try store.withState { try $0.removePendingRevocation(id: b) }
        #expect(try store.withState { try $0.pendingRevocations() } == [])
    }

    // MARK: - S13 marker and storage faults

    @Test("S13 a failed delete leaves a marker that later instances honour")
    func failedDeleteLeavesMarker() throws {
        try fixture.store().withState { try $0.saveCandidate(sampleCandidate(token: "tok-13", sessionId: "sess-13")) }

        let faulty = try fixture.store(faults: "delete")
        let error = catchError {
            try faulty.withState { (state: SessionState) throws in
                try state.bumpGeneration()
                do {
                    try state.deleteCandidate()
                } catch {
                    // What the engine does: remember that the old candidate must not be restored.
                    try state.setRevocationMarker(sessionId: "sess-13")
                    throw error
                }
            }
        }
        #expect(error?.code == .storage)
        #expect(error?.exitStatus == .storage)
        #expect(error?.message == "cannot delete the stored session: injected storage fault (STARLINE_TEST_STORAGE_FAULT=delete)")

        // A new instance (a later run, no fault): the record is still there, and so is the marker.
        let later = try fixture.store()
        try later.withState { (state: SessionState) throws in
            #expect(try state.revocationMarker() == "sess-13")
            #expect(try state.candidate()?.sessionId == "sess-13")
            #expect(state.generation == 0)  // the failed body's bump was rolled back; the marker was not
        }
        // `clear` retries the delete, then drops the marker.
        try later.withState { (state: SessionState) throws in
            try state.deleteCandidate()
            try state.clearRevocationMarker()
        }
        try fixture.store().withState { (state: SessionState) throws in
            #expect(try state.revocationMarker() == nil)
            #expect(try state.candidate() == nil)
            try state.clearRevocationMarker()  // no marker: fine
        }
    }

    @Test("S17 fault hook 'read': candidate() is STORAGE_ERROR, never nil")
    func faultRead() throws {
        let store = try fixture.store(faults: "read")
        // Even with nothing stored, a failed read must not look like "no session".
        let error = catchError { _ = try store.withState { try $0.candidate() } }
        #expect(error?.code == .storage)
        #expect(error?.exitStatus == .storage)
        #expect(error?.details?["fault"]?.stringValue == "read")
        // Other operations work.
        try store.withState { (state: SessionState) throws in
            try state.saveCandidate(sampleCandidate(token: "t", sessionId: "s"))
            try state.deleteCandidate()
            #expect(try state.pendingLogin() == nil)
        }
    }

    @Test("S17 fault hook 'write': saveCandidate, savePendingLogin and addPendingRevocation fail and persist nothing")
    func faultWrite() throws {
        try fixture.store().withState { try $0.saveCandidate(sampleCandidate(token: "tok-old", sessionId: "sess-old")) }
        let store = try fixture.store(faults: "write")
        let writes: [(String, (SessionState) throws -> Void)] = [
            ("cannot write the stored session", { try $0.saveCandidate(sampleCandidate(token: "tok-new", sessionId: "sess-new")) }),
            ("cannot write the pending login", { try $0.savePendingLogin(samplePending(state: "st")) }),
            ("cannot write the pending revocation", { try $0.addPendingRevocation(sessionId: "s", accessToken: "t") })
        ]
        for (prefix, write) in writes {
            let error = catchError { try store.withState { try write($0) } }
            #expect(error?.code == .storage)
            #expect(error?.message.hasPrefix(prefix + ": injected storage fault") == true, "\(error?.message ?? "")")
        }
        try fixture.store().withState { (state: SessionState) throws in
            #expect(try state.candidate()?.accessToken == "tok-old")
            #expect(try state.pendingLogin() == nil)
            #expect(try state.pendingRevocations() == [])
        }
        // Reads, deletes and the marker still work under a write fault.
        try store.withState { (state: SessionState) throws in
            #expect(try state.candidate()?.accessToken == "tok-old")
            try state.setRevocationMarker(sessionId: "sess-old")
            try state.deleteCandidate()
        }
        #expect(try fixture.store().withState { try $0.candidate() } == nil)
    }

    @Test("S17 fault hook 'delete' fails only deleteCandidate; 'marker' fails the marker too")
    func faultDeleteAndMarker() throws {
        try fixture.store().withState { try $0.saveCandidate(sampleCandidate(token: "tok", sessionId: "sess")) }
        let both = try fixture.store(faults: "delete, marker")
        #expect(both.storageFaults.kinds == [.delete, .marker])
        #expect(catchError { try both.withState { try $0.deleteCandidate() } }?.code == .storage)
        let marker = catchError { try both.withState { try $0.setRevocationMarker(sessionId: "sess") } }
        #expect(marker?.code == .storage)
        #expect(marker?.message == "cannot write the revocation marker: injected storage fault (STARLINE_TEST_STORAGE_FAULT=marker)")
        #expect(catchError { try both.withState { try $0.clearRevocationMarker() } }?.code == .storage)
        // Other deletes are not affected.
        try both.withState { (state: SessionState) throws in
            try state.clearPendingLogin()
            #expect(try state.revocationMarker() == nil)
            #expect(try state.candidate()?.accessToken == "tok")
        }
        #expect(!FileManager.default.fileExists(atPath: both.revocationMarkerPath))
    }

    @Test("an unknown STARLINE_TEST_STORAGE_FAULT kind is refused (USAGE)")
    func faultUnknown() {
        let error = catchError { _ = try self.fixture.store(faults: "read,wirte") }
        #expect(error?.code == .usage)
        #expect(error?.message.contains("unknown fault 'wirte'") == true)
        #expect((try? fixture.store(faults: "")) != nil)
    }

    @Test("S17 sessions.db being a directory is STORAGE_ERROR (exit 10), and works once it is a file again")
    func databaseIsDirectory() throws {
        #expect(mkdir(fixture.state + "/sessions.db", 0o700) == 0)
        let error = catchError { _ = try self.fixture.store() }
        #expect(error?.code == .storage)
        #expect(error?.exitStatus == .storage)
        #expect(error?.message.hasPrefix("cannot open the session store: ") == true, "\(error?.message ?? "")")
        #expect(rmdir(fixture.state + "/sessions.db") == 0)
        try fixture.store().withState { try $0.saveCandidate(sampleCandidate(token: "t", sessionId: "s")) }
        #expect(try fixture.store().withState { try $0.candidate()?.accessToken } == "t")
    }

    @Test("S17 a sessions.db that is not a database is STORAGE_ERROR and is left as it is")
    func databaseIsGarbage() throws {
        let path = fixture.state + "/sessions.db"
        let garbage = Array(String(repeating: "not a database ", count: 300).utf8)
        try AtomicFile.write(garbage, to: path)
        let error = catchError { _ = try self.fixture.store() }
        #expect(error?.code == .storage)
        #expect(error?.message.hasPrefix("cannot open the session store: \(path): ") == true, "\(error?.message ?? "")")
        #expect(try AtomicFile.read(path) == garbage)
    }

    @Test(
        """
        a store written before migrations existed (its schema, user_version 1) keeps its tables and records and gains \
        the custody table (migration 2)
        """)
    func storeFromBeforeMigrations() throws {
        let path = fixture.state + "/sessions.db"
        do {
            let db = try SQLiteDatabase(path: path)
            try db.execute(Self.schemaBeforeMigrations)
            try db.setUserVersion(1)
            try db.run("INSERT INTO generations (store_key, generation) VALUES (?, 5)", [.text(key.id)])
        }
        let schema = "SELECT type, name, sql FROM sqlite_master WHERE name != 'custody' ORDER BY name"
        let before = try SQLiteDatabase(path: path, readOnly: true).query(schema)
        #expect(try fixture.store().withState { $0.generation } == 5)
        let custodian = try fixture.store().withState { try $0.custody().custodian }
        #expect(custodian == .file, "no custody row: the file custodian, as before")
        let db = try SQLiteDatabase(path: path, readOnly: true)
        #expect(try db.query(schema) == before)
        #expect(try db.query("SELECT name FROM sqlite_master WHERE name = 'custody'").count == 1)
        #expect(try db.userVersion == 2)
    }

    @Test("a sessions.db with a newer schema is refused (STORAGE_ERROR, both versions named) and kept")
    func newerSchemaRefused() throws {
        let path = fixture.state + "/sessions.db"
        try SQLiteDatabase(path: path).setUserVersion(3)
        let before = try AtomicFile.read(path)
        let error = catchError { _ = try self.fixture.store() }
        #expect(error?.code == .storage)
        #expect(error?.exitStatus == .storage)
        #expect(error?.message == "cannot open the session store: \(path) was written by a newer Starline (schema 3, this one knows 2)")
        #expect(try AtomicFile.read(path) == before)
    }

    /// The schema of sessions.db as the store created it before it had migrations.
    static let schemaBeforeMigrations = """
        CREATE TABLE IF NOT EXISTS generations (
            store_key TEXT PRIMARY KEY NOT NULL,
            generation INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS candidates (
            store_key TEXT PRIMARY KEY NOT NULL,
            session_id TEXT NOT NULL,
            sealed_token BLOB NOT NULL,
            user_json TEXT NOT NULL,
            roles_json TEXT NOT NULL,
            expires_at INTEGER NOT NULL,
            created_at INTEGER NOT NULL,
            verified_at INTEGER,
            updated_at INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS pending_logins (
            store_key TEXT PRIMARY KEY NOT NULL,
            mode TEXT NOT NULL,
            state TEXT NOT NULL,
            sealed_secrets BLOB NOT NULL,
            redirect_uri TEXT NOT NULL,
            has_device_code INTEGER NOT NULL,
            created_at INTEGER NOT NULL,
            expires_at INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS pending_revocations (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            store_key TEXT NOT NULL,
            session_id TEXT NOT NULL,
            sealed_token BLOB NOT NULL,
            created_at INTEGER NOT NULL,
            attempts INTEGER NOT NULL DEFAULT 0,
            last_error TEXT
        );
        CREATE INDEX IF NOT EXISTS pending_revocations_by_key ON pending_revocations (store_key, id);
        """

    @Test("S17 an unreadable device key is STORAGE_ERROR, and works again once readable")
    func unreadableDeviceKey() throws {
        try fixture.store().withState { try $0.saveCandidate(sampleCandidate(token: "tok-17", sessionId: "sess-17")) }
        let keyPath = fixture.state + "/device.key"
        let aside = fixture.state + "/device.key.aside"
        #expect(rename(keyPath, aside) == 0)

        // A directory where the key should be (works as root, which ignores file modes).
        #expect(mkdir(keyPath, 0o700) == 0)
        let locked = catchError { _ = try self.fixture.store().withState { try $0.candidate() } }
        #expect(locked?.code == .storage)
        #expect(locked?.exitStatus == .storage)
        #expect(locked?.message == "cannot open the session store: \(keyPath) is not a regular file")
        #expect(rmdir(keyPath) == 0)

        // Missing while a sealed record exists: "locked", not "no session" — and no new key is made.
        let missing = catchError { _ = try self.fixture.store().withState { try $0.candidate() } }
        #expect(missing?.code == .storage)
        #expect(missing?.message.hasPrefix("cannot open the session store: the device key \(keyPath) is missing") == true)
        #expect(!FileManager.default.fileExists(atPath: keyPath))

        // Damaged (truncated).
        try AtomicFile.write([1, 2, 3], to: keyPath)
        let damaged = catchError { _ = try self.fixture.store().withState { try $0.candidate() } }
        #expect(damaged?.code == .storage)
        #expect(damaged?.message.contains("is damaged (3 bytes, expected 32)") == true)

        // No read permission: root ignores file modes, so SessionLifecycleTests checks it with the tools run by
        // an unprivileged user (s17UnreadableDeviceKey).
        #expect(rename(aside, keyPath) == 0)

        // Readable again: the same instance kind works, with the same session.
        #expect(try fixture.store().withState { try $0.candidate()?.accessToken } == "tok-17")
    }

    @Test("S17 an unreadable machine id file is STORAGE_ERROR, not a silent change of key")
    func unreadableMachineId() throws {
        try fixture.store().withState { try $0.saveCandidate(sampleCandidate(token: "tok-mid", sessionId: "s")) }
        let aside = fixture.machineIdFile + ".aside"
        #expect(rename(fixture.machineIdFile, aside) == 0)
        #expect(mkdir(fixture.machineIdFile, 0o700) == 0)
        let store = try fixture.store()
        #expect(store.machineIdSource == fixture.machineIdFile)
        let error = catchError { _ = try store.withState { try $0.candidate() } }
        #expect(error?.code == .storage)
        #expect(
            error?.message.hasPrefix("cannot open the session store: cannot read \(fixture.machineIdFile)") == true,
            "\(error?.message ?? "")")
        #expect(rmdir(fixture.machineIdFile) == 0)
        #expect(rename(aside, fixture.machineIdFile) == 0)
        #expect(try store.withState { try $0.candidate()?.accessToken } == "tok-mid")
    }

    // MARK: - Machine id source

    @Test("S3 machineIdSource names the override file, or a generated 0600 host id that stays stable")
    func machineIdSource() throws {
        #expect(try fixture.store().machineIdSource == fixture.machineIdFile)

        let missing = fixture.dir + "/no-such-machine-id"
        let store = try fixture.store(machineIdFile: missing)
        let hostId = fixture.state + "/host-id"
        #expect(store.machineIdSource == hostId + " (generated)")
        #expect(!FileManager.default.fileExists(atPath: hostId))  // describing creates nothing
        try store.withState { try $0.saveCandidate(sampleCandidate(token: "tok-h", sessionId: "s")) }
        #expect(permissionBits(hostId) == 0o600)
        let id = try #require(try AtomicFile.read(hostId))
        #expect(id.count == 33)
        // Later instances reuse it, so the record opens.
        #expect(try fixture.store(machineIdFile: missing).withState { try $0.candidate()?.accessToken } == "tok-h")
        #expect(try AtomicFile.read(hostId) == id)
        // An empty or "uninitialized" machine id counts as none.
        for content in ["", "uninitialized\n"] {
            try AtomicFile.write(Array(content.utf8), to: missing)
            let s = try fixture.store(machineIdFile: missing)
            #expect(s.machineIdSource == hostId + " (generated)")
            #expect(try s.withState { try $0.candidate()?.accessToken } == "tok-h")
        }
        // Without the override the system files are used (this test does not depend on which exists).
        let system = try SessionStore(paths: fixture.paths, key: key, environment: Environment([:]))
        #expect(["/etc/machine-id", "/var/lib/dbus/machine-id", hostId + " (generated)"].contains(system.machineIdSource))
    }

    // MARK: - withState and locks

    @Test("SessionState is unusable after withState, and withState does not nest")
    func stateScope() throws {
        let store = try fixture.store()
        let escaped = try store.withState { $0 }
        #expect(catchError { _ = try escaped.candidate() }?.code == .internalError)
        #expect(catchError { try escaped.bumpGeneration() }?.code == .internalError)
        #expect(catchError { try escaped.setRevocationMarker(sessionId: "s") }?.code == .internalError)
        let nested = catchError { try store.withState { _ in try store.withState { _ in } } }
        #expect(nested?.code == .internalError)
        #expect(nested?.message == "SessionStore.withState cannot be nested")
        // Another instance (same key: its flock; other key: the SQLite write lock) would wait for itself too.
        let sameKey = try fixture.store()
        let otherKey = try fixture.store(key: StoreKey(apiOrigin: "https://x.example", appId: "a", service: "s"))
        #expect(catchError { try store.withState { _ in try sameKey.withState { _ in } } }?.code == .internalError)
        #expect(catchError { try store.withState { _ in try otherKey.withState { _ in } } }?.code == .internalError)
        // Nothing stays marked after a refused nesting: the next calls work.
        try sameKey.withState { _ in }
        try otherKey.withState { _ in }
        // The store still works after both misuses.
        #expect(try store.withState { try $0.bumpGeneration() } == 1)
    }

    @Test("S5 the verification lock excludes other instances until released")
    func verificationLock() throws {
        let a = try fixture.store()
        let b = try fixture.store()
        var held: FileLock? = try a.verificationLock()
        #expect(held?.isLocked == true)
        #expect(try b.tryVerificationLock() == nil)
        #expect(catchError { _ = try b.verificationLock(timeout: .milliseconds(30)) }?.code == .storage)
        // It is not the withState lock.
        #expect(try b.withState { try $0.bumpGeneration() } == 1)
        held = nil  // released on deinit
        let second = try #require(try b.tryVerificationLock())
        second.unlock()
        #expect(try a.verificationLock().isLocked)
        _ = held
    }

    @Test("concurrency: 8 threads with their own SessionStore lose none of 200 read-modify-write increments")
    func concurrentIncrements() throws {
        let fixture = self.fixture
        try fixture.store().withState { try $0.saveCandidate(counterCandidate(0)) }
        let failures = Locked<[String]>([])
        let threads = (0..<8).map { _ in
            startThread {
                do {
                    let store = try fixture.store()
                    for _ in 0..<25 {
                        try store.withState { (state: SessionState) throws in
                            guard let c = try state.candidate(), let n = c.user["n"]?.intValue else {
                                throw StarlineError(.data, "no counter")
                            }
                            try state.saveCandidate(counterCandidate(n + 1))
                            try state.bumpGeneration()
                        }
                    }
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
        }
        for thread in threads { thread.wait() }
        #expect(failures.withLock { $0 } == [])
        try fixture.store().withState { (state: SessionState) throws in
            #expect(try state.candidate()?.user["n"]?.intValue == 200)
            #expect(state.generation == 200)
        }
    }

    @Test("concurrency: threads on different keys and one shared instance all commit")
    func concurrentKeysAndSharedInstance() throws {
        let fixture = self.fixture
        let keys = (0..<3).map { StoreKey(apiOrigin: "https://account.thestarline.cn", appId: "app\($0)", service: "default") }
        let shared = try fixture.store(key: keys[0])
        let failures = Locked<[String]>([])
        let threads = (0..<6).map { i in
            startThread {
                do {
                    // Threads 0 and 3 share one instance; the others open their own, on keys 1 and 2.
                    let store = i % 3 == 0 ? shared : try fixture.store(key: keys[i % 3])
                    for _ in 0..<20 {
                        try store.withState { (state: SessionState) throws in
                            let n = try state.candidate()?.user["n"]?.intValue ?? 0
                            try state.saveCandidate(counterCandidate(n + 1))
                            try state.addPendingRevocation(sessionId: "s-\(i)-\(n)", accessToken: "t")
                        }
                    }
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
        }
        for thread in threads { thread.wait() }
        #expect(failures.withLock { $0 } == [])
        for k in keys {
            try fixture.store(key: k).withState { (state: SessionState) throws in
                #expect(try state.candidate()?.user["n"]?.intValue == 40)
                #expect(try state.pendingRevocations().count == 40)
            }
        }
    }
}

// MARK: - Fixture and helpers

/// A private temporary directory with `state/` and a machine id file, removed when released.
final class StoreFixture: Sendable {
    let dir: String
    let machineId: String
    var state: String { dir + "/state" }
    var machineIdFile: String { dir + "/machine-id" }
    var paths: StarlinePaths {
        StarlinePaths(config: dir + "/config", state: state, data: dir + "/data", runtime: dir + "/run")
    }
    let key = StoreKey(apiOrigin: "https://account.thestarline.cn", appId: "workbench", service: "default")

    init(machineId: String = "3d1219c7c4c5404aaa1f6d2a48adfd00") throws {
        dir = try makeStorageTempDir(prefix: "starline-store")
        self.machineId = machineId
        try AtomicFile.write(Array("\(machineId)\n".utf8), to: dir + "/machine-id", mode: 0o644)
        try PrivateFiles.ensureDirectory(dir + "/state")
    }

    deinit { try? FileManager.default.removeItem(atPath: dir) }

    func store(key: StoreKey? = nil, faults: String? = nil, machineIdFile: String? = nil) throws -> SessionStore {
        var env = ["STARLINE_MACHINE_ID_FILE": machineIdFile ?? self.machineIdFile]
        if let faults { env["STARLINE_TEST_STORAGE_FAULT"] = faults }
        return try SessionStore(
            paths: paths, key: key ?? self.key, environment: Environment(env),
            storageFaults: try StorageFaults(environment: Environment(env)))
    }
}

func sampleCandidate(token: String, sessionId: String) -> StoredCandidate {
    StoredCandidate(
        accessToken: token, sessionId: sessionId,
        user: .object([("id", .string("alice")), ("name", .string("Alice 李")), ("admin", .bool(true))]),
        roles: ["admin", "user"], expiresAt: 1_900_000_000, createdAt: 1_800_000_000, verifiedAt: 1_800_000_100)
}

func samplePending(state: String) -> PendingLogin {
    let now = Int64(time(nil))
    return PendingLogin(
        mode: .paste, state: state, verifier: "verifier-" + state,
        redirectURI: "starline-workbench://auth/callback", createdAt: now, expiresAt: now + 600)
}

func counterCandidate(_ n: Int64) -> StoredCandidate {
    StoredCandidate(
        accessToken: "tok-\(n)", sessionId: "sess-\(n)", user: .object([("n", .int(n))]), roles: [],
        expiresAt: 1_900_000_000, createdAt: 1_800_000_000)
}

/// The `StarlineError` that `body` throws, or nil when it does not throw (another error type is recorded as
/// INTERNAL with its description). A plain function instead of `#expect(throws:)` in closures: see the
/// note on closure discriminators in StarlineCoreTests.
func catchError(_ body: () throws -> Void) -> StarlineError? {
    do {
        try body()
        return nil
    } catch let error as StarlineError {
        return error
    } catch {
        return StarlineError(.internalError, "unexpected error type: \(error)")
    }
}

func contains(_ haystack: [UInt8], _ needle: String) -> Bool {
    let n = Array(needle.utf8)
    guard !n.isEmpty, haystack.count >= n.count else { return false }
    for i in 0...(haystack.count - n.count) where haystack[i] == n[0] {
        if Array(haystack[i..<(i + n.count)]) == n { return true }
    }
    return false
}

func copyFile(_ from: String, _ to: String) throws {
    let bytes = try #require(try AtomicFile.read(from))
    try AtomicFile.write(bytes, to: to, mode: 0o600)
}
