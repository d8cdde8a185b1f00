import Foundation
import StarlineCore
import StarlineTestSupport
import Testing

/// `-o FILE` of every tool that has one, as built: a FIFO gets the bytes and stays a FIFO, a device node stays a
/// device (as root, a rename over /dev/null replaced the machine's /dev/null with a regular file), and a link to a
/// regular file keeps the link while its target is replaced.
@Suite struct OutputPathTests {
    /// Runs `command -o TARGET` for each kind of target in a fresh directory; exit 0 when all held, else the
    /// number of the check that failed.
    static func script(_ command: String) -> String {
        """
        set -u
        mkfifo fifo
        cat fifo > got & reader=$!
        \(command) -o fifo > record.json || exit 10
        wait $reader
        [ -p fifo ] || exit 11
        [ -s got ] || exit 12
        if mknod null c 1 3 2> /dev/null; then
          \(command) -o null > /dev/null || exit 13
          [ -c null ] || exit 14
        elif [ "$(id -u)" -eq 0 ]; then exit 15
        fi
        echo old > real
        ln -s real link
        \(command) -o link > /dev/null || exit 16
        [ -L link ] || exit 17
        ! grep -qx old real || exit 18
        [ -s real ] || exit 19
        """
    }

    static func run(_ command: String, in dir: TemporaryDirectory, environment: [String: String] = [:]) throws -> ToolRun {
        let bin = URL(fileURLWithPath: Tools.path("sl-qr")).deletingLastPathComponent().path
        var env = environment
        env["PATH"] = bin + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
        env["STARLINE_HOME"] = dir.path + "/home"
        return try Tools.shell("cd '\(dir.path)' && " + script(command), environment: env)
    }

    @Test func qrEncodeWritesDevicesAndFIFOsInPlace() throws {
        let dir = TemporaryDirectory("output-qr")
        let run = try Self.run("sl-qr encode 'https://example.com/x'", in: dir)
        #expect(run.status == 0, "check \(run.status): \(run.stderrText)")
        let got = try #require(FileManager.default.contents(atPath: dir.path + "/got"))
        #expect(Array(got.prefix(4)) == [0x89, 0x50, 0x4E, 0x47], "the PNG went through the FIFO")
    }

    @Test func tasksExportWritesDevicesAndFIFOsInPlace() throws {
        let dir = TemporaryDirectory("output-tasks")
        #expect(
            try Tools.run("sl-tasks", ["add", "water the plants"], home: dir.path, environment: ["STARLINE_HOME": dir.path + "/home"])
                .status == 0)
        let run = try Self.run("sl-tasks export", in: dir)
        #expect(run.status == 0, "check \(run.status): \(run.stderrText)")
        #expect(try String(contentsOfFile: dir.path + "/got", encoding: .utf8).contains("water the plants"))
    }

    @Test func memoryExportAndGetWriteDevicesAndFIFOsInPlace() throws {
        let dir = TemporaryDirectory("output-memory")
        let runtime = TemporaryDirectory("output-memory-runtime")
        chmod(runtime.path, 0o700)
        let env = ["STARLINE_MEMORY_PASSPHRASE": "correct horse battery staple", "XDG_RUNTIME_DIR": runtime.path]
        let memory = { (args: [String]) throws -> ToolRun in
            try Tools.run("sl-memory", args, home: dir.path, environment: env.merging(["STARLINE_HOME": dir.path + "/home"]) { $1 })
        }
        #expect(try memory(["init"]).status == 0)
        let added = try memory(["add", "--title", "Router", "on the sticker"])
        let id = try #require(try added.json()["id"]?.stringValue)
        #expect(FileManager.default.createFile(atPath: dir.path + "/scan.txt", contents: Data("attached bytes\n".utf8)))
        #expect(try memory(["attach", id, dir.path + "/scan.txt"]).status == 0)

        let export = try Self.run("sl-memory export --share-code-fd 3 3> /dev/null", in: dir, environment: env)
        #expect(export.status == 0, "check \(export.status): \(export.stderrText)")
        #expect(try String(contentsOfFile: dir.path + "/got", encoding: .isoLatin1).hasPrefix("age-encryption.org/v1"))

        let getDir = TemporaryDirectory("output-memory-get")
        let get = try Self.run("STARLINE_HOME='\(dir.path)/home' sl-memory get \(id) scan.txt", in: getDir, environment: env)
        #expect(get.status == 0, "check \(get.status): \(get.stderrText)")
        #expect(try String(contentsOfFile: getDir.path + "/got", encoding: .utf8) == "attached bytes\n")

        // --verify reads the written file back: not possible for a FIFO, so it is refused before anything is written.
        let fifo = dir.path + "/verify-fifo"
        #expect(mkfifo(fifo, 0o600) == 0)
        let verify = try memory(["export", "--verify", "-o", fifo, "--share-code-fd", "2"])
        #expect(verify.status == 2, "\(verify.stderrText)")
        #expect(verify.errorCode == "USAGE")
    }
}
