import Foundation
import StarlineTestSupport
import Testing

/// The house rules of the tree's own text: comments, test names, docs, scripts and benchmark notes speak of
/// the product — requirement ids (S1–S17, W1–W9) and behaviour — never of the tracker (its numbers and
/// numbered points) or of when and in which sitting work was done; nothing in the tree points at a
/// specification outside it; and every requirement id cited anywhere is one that docs/requirements.md defines.
@Suite struct HouseRulesTests {
    /// One line of the tree's text that breaks a rule, for the failure message.
    struct Finding: CustomStringConvertible {
        var path: String
        var line: Int
        var text: String
        var description: String { "\(path):\(line): \(text.trimmingCharacters(in: .whitespaces).prefix(160))" }
    }

    /// Where the product's own text lives (relative to the repository root).
    static let roots = ["Sources", "Tests", "docs", "bench", "scripts", "fuzz/Sources", "man", "completions"]
    static let files = ["README.md", "Makefile", "Package.swift", "fuzz/Package.swift"]
    /// Data, not prose: the age test vectors copied in unchanged, images, fuzz corpora, build products.
    static let skippedDirectories: Set<String> = [".build", "age-testkit", "Photos", "corpus"]
    /// Data quoted from other projects: the real-photograph manifest names their files and test lines as they
    /// are, numbered directory names of their bug reports included.
    static let skippedFiles: Set<String> = ["bench/qr-corpus/real-photos/manifest.tsv"]

    /// Every text file of the product as (path relative to the root, lines). Binary files (a NUL byte, or not
    /// UTF-8) are data and skipped.
    static let texts: [(path: String, lines: [String])] = {
        var paths = files.filter { FileManager.default.fileExists(atPath: repositoryRoot + "/" + $0) }
        for root in roots {
            guard let walker = FileManager.default.enumerator(atPath: repositoryRoot + "/" + root) else { continue }
            while let relative = walker.nextObject() as? String {
                let name = (relative as NSString).lastPathComponent
                if skippedDirectories.contains(name) {
                    walker.skipDescendants()
                    continue
                }
                var isDirectory: ObjCBool = false
                let path = root + "/" + relative
                if FileManager.default.fileExists(atPath: repositoryRoot + "/" + path, isDirectory: &isDirectory),
                    !isDirectory.boolValue, !skippedFiles.contains(path)
                {
                    paths.append(path)
                }
            }
        }
        return paths.sorted().compactMap { path in
            guard let data = FileManager.default.contents(atPath: repositoryRoot + "/" + path),
                data.count <= 8 << 20, !data.contains(0), let text = String(data: data, encoding: .utf8)
            else { return nil }
            return (path, text.components(separatedBy: "\n"))
        }
    }()

    static func regex(_ pattern: String, caseInsensitive: Bool = true) -> NSRegularExpression {
        try! NSRegularExpression(pattern: pattern, options: caseInsensitive ? [.caseInsensitive] : [])
    }

    /// The lines of the product's text that match any of `patterns`.
    static func findings(_ patterns: [NSRegularExpression]) -> [Finding] {
        var found: [Finding] = []
        for (path, lines) in texts {
            for (index, line) in lines.enumerated() {
                let range = NSRange(line.startIndex..., in: line)
                if patterns.contains(where: { $0.firstMatch(in: line, range: range) != nil }) {
                    found.append(Finding(path: path, line: index + 1, text: line))
                }
            }
        }
        return found
    }

    @Test func theTreeWasFound() {
        #expect(Self.texts.contains { $0.path == "docs/requirements.md" })
        #expect(Self.texts.contains { $0.path.hasPrefix("Sources/StarlineCore/") })
        #expect(Self.texts.count > 300, "only \(Self.texts.count) text files found under \(repositoryRoot)")
    }

