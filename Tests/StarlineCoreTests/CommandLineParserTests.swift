import Testing
@testable import StarlineCore

/// A small tool exercising every kind of spec element.
let sampleTool = ToolSpec(
    name: "sl-sample",
    root: CommandSpec(
        "sl-sample", abstract: "a sample tool",
        subcommands: [
            CommandSpec(
                "make", abstract: "Make things",
                options: [
                    .value("format", short: "f", "FORMAT", help: "Output format.", default: "png", choices: ["png", "svg"]),
                    .value("size", short: "s", "PX", help: "Size.", default: "4"),
                    .value("tag", short: "t", "TAG", help: "A tag.", repeatable: true),
                    .flag("verify", short: "v", help: "Verify."),
                    .flag("quiet", short: "q", help: "Quiet.")
                ], arguments: [ArgumentSpec("TEXT", help: "Text.")],
                examples: [Example("sl-sample make -f svg hi", "Make an SVG.")]),
            CommandSpec(
                "read", abstract: "Read files",
                arguments: [ArgumentSpec("FILE", help: "Files.", variadic: true, completion: .file(extensions: ["png"]))]),
            CommandSpec(
                "group", abstract: "A group",
                subcommands: [
                    CommandSpec(
                        "leaf", abstract: "A leaf", options: [.flag("deep", help: "Deep.")],
                        arguments: [ArgumentSpec("X", help: "x", optional: true)])
                ])
        ]),
    globalOptions: StandardOptions.output + [StandardOptions.chat],
    environment: StandardOptions.environment,
    files: [StandardOptions.configFile])

@Suite struct CommandLineParserTests {
    let parser = CommandLineParser(sampleTool)

    func usageError(_ words: [String]) -> StarlineError? {
        do { _ = try parser.parse(words); return nil } catch let e as StarlineError { return e } catch { return nil }
    }

    /// Reading an option the command does not declare (another command's, or a typo) is INTERNAL in every build:
    /// as "not given" it would silently drop what the user asked for. The old check was an assert (a trap in
    /// debug, nothing in release).
    @Test func anUndeclaredOptionReadIsAnInternalErrorNotATrap() throws {
        let leaf = try parser.parse(["group", "leaf"])
        let formatOfMake = Option<String>.string("format", "FORMAT", help: "Output format.", default: "png")
        var thrown: StarlineError?
        do { _ = try leaf[formatOfMake] } catch let e as StarlineError { thrown = e }
        #expect(thrown?.code == .internalError)
        #expect(thrown?.message == "--format is not an option of 'sl-sample group leaf'")
        let make = try parser.parse(["make", "-f", "svg", "hi"])
        #expect(try make[formatOfMake] == "svg")
    }

    @Test func longOptionsWithEqualsOrSeparateValue() throws {
        let a = try parser.parse(["make", "--format=svg", "--size", "8", "hello"])
        #expect(a.path == ["make"])
        #expect(a.value("format") == "svg")
        #expect(a.value("size") == "8")
        #expect(a.positionals == ["hello"])
    }

    @Test func shortClustersAndAttachedValues() throws {
        let a = try parser.parse(["make", "-vqs12", "x"])
        #expect(a.flag("verify") && a.flag("quiet"))
        #expect(a.value("size") == "12")
        let b = try parser.parse(["make", "-qf", "svg", "x"])
        #expect(b.value("format") == "svg" && b.flag("quiet"))
    }

    @Test func optionsAfterPositionalsAndGlobalsBeforeTheCommand() throws {
        let a = try parser.parse(["--compact", "make", "hello", "--verify", "--pretty"])
        #expect(a.flag("compact") && a.flag("pretty") && a.flag("verify"))
        #expect(a.positionals == ["hello"])
    }

    @Test func doubleDashEndsOptionsAndDashIsPositional() throws {
        let a = try parser.parse(["make", "--", "--verify"])
        #expect(a.positionals == ["--verify"])
        #expect(!a.flag("verify"))
        let b = try parser.parse(["make", "-"])
        #expect(b.positionals == ["-"])
        let c = try parser.parse(["read", "a", "-", "--", "-b"])
        #expect(c.positionals == ["a", "-", "-b"])
    }

