import Foundation
import StarlineCore
import StarlineTestSupport
import Testing
@testable import StarlineCrypto

/// The real age (Debian package `age`, installed by scripts/bootstrap). age reads passphrases only from the
/// terminal, so `agepty.py` runs it under a pseudo-terminal and types the passphrase at each prompt.
enum AgeBinary {
    static let path = "/usr/bin/age"
    static var available: Bool { FileManager.default.isExecutableFile(atPath: path) }

    /// Runs `age ARGS…` with `passphrase` typed on its terminal.
    static func run(_ arguments: [String], passphrase: String) throws -> ToolRun {
        let scratch = TemporaryDirectory("age-interop-home")
        return try Tools.run("/usr/bin/python3", [cryptoTestsDirectory + "/agepty.py", passphrase, path] + arguments, home: scratch.path)
    }
}

@Suite("age interop with the age binary", .enabled(if: AgeBinary.available, "needs /usr/bin/age (scripts/bootstrap)"), .serialized)
struct AgeInteropTests {
    static let sizes = [0, 1, 65536, 65537, 1 << 20 | 12345]

    @Test("age -d opens what AgeEncryptor wrote", arguments: sizes)
    func ageDecryptsOurs(_ size: Int) throws {
        let dir = TemporaryDirectory("age-interop")
        let plaintext = Sodium.randomBytes(size)
        let passphrase = "share code \(size) ✓"
        let file = try AgeEncryptor.encrypt(plaintext, passphrase: secret(passphrase), workFactor: 10, armored: size == 65537)
        #expect(FileManager.default.createFile(atPath: dir.file("in.age"), contents: Data(file)))
        let run = try AgeBinary.run(["-d", "-o", dir.file("out"), dir.file("in.age")], passphrase: passphrase)
        #expect(run.status == 0, "\(run.stderrText)")
        // age opens the -o file lazily, at its first write: an empty plaintext leaves no file at all.
        #expect(Array(FileManager.default.contents(atPath: dir.file("out")) ?? Data()) == plaintext)
        #expect(FileManager.default.fileExists(atPath: dir.file("out")) == (size > 0))
        // And not with another passphrase.
        let wrong = try AgeBinary.run(["-d", "-o", dir.file("wrong"), dir.file("in.age")], passphrase: passphrase + "!")
        #expect(wrong.status != 0)
        #expect(wrong.stderrText.contains("incorrect passphrase"))
    }

    @Test("age -d opens a file at the default work factor 18, armored")
    func defaultWorkFactor() throws {
        let dir = TemporaryDirectory("age-interop")
        let plaintext = Sodium.randomBytes(70_000)
        let file = try AgeEncryptor.encrypt(plaintext, passphrase: secret("correct horse battery staple"), armored: true)
        #expect(
            String(decoding: Base64.decode(String(decoding: file, as: UTF8.self).split(separator: "\n")[1...2].joined())!, as: UTF8.self)
                .contains(" 18\n"))
        #expect(FileManager.default.createFile(atPath: dir.file("in.age"), contents: Data(file)))
        let run = try AgeBinary.run(["-d", "-o", dir.file("out"), dir.file("in.age")], passphrase: "correct horse battery staple")
        #expect(run.status == 0, "\(run.stderrText)")
        #expect(FileManager.default.contents(atPath: dir.file("out")).map(Array.init) == plaintext)
    }

    @Test("AgeDecryptor opens what age -p wrote (binary and armored)", arguments: [false, true])
    func weDecryptAge(_ armored: Bool) throws {
        let dir = TemporaryDirectory("age-interop")
        let plaintext = Sodium.randomBytes(3 * 65536 + 99)
        #expect(FileManager.default.createFile(atPath: dir.file("plain"), contents: Data(plaintext)))
        let run = try AgeBinary.run(
            ["-p"] + (armored ? ["-a"] : []) + ["-o", dir.file("out.age"), dir.file("plain")], passphrase: "hunter2 hunter2")
        #expect(run.status == 0, "\(run.stderrText)")
        let file = Array(FileManager.default.contents(atPath: dir.file("out.age")) ?? Data())
        let report = try AgeDecryptor(passphrase: secret("hunter2 hunter2")).decrypt(from: .bytes(file), to: .discarding)
        #expect(report.workFactor == 18)
        #expect(report.armored == armored)
        #expect(try AgeDecryptor(passphrase: secret("hunter2 hunter2")).decrypt(file) == plaintext)
        #expect(thrown { try AgeDecryptor(passphrase: secret("hunter2")).decrypt(file) }?.code == .ageWrongPassphrase)
    }

    @Test("age, like us, refuses work factor 23 at once")
    func ageRefusesHighWorkFactor() throws {
        let dir = TemporaryDirectory("age-interop")
        let file = replacing(try AgeEncryptor.encrypt([1, 2, 3], passphrase: secret("pw"), workFactor: 10), " 10\n", with: " 23\n")
        #expect(FileManager.default.createFile(atPath: dir.file("in.age"), contents: Data(file)))
        let run = try AgeBinary.run(["-d", "-o", dir.file("out"), dir.file("in.age")], passphrase: "pw")
        #expect(run.status != 0)
        #expect(run.stderrText.contains("work factor too large"))
        #expect(thrown { try AgeDecryptor(passphrase: secret("pw")).decrypt(file) }?.code == .ageWorkFactorTooHigh)
    }
}
