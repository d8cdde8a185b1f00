#if canImport(Glibc)
import Glibc
#endif
import StarlineCore

/// Opening the sign-in page in the user's browser (`$BROWSER`, else `xdg-open`).
extension LoginTool {
    static func canOpenBrowser(_ environment: Environment) -> Bool {
        // A $BROWSER with at least one command (not blank, not only colons); otherwise xdg-open on a display.
        if let browser = environment["BROWSER"], !browser.trimmingWhitespace().isEmpty {
            return !browserCommands("", browser: browser).isEmpty
        }
        let display = (environment["DISPLAY"] ?? "") + (environment["WAYLAND_DISPLAY"] ?? "")
        return !display.isEmpty && access("/usr/bin/xdg-open", X_OK) == 0
    }

    /// Opens `url` (a file: URL of a `BrowserHandoffPage`, never a URL carrying a flow's secrets) with `$BROWSER`, else `xdg-open`, without a shell. `$BROWSER` follows the convention other
    /// tools (Python's webbrowser, git, man) share: a colon-separated list of commands, tried in order until one
    /// starts; a command may carry (quoted) arguments, and `%s` in them is replaced by the URL (otherwise the URL is the
    /// last argument, as one word). The browser's stdout goes to our stderr, so it cannot corrupt the JSON result.
    static func launchBrowser(_ url: String, _ environment: Environment) -> pid_t? {
        let commands = browserCommands(url, browser: environment["BROWSER"])
        for command in commands { if let pid = launch(command) { return pid } }
        return nil
    }

    /// Waits, on a thread of its own, for the browser command to end, and calls `failed(status)` when it exits
    /// non-zero or dies (`BROWSER=false`): the sign-in then goes on, but the user learns they must open the
    /// URL themselves. xdg-open and most browsers' launchers exit at once after handing the URL over.
    static func watchBrowser(_ pid: pid_t, failed: @escaping @Sendable (Int32) -> Void) {
        WorkerThreads.detach {
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 { if errno != EINTR { return } }
            // WIFEXITED/WEXITSTATUS are macros: decode the wait status by hand.
            let code: Int32 = (status & 0x7F) == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
            if code != 0 { failed(code) }
        }
    }

    /// The commands `launchBrowser` tries, each as its argument vector.
    static func browserCommands(_ url: String, browser: String?) -> [[String]] {
        guard let browser, !browser.trimmingWhitespace().isEmpty else { return [["xdg-open", url]] }
        return browser.split(separator: ":").compactMap { entry -> [String]? in
            let words = shellWords(String(entry))
            guard !words.isEmpty else { return nil }
            let substituted = words.map { $0.replacingAll("%s", with: url) }
            return words.contains(where: { $0.contains("%s") }) ? substituted : words + [url]
        }
    }

    /// Splits a command into words at spaces and tabs, honouring '…' and "…" quoting and backslash escapes
    /// (outside single quotes; inside double quotes a backslash escapes any character) — a simplified
    /// `shlex.split`, which Python's webbrowser uses for $BROWSER; no expansions.
    static func shellWords(_ command: String) -> [String] {
        var words: [String] = []
        var word = ""
        var inWord = false
        var quote: Character?
        var escaped = false
        for c in command {
            if escaped { word.append(c); escaped = false; continue }
            if let q = quote {
                if c == q { quote = nil } else if c == "\\" && q == "\"" { escaped = true } else { word.append(c) }
                continue
            }
            switch c {
            case " ", "\t":
                if inWord { words.append(word); word = ""; inWord = false }
            case "'", "\"": quote = c; inWord = true
            case "\\": escaped = true; inWord = true
            default: word.append(c); inWord = true
            }
        }
        if inWord { words.append(word) }
        return words
    }

    private static func launch(_ argv: [String]) -> pid_t? {
        var pid = pid_t()
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, STDERR_FILENO, STDOUT_FILENO)
        var cArgs: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) } + [nil]
        defer { for p in cArgs { free(p) } }
        // The browser gets our environment without STARLINE_* (STARLINE_TOKEN, a passphrase): nothing of ours
        // is its business, and a process's environment is readable by whoever can ptrace it.
        var environment = ChildEnvironment.entries(for: .otherProgram)
        return posix_spawnp(&pid, argv[0], &actions, nil, &cArgs, &environment) == 0 ? pid : nil
    }
}
