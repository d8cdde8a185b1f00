import Foundation
import Glibc
import StarlineCore
import StarlinePlatform
import Synchronization
import StarlineTestSupport
import Testing
import StarlineCrypto

@Suite("DeviceKey")
final class DeviceKeyTests: Sendable {
    let fixture: StoreFixture
    init() throws { fixture = try StoreFixture() }

    var keyPath: String { fixture.state + "/device.key" }
    var lockPath: String { fixture.state + "/device-key.lock" }

    @Test("S3 the device key is created 0600 once even with 8 threads racing (same key bytes afterwards)")
    func racingCreation() throws {
        let keyPath = self.keyPath, lockPath = self.lockPath
        let results = Locked<[[UInt8]]>([])
        let failures = Locked<[String]>([])
        let threads = (0..<8).map { _ in
            startThread {
                do {
                    let key = try DeviceKey.loadOrCreate(path: keyPath, lockPath: lockPath)
                    results.withLock { $0.append(key.copyBytes()) }
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
        }
        for thread in threads { thread.wait() }
        #expect(failures.withLock { $0 } == [])
        let keys = results.withLock { $0 }
        #expect(keys.count == 8)
        #expect(Set(keys).count == 1)
        #expect(keys.first?.count == 32)
        #expect(try AtomicFile.read(keyPath) == keys.first)
        #expect(permissionBits(keyPath) == 0o600)
        // No temporary file left behind.
        #expect(try FileManager.default.contentsOfDirectory(atPath: fixture.state).sorted() == ["device-key.lock", "device.key"])
        // Loading again gives the same key.
        #expect(try DeviceKey.load(path: keyPath)?.copyBytes() == keys.first)
    }

    @Test("S3 8 threads saving through their own SessionStore share one device key and read each other's records")
    func racingStores() throws {
        let fixture = self.fixture
        let keys = (0..<8).map { StoreKey(apiOrigin: "https://account.thestarline.cn", appId: "app\($0)", service: "default") }
        let failures = Locked<[String]>([])
        let threads = keys.enumerated().map { i, k in
            startThread {
                do {
                    try fixture.store(key: k).withState { try $0.saveCandidate(sampleCandidate(token: "tok-\(i)", sessionId: "s-\(i)")) }
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
        }
        for thread in threads { thread.wait() }
        #expect(failures.withLock { $0 } == [])
        #expect(permissionBits(fixture.state + "/device.key") == 0o600)
        for (i, k) in keys.enumerated() {
            #expect(try fixture.store(key: k).withState { try $0.candidate()?.accessToken } == "tok-\(i)")
        }
        let entries = try FileManager.default.contentsOfDirectory(atPath: fixture.state)
        #expect(!entries.contains { $0.contains(".tmp-") }, "\(entries)")
    }

    @Test(
        """
        load: a missing key is nil; a short or long one, or a directory, is STORAGE_ERROR; 0644 is \
        INSECURE_PERMISSIONS
        """)
    func loadChecks() throws {
        #expect(try DeviceKey.load(path: keyPath) == nil)

        for count in [0, 31, 33, 64] {
            try AtomicFile.write([UInt8](repeating: 7, count: count), to: keyPath)
            let error = catchError { _ = try DeviceKey.load(path: self.keyPath) }
            #expect(error?.code == .storage, "\(count) bytes")
            #expect(error?.message.hasPrefix("cannot open the session store: device key \(keyPath) is damaged") == true)
        }
        // loadOrCreate never replaces a damaged key (it may still seal records someone wants back).
        #expect(catchError { _ = try DeviceKey.loadOrCreate(path: self.keyPath, lockPath: self.lockPath) }?.code == .storage)
        #expect(try AtomicFile.read(keyPath)?.count == 64)

        try AtomicFile.write([UInt8](repeating: 7, count: 32), to: keyPath, mode: 0o644)
        let insecure = catchError { _ = try DeviceKey.load(path: self.keyPath) }
        #expect(insecure?.code == .insecurePermissions)
        #expect(insecure?.exitStatus == .storage)

        #expect(unlink(keyPath) == 0)
        #expect(mkdir(keyPath, 0o700) == 0)
        let directory = catchError { _ = try DeviceKey.load(path: self.keyPath) }
        #expect(directory?.code == .storage)
        #expect(directory?.message == "cannot open the session store: \(keyPath) is not a regular file")
    }

    @Test("S3 the sealing key depends on both the device key and the machine id")
    func sealingKeyDerivation() {
        let device = SecretBytes(copying: [UInt8](repeating: 1, count: 32))
        let otherDevice = SecretBytes(copying: [UInt8](repeating: 2, count: 32))
        let a = DeviceKey.sealingKey(deviceKey: device, machineId: Array("machine-a".utf8))
        #expect(a.count == 32)
        #expect(a == DeviceKey.sealingKey(deviceKey: device, machineId: Array("machine-a".utf8)))
        #expect(a != DeviceKey.sealingKey(deviceKey: device, machineId: Array("machine-b".utf8)))
        #expect(a != DeviceKey.sealingKey(deviceKey: otherDevice, machineId: Array("machine-a".utf8)))
    }

    @Test("machine id: the override file's content trimmed; without one a generated host id, created once under the lock")
    func machineIdentity() throws {
        let overrideFile = fixture.dir + "/mid"
        try AtomicFile.write(Array("  abc123\n\n".utf8), to: overrideFile)
        let env = Environment(["STARLINE_MACHINE_ID_FILE": overrideFile])
        let id = try MachineIdentity.resolve(environment: env, stateDirectory: fixture.state, lockPath: fixture.state + "/h.lock")
        #expect(id.source == overrideFile)
        #expect(id.bytes == Array("abc123".utf8))
        #expect(MachineIdentity.describeSource(environment: env, stateDirectory: fixture.state) == overrideFile)

        // Generated: 8 racing threads agree on one host id.
        let missingEnv = Environment(["STARLINE_MACHINE_ID_FILE": fixture.dir + "/none"])
        let state = fixture.state
        let ids = Locked<[[UInt8]]>([])
        let threads = (0..<8).map { _ in
            startThread {
                if let m = try? MachineIdentity.resolve(environment: missingEnv, stateDirectory: state, lockPath: state + "/h.lock") {
                    ids.withLock { $0.append(m.bytes) }
                }
            }
        }
        for thread in threads { thread.wait() }
        let all = ids.withLock { $0 }
        #expect(all.count == 8)
        #expect(Set(all).count == 1)
        #expect(all.first?.count == 32)
        #expect(try AtomicFile.read(state + "/host-id") == all.first.map { $0 + [10] })
        #expect(permissionBits(state + "/host-id") == 0o600)
        #expect(MachineIdentity.describeSource(environment: missingEnv, stateDirectory: state) == state + "/host-id (generated)")
    }

    @Test("StorageFaults parses the comma list and ignores blanks")
    func storageFaultsParsing() throws {
        #expect(try StorageFaults(environment: Environment([:])).kinds == [])
        #expect(try StorageFaults(environment: Environment(["STARLINE_TEST_STORAGE_FAULT": ""])).kinds == [])
        #expect(
            try StorageFaults(environment: Environment(["STARLINE_TEST_STORAGE_FAULT": "read,write, delete,,marker"])).kinds
                == [.read, .write, .delete, .marker])
        #expect(catchError { _ = try StorageFaults(environment: Environment(["STARLINE_TEST_STORAGE_FAULT": "all"])) }?.code == .usage)
    }
}
