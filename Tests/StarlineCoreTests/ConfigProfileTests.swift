import Foundation
import StarlineTestSupport
import Testing
@testable import StarlineCore

@Suite struct ConfigProfileTests {
    func write(_ text: String) -> (TemporaryDirectory, String) {
        let dir = TemporaryDirectory()
        let path = dir.file("config.json")
        _ = FileManager.default.createFile(atPath: path, contents: Data(text.utf8))
        return (dir, path)
    }

    @Test func selectsNamedDefaultOrNoProfile() throws {
        let (dir, path) = write(
            #"{"defaultProfile":"dev","profiles":{"dev":{"chat":"http://127.0.0.1:1/chat","timeout":5},"prod":{"chat":"https://chat.thestarline.cn"}}}"#
        )
        #expect(try ConfigProfile.load(path: path, requested: nil)?.value("chat") == "http://127.0.0.1:1/chat")
        #expect(try ConfigProfile.load(path: path, requested: nil)?.value("timeout") == "5")
        #expect(try ConfigProfile.load(path: path, requested: "prod")?.value("chat") == "https://chat.thestarline.cn")
        #expect(try ConfigProfile.load(path: dir.file("missing.json"), requested: nil) == nil)
    }

    @Test func unknownProfileOrMalformedFileIsAConfigError() throws {
        let (dir1, path) = write(#"{"profiles":{"dev":{}}}"#)
        let e = try #require(throws: StarlineError.self) { try ConfigProfile.load(path: path, requested: "dve") }
        #expect(e.code == .config && e.exitStatus == .usage)
        #expect(e.message.contains("did you mean 'dev'?"))
        let (dir2, bad) = write("{not json")
        let m = try #require(throws: StarlineError.self) { try ConfigProfile.load(path: bad, requested: nil) }
        #expect(m.code == .config && m.message.contains(bad))
        withExtendedLifetime((dir1, dir2)) {}
    }
}
