#if canImport(Glibc)
import Glibc
#endif
import StarlineCore
import StarlineQR

/// Scanning a large image in a child process that is killed at the image's deadline: the time one image may take is bounded for real.
///
/// A zbar pass cannot be interrupted, and its cost is not linear in the pixels: tiled finder patterns
/// take 0.3 s at 1 megapixel, 1.3 s at 4 and 15 s at 16 in one pass, so a deadline checked between
/// attempts bounds nothing on a 100-megapixel image. Above `threshold` pixels the attempts run in
/// `sl-qr` itself, re-executed (`/proc/self/exe`) as a helper that reads the pixels on stdin and writes
/// what it found as one JSON line; at the deadline it gets SIGKILL. Below the threshold a pass takes a
/// fraction of a second even for such an image, and the ~3 ms a helper costs would dominate a batch.
enum IsolatedScan {
    /// Images with more pixels than this are scanned in a helper process.
    static let threshold = 2_000_000
    /// The argument that turns `sl-qr` into the helper (not a command: it is never typed).
    static let helperArgument = "--internal-scan-helper-v2"
    /// Set by `QRTool.main`: this process is sl-qr, so it can be its own helper. A tool run in-process (tests)
    /// scans in-process.
    nonisolated(unsafe) static var available = false
    /// The helper as the batch decoder's isolation: images above `threshold` pixels, `--image-timeout 0` bounded by
    /// the default timeout.
    static let isolation = QRBatchDecoder.Isolation(
        threshold: threshold, defaultDeadline: Double(DecodeCommand.defaultImageTimeout) / 1000,
        scan: { image, attempts, workBudget, deadline in try scan(image, attempts: attempts, workBudget: workBudget, deadline: deadline) })

    /// The attempts on `image` in a helper; at `deadline` (QRScanner.now() seconds) the helper is killed
    /// and the result says `timedOut`.
    static func scan(_ image: GrayImage, attempts: [QRScanner.Attempt], workBudget: Int, deadline: Double) throws -> ScanResult {
        // Close-on-exec from the start (`ChildChannels`): with -j N another worker starts its helper at any moment.
        guard let channels = ChildChannels() else { throw failure("socketpair", errno) }
        let (input, output) = (channels.input, channels.output)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        // dup2 clears close-on-exec on the copy; the originals close at exec.
        posix_spawn_file_actions_adddup2(&actions, input[0], STDIN_FILENO)
        posix_spawn_file_actions_adddup2(&actions, output[1], STDOUT_FILENO)
        var argv: [UnsafeMutablePointer<CChar>?] = [strdup("sl-qr"), strdup(helperArgument), nil]
        defer { for p in argv { free(p) } }
        var pid = pid_t()
        var environment = ChildEnvironment.entries(for: .sameTool)
        let spawned = posix_spawn(&pid, "/proc/self/exe", &actions, nil, &argv, &environment)
        close(input[0])
        close(output[1])
        guard spawned == 0 else { close(input[1]); close(output[0]); throw failure("posix_spawn", spawned) }

        // The pixels go in from a thread of their own, so that the deadline is watched while they do.
        let header = "\(image.width) \(image.height) \(getpid()) \(attempts.map(\.rawValue).joined(separator: ",")) \(workBudget)\n"
        let writer = input[1]
        let pixels = image.pixels
        let started = WorkerThreads.detach {
            if sendAll(writer, Array(header.utf8)) { _ = sendAll(writer, pixels) }
            close(writer)
        }
        if !started { close(writer) }

        let reply = readReply(output[0], deadline: deadline)
        close(output[0])
        if reply == nil { kill(pid, SIGKILL) }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        guard let reply else { return ScanResult(symbols: [], attempt: attempts.first?.rawValue ?? "none", timedOut: true) }
        return try parse(reply, status: status)
    }

