import Foundation
import StarlineCore

/// A directory under the system temp dir, removed when released.
public final class TemporaryDirectory: @unchecked Sendable {
    public let path: String

    public init(_ prefix: String = "starline-test") {
        var template = Array((NSTemporaryDirectory() + "/\(prefix)-XXXXXX").utf8CString)
        let result = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        precondition(result != nil, "mkdtemp failed")
        path = String(cString: template.withUnsafeBufferPointer { $0.baseAddress! })
    }

    public func file(_ name: String) -> String { path + "/" + name }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}

/// What a finished tool run produced.
public struct ToolRun: Sendable {
    public var status: Int32
    public var stdout: [UInt8]
    public var stderr: [UInt8]

    public var stdoutText: String { String(decoding: stdout, as: UTF8.self) }
    public var stderrText: String { String(decoding: stderr, as: UTF8.self) }

    /// stdout as one JSON document.
    public func json() throws -> JSON { try JSON.parse(stdout) }

    /// stdout as JSON Lines.
    public func jsonLines() throws -> [JSON] {
        try stdoutText.split(separator: "\n").map { try JSON.parse(String($0)) }
    }

    /// The error object on the first line of stderr.
    public func error() throws -> JSON {
        let first = stderrText.split(separator: "\n", maxSplits: 1).first.map(String.init) ?? ""
        return try JSON.parse(first)
    }

    public var errorCode: String? { (try? error())?["error"]?["code"]?.stringValue }
}

/// Runs the built executables of this package.
public enum Tools {
    /// The build products directory: `STARLINE_BIN_DIR`, or the directory of the running test bundle,
    /// where SwiftPM also puts the package's executables.
    public static var binDirectory: String {
        if let dir = ProcessInfo.processInfo.environment["STARLINE_BIN_DIR"], !dir.isEmpty { return dir }
        var url = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        while url.path != "/" {
            url.deleteLastPathComponent()
            if FileManager.default.isExecutableFile(atPath: url.appendingPathComponent("sl-qr").path) { return url.path }
        }
        return FileManager.default.currentDirectoryPath + "/.build/debug"
    }

    public static func path(_ tool: String) -> String { binDirectory + "/" + tool }

    /// Runs `tool` with a clean environment (PATH, HOME and STARLINE_HOME in `home`, plus `environment`).
    /// Output goes through files so large outputs cannot deadlock the pipe.
    public static func run(_ tool: String, _ arguments: [String], stdin: [UInt8]? = nil, home: String,
                           environment: [String: String] = [:], workingDirectory: String? = nil) throws -> ToolRun {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool.hasPrefix("/") ? tool : path(tool))
        process.arguments = arguments
        var env = ["PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": home, "STARLINE_HOME": home + "/starline", "LANG": "C.UTF-8"]
        for (k, v) in environment { env[k] = v }
        process.environment = env
        if let workingDirectory { process.currentDirectoryURL = URL(fileURLWithPath: workingDirectory) }
        let scratch = TemporaryDirectory("starline-run")
        let outPath = scratch.file("stdout"), errPath = scratch.file("stderr"), inPath = scratch.file("stdin")
        _ = FileManager.default.createFile(atPath: outPath, contents: nil)
        _ = FileManager.default.createFile(atPath: errPath, contents: nil)
        _ = FileManager.default.createFile(atPath: inPath, contents: Data(stdin ?? []))
        let out = try FileHandle(forWritingTo: URL(fileURLWithPath: outPath))
        let err = try FileHandle(forWritingTo: URL(fileURLWithPath: errPath))
        let input = try FileHandle(forReadingFrom: URL(fileURLWithPath: inPath))
        process.standardOutput = out
        process.standardError = err
        process.standardInput = input
        try process.run()
        process.waitUntilExit()
        try out.close(); try err.close(); try input.close()
        return ToolRun(status: process.terminationStatus,
                       stdout: Array(try Data(contentsOf: URL(fileURLWithPath: outPath))),
                       stderr: Array(try Data(contentsOf: URL(fileURLWithPath: errPath))))
    }

    /// Runs a shell command line (for tools like zbarimg, bash, groff); returns status, stdout and stderr.
    public static func shell(_ command: String, stdin: [UInt8]? = nil, environment: [String: String] = [:]) throws -> ToolRun {
        let home = FileManager.default.temporaryDirectory.path
        var env = ProcessInfo.processInfo.environment
        for (k, v) in environment { env[k] = v }
        return try run("/bin/sh", ["-c", command], stdin: stdin, home: env["HOME"] ?? home, environment: env)
    }

    /// True when `program` is on PATH.
    public static func available(_ program: String) -> Bool {
        (try? shell("command -v \(program)"))?.status == 0
    }
}
