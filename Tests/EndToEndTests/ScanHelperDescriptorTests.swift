import Foundation
import StarlineTestSupport
import Testing

/// `sl-qr decode -j N` scans large images in helper processes, several at once: each helper must hold its own
/// input and output and nothing of another's.
@Suite struct ScanHelperDescriptorTests {
    /// A process's open descriptors, `fd -> target` (`pipe:[inode]`, `socket:[inode]`, a path).
    static func descriptors(_ pid: Int32) -> [Int: String] {
        let directory = "/proc/\(pid)/fd"
        var found: [Int: String] = [:]
        for name in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] {
            guard let fd = Int(name) else { continue }
            var buffer = [CChar](repeating: 0, count: 256)
            let n = readlink("\(directory)/\(name)", &buffer, buffer.count - 1)
            if n > 0 { found[fd] = String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self) }
        }
        return found
    }

    /// The scan helpers sl-qr runs now: children of any of its threads (each worker starts its own).
    static func helpers(of pid: Int32) -> [Int32] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return tasks.compactMap(Int32.init).flatMap { task -> [Int32] in
            let text = (try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/children", encoding: .utf8)) ?? ""
            return text.split(separator: " ").compactMap { Int32($0) }
        }.filter { ChildEnvironmentTests.cmdline($0).contains("--internal-scan-helper") }
    }

    /// A helper started while another worker's helper ran inherited that worker's descriptors (they lacked
    /// close-on-exec): the end of the other's pixel input, so that helper read its stdin forever, and both waited
    /// for the image deadline (30 s) and reported `timedOut` for images they read in a second alone.
    @Test("two scan helpers at once: neither inherits the other's pipe or socket")
    func concurrentScanHelpersInheritNoOtherChannel() throws {
        let home = TemporaryDirectory("scan-helper-fds")
        let first = try DecodeDeadlineTests.tiledFinders(tiles: 250, in: home)  // a zbar pass of ~15 s: time to look
        let second = home.file("second.pgm")
        try FileManager.default.copyItem(atPath: first, toPath: second)
        let decode = try Tools.spawn("sl-qr", ["decode", "-j", "2", "--image-timeout", "60000", first, second], home: home.path)
        defer { decode.signal(SIGKILL); _ = decode.wait() }
        var helpers: [Int32] = []
        let deadline = Date().addingTimeInterval(20)
        while helpers.count < 2, Date() < deadline {
            helpers = Self.helpers(of: decode.pid)
            if helpers.count < 2 { usleep(20_000) }
        }
        try #require(helpers.count == 2, "two scan helpers at once (saw \(helpers))")
        // Both have their pixels (16 MB each) by now: a helper reads its whole input before it scans.
        usleep(500_000)
        let tables = helpers.map(Self.descriptors)
        for (index, table) in tables.enumerated() {
            let other = tables[1 - index]
            // A helper's channels are its stdin and stdout, both sockets: any other socket is another helper's (sl-qr's
            // end of it), and so is the other helper's stdout itself. (Pipes are not counted: make's jobserver and the
            // like reach every process of a test run.)
            let held = table.filter { fd, target in fd > 2 && (target == other[1] || target.hasPrefix("socket:")) }
            #expect(
                held.isEmpty,
                "helper \(helpers[index]) holds another helper's channel: \(held) (its stdin \(table[0] ?? "-"), stdout \(table[1] ?? "-"))"
            )
        }
    }
}