    private static func sendAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let n = send(fd, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
                if n < 0 { if errno == EINTR { continue }; return false }
                offset += n
            }
            return true
        }
    }

    /// The helper's whole stdout, or nil when the deadline came first.
    private static func readReply(_ fd: Int32, deadline: Double) -> [UInt8]? {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let remaining = deadline - QRScanner.now()
            guard remaining > 0 else { return nil }
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, Int32(min(remaining * 1000 + 1, 60_000)))
            if ready < 0 && errno != EINTR { return bytes }
            guard ready > 0 else { continue }
            let n = read(fd, &chunk, chunk.count)
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return bytes }
            bytes += chunk[0..<n]
        }
    }

    private static func parse(_ reply: [UInt8], status: Int32) throws -> ScanResult {
        guard (status & 0x7F) == 0, (status >> 8) & 0xFF == 0, let json = try? JSON.parse(reply),
            let attempt = json["attempt"]?.stringValue, let list = json["symbols"]?.arrayValue, let tried = json["tried"]?.intValue
        else {
            throw StarlineError(.internalError, "the scan helper process failed (wait status \(status))")
        }
        let symbols = list.compactMap { item -> QRSymbol? in
            guard let bytes = item["bytes"]?.stringValue.flatMap(Base64.decode), let corners = item["corners"]?.arrayValue else {
                return nil
            }
            let points = corners.compactMap { c -> QRPoint? in
                guard let x = c[0]?.intValue, let y = c[1]?.intValue else { return nil }
                return QRPoint(x: Int(x), y: Int(y))
            }
            let designators = (item["designators"]?.arrayValue ?? []).compactMap { d -> QRSymbol.ECIDesignator? in
                guard let offset = d[0]?.intValue, let assignment = d[1]?.intValue else { return nil }
                return QRSymbol.ECIDesignator(offset: Int(offset), assignment: Int(assignment))
            }
            let part = item["sequence"].flatMap { p -> QRSymbol.SequencePart? in
                guard let index = p[0]?.intValue, let count = p[1]?.intValue else { return nil }
                return QRSymbol.SequencePart(index: Int(index), count: Int(count))
            }
            return QRSymbol(
                bytes: bytes, corners: points, orientation: item["orientation"]?.stringValue.flatMap(QROrientation.init) ?? .unknown,
                designators: designators, sequencePart: part)
        }
        return ScanResult(symbols: symbols, attempt: attempt, tried: Int(tried))
    }

    private static func failure(_ call: String, _ code: Int32) -> StarlineError {
        StarlineError(.internalError, "cannot start the scan helper: \(call): \(String(cString: strerror(code)))")
    }

    // MARK: The helper

    /// The helper's main: `WIDTH HEIGHT PARENT_PID ATTEMPTS WORK_BUDGET\n` and the pixels on stdin, one JSON line on stdout.
    static func serveHelper() -> Never {
        // It must not outlive the parent (a Ctrl-C there, a kill -9): the kernel kills it when the parent
        // goes, and a parent gone already before that was set is noticed here.
        Interrupts.endWithParent()
        guard let all = try? FileBytes.read(fd: STDIN_FILENO, name: "-"), let newline = all.firstIndex(of: 0x0A) else { _exit(2) }
        let words = String(decoding: all[..<newline], as: UTF8.self).split(separator: " ").map(String.init)
        guard words.count == 5, let width = Int(words[0]), let height = Int(words[1]), let parent = Int32(words[2]),
            let workBudget = Int(words[4]), workBudget > 0,
            getppid() == parent, width > 0, height > 0,
            width.multipliedReportingOverflow(by: height).partialValue == all.count - newline - 1,
            !width.multipliedReportingOverflow(by: height).overflow
        else { _exit(2) }
        let attempts = words[3].split(separator: ",").compactMap { QRScanner.Attempt(rawValue: String($0)) }
        guard let scanner = try? QRScanner() else { _exit(3) }
        let image = GrayImage(width: width, height: height, pixels: Array(all[(newline + 1)...]))
        // The image's whole ladder is a scan as in process, regions and all; a part of it (--image-timeout 0) is that alone.
        let result = scanner.scan(
            image, attempts: attempts, workBudget: workBudget, regions: attempts == QRScanner.ladder(for: image))
        let symbols: [JSON] = result.symbols.map { symbol in
            .object([
                ("bytes", .string(Base64.encode(symbol.bytes))),
                ("corners", .array(symbol.corners.map { .array([.int($0.x), .int($0.y)]) })),
                ("orientation", .string(symbol.orientation.rawValue)),
                ("designators", .array(symbol.designators.map { .array([.int($0.offset), .int($0.assignment)]) })),
                ("sequence", symbol.sequencePart.map { .array([.int($0.index), .int($0.count)]) } ?? .null)
            ])
        }
        let line = Array(
            (JSON.object([("attempt", .string(result.attempt)), ("tried", .int(result.tried)), ("symbols", .array(symbols))]).serialized()
                + "\n").utf8)
        _exit(line.withUnsafeBytes { FileBytes.write(fd: STDOUT_FILENO, $0) } ? 0 : 4)
    }
}