    @Test func valueMayStartWithADash() throws {
        let a = try parser.parse(["make", "--size", "-3", "x"])
        #expect(a.value("size") == "-3")
        #expect(throws: StarlineError.self) { try a.int("size", in: 1...10) }
    }

    @Test func repeatableOptionsCollectEveryValue() throws {
        let a = try parser.parse(["make", "-t", "a", "--tag=b", "x", "-tc"])
        #expect(a.values("tag") == ["a", "b", "c"])
    }

    @Test func unknownOptionSuggestsTheNearest() throws {
        let e = try #require(usageError(["make", "--fromat", "svg", "x"]))
        #expect(e.code == .usage)
        #expect(e.exitStatus.rawValue == 2)
        #expect(e.message.contains("--fromat"))
        #expect(e.message.contains("did you mean --format?"))
        let prefix = try #require(usageError(["make", "--verif", "x"]))
        #expect(prefix.message.contains("--verify"))
    }

    @Test func unknownCommandSuggestsTheNearest() throws {
        let e = try #require(usageError(["mkae", "x"]))
        #expect(e.message.contains("'mkae'") && e.message.contains("did you mean 'make'?"))
    }

    @Test func optionOfAnotherCommandIsNamed() throws {
        let e = try #require(usageError(["--verify", "make", "x"]))
        #expect(e.message.contains("sl-sample make"))
    }

    @Test func badChoiceNamesChoicesAndSuggests() throws {
        let e = try #require(usageError(["make", "-f", "pgn", "x"]))
        #expect(e.message.contains("'pgn'") && e.message.contains("did you mean 'png'?") && e.message.contains("png, svg"))
    }

    @Test func missingValueMissingArgumentExtraArgument() throws {
        #expect(try #require(usageError(["make", "x", "--size"])).message.contains("needs a value"))
        #expect(try #require(usageError(["make"])).message.contains("missing argument TEXT"))
        #expect(try #require(usageError(["make", "a", "b"])).message.contains("unexpected argument 'b'"))
        #expect(try #require(usageError(["make", "--verify=yes", "x"])).message.contains("takes no value"))
        #expect(try #require(usageError([])).message.contains("missing command"))
        #expect(try #require(usageError(["-z"])).message.contains("-z"))
    }

    @Test func helpAndVersionSkipArgumentChecks() throws {
        #expect(try parser.parse(["make", "--help"]).flag("help"))
        #expect(try parser.parse(["--version"]).flag("version"))
        #expect(try parser.parse(["group", "-h"]).path == ["group"])
    }

    @Test func nestedSubcommands() throws {
        let a = try parser.parse(["group", "leaf", "--deep"])
        #expect(a.path == ["group", "leaf"])
        #expect(a.flag("deep"))
    }

    @Test func precedenceFlagThenEnvironmentThenProfileThenDefault() throws {
        var a = try parser.parse(["make", "x"])
        #expect(a.resolved("chat")?.source == .defaultValue)
        a.profile = ConfigProfile(name: "p", settings: ["chat": "https://profile.example"])
        #expect(a.resolved("chat")?.value == "https://profile.example")
        #expect(a.resolved("chat")?.source == .profile)
        a.environment = ["STARLINE_CHAT_BASE_URL": "https://env.example"]
        #expect(a.resolved("chat")?.value == "https://env.example")
        var b = try parser.parse(["make", "x", "--chat", "https://flag.example"])
        b.environment = a.environment
        b.profile = a.profile
        #expect(b.resolved("chat")?.value == "https://flag.example")
        #expect(b.resolved("chat")?.source == .flag)
    }

    @Test func integerOptionsAreRangeChecked() throws {
        let a = try parser.parse(["make", "-s", "abc", "x"])
        let e = try #require(throws: StarlineError.self) { try a.int("size", in: 1...10) }
        #expect(e.code == .usage && e.message.contains("--size"))
        #expect(try parser.parse(["make", "x"]).int("size", in: 1...10) == 4)
    }

    @Test func editDistanceCountsTranspositionsOnce() {
        #expect(Suggestion.distance(Array("format".utf8), Array("fromat".utf8)) == 1)
        #expect(Suggestion.distance(Array("kitten".utf8), Array("sitting".utf8)) == 3)
        #expect(Suggestion.nearest(to: "zzzzzz", in: ["format"]) == nil)
    }
}