    @Test func noCommentTestNameOrDocCitesATrackerNumberOrAWorkSession() {
        let patterns = [
            Self.regex(#"\bissues? #?[0-9]"#),  // a tracker number, one or several
            Self.regex(#"\bissue-[0-9]"#),
            Self.regex(#"\b(items?|findings?) [0-9]+\b"#),  // a numbered point of a tracker entry
            Self.regex(#"(?<![&\w])#[0-9]{1,3}\b"#),  // a bare number sign (not an HTML entity or colour)
            Self.regex(#"\b(first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth) session\b"#),
            Self.regex(#"\bwork sessions?\b"#)
        ]
        let found = Self.findings(patterns)
        #expect(
            found.isEmpty,
            """
            cite the requirement (S1–S17, W1–W9) or say what the code does and why, not the tracker or a work \
            session; bench/RESULTS.md dates its sections by date and commit:
            \(found.map(\.description).joined(separator: "\n"))
            """)
    }

    /// Every child of the tests (and of the product) is spawned with posix_spawn, descriptors from 3 closed,
    /// and reaped with waitpid: Foundation's `Process` tells a child's end through a socket that children
    /// spawned meanwhile inherit, so its `waitUntilExit` waited for an unrelated server and the test run hung.
    @Test func noFoundationProcessSpawnsAChild() {
        let found = Self.findings([Self.regex(#"(?<![\w.])Process\(\)|waitUntilExit\(|\bPipe\(\)"#, caseInsensitive: false)])
            .filter { $0.path.hasSuffix(".swift") && !$0.path.hasSuffix("HouseRulesTests.swift") }
        #expect(
            found.isEmpty,
            "spawn with Tools.spawn / Tools.runInstalled (tests) or posix_spawn (product):\n\(found.map(\.description).joined(separator: "\n"))"
        )
    }

    /// W9: network and persistence meet only in the domain library. sl-chat's commands never hold the chat store
    /// (ChatSession keeps it private and hands out the outbox and the domain types built over it), and the
    /// session and revoke commands never open a store of their own: the one file allowed to name the store is
    /// the one that builds the domain types.
    @Test func w9OnlyTheSessionNamesTheChatStoreInTheCommands() {
        let found = Self.findings([Self.regex(#"\bChatStore\b|\.store\b"#, caseInsensitive: false)])
            .filter { $0.path.hasPrefix("Sources/ChatCommands/") && $0.path != "Sources/ChatCommands/ChatSession.swift" }
            .filter { !$0.text.trimmingCharacters(in: .whitespaces).hasPrefix("//") }
        #expect(found.isEmpty, "reach the store through ChatSession's domain types:\n\(found.map(\.description).joined(separator: "\n"))")
        let session = Self.texts.first { $0.path == "Sources/ChatCommands/ChatSession.swift" }?.lines ?? []
        #expect(session.contains { $0.contains("private let store: ChatStore") }, "ChatSession keeps the store private")
    }

    @Test func nothingPointsOutsideTheTree() {
        let patterns = [
            Self.regex(#"\bDESIGN\b"#, caseInsensitive: false),  // the outside specification, by any of its names
            Self.regex(#"\.\./shared\b"#),
            Self.regex(#"/work[/]shared"#),
            Self.regex(#"\bseeds[/]"#)
        ]
        let found = Self.findings(patterns)
        #expect(
            found.isEmpty,
            """
            point at the tree's own docs instead (docs/requirements.md, the README's sections, docs/formats.md, \
            docs/openapi.yaml, docs/architecture.md):
            \(found.map(\.description).joined(separator: "\n"))
            """)
    }

    @Test func everyCitedRequirementIsDefinedInDocsRequirements() throws {
        let document = try String(contentsOfFile: repositoryRoot + "/docs/requirements.md", encoding: .utf8)
        let heading = Self.regex(#"^### ([SW][0-9]{1,2}) — \S"#, caseInsensitive: false)
        let defined = Set(
            document.components(separatedBy: "\n").compactMap { line -> String? in
                guard let match = heading.firstMatch(in: line, range: NSRange(line.startIndex..., in: line)),
                    let id = Range(match.range(at: 1), in: line)
                else { return nil }
                return String(line[id])
            })
        let expected = Set((1...17).map { "S\($0)" } + (1...9).map { "W\($0)" })
        #expect(defined == expected, "docs/requirements.md defines \(defined.sorted()), not S1–S17 and W1–W9")

        // An id standing on its own: "(S13)", "W4–W8", "S14/W8" — not PKCE's "S256", not a word like "W3C".
        let cited = Self.regex(#"(?<![A-Za-z0-9_])([SW][0-9]{1,2})(?![A-Za-z0-9_])"#, caseInsensitive: false)
        var undefined: [Finding] = []
        for (path, lines) in Self.texts {
            for (index, line) in lines.enumerated() {
                for match in cited.matches(in: line, range: NSRange(line.startIndex..., in: line)) {
                    guard let id = Range(match.range(at: 1), in: line), !expected.contains(String(line[id])) else { continue }
                    undefined.append(Finding(path: path, line: index + 1, text: "\(line[id]) in: \(line)"))
                }
            }
        }
        #expect(
            undefined.isEmpty,
            """
            a requirement id that docs/requirements.md does not define:
            \(undefined.map(\.description).joined(separator: "\n"))
            """)
    }
}
