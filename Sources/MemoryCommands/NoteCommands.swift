import StarlineCore
import StarlineMemory

/// Notes as `sl-memory` prints them.
enum NoteRecord {
    static func attachment(_ a: MemoryAttachment) -> JSON {
        .object([
            ("name", .string(a.name)), ("size", .int(Int64(clamping: a.size))), (a.digestName, .string(a.digest)),
            ("addedAt", .string(a.addedAt.rfc3339))
        ])
    }

    static func summary(_ n: MemoryNoteSummary) -> JSON {
        record(n.id, n.version, n.createdAt, n.updatedAt, n.title, body: nil, n.tags, n.attachments)
    }

    static func note(_ n: MemoryNote) -> JSON {
        record(n.id, n.version, n.createdAt, n.updatedAt, n.title, body: n.body, n.tags, n.attachments)
    }

    /// One field order for both: the body (a `show`, not a `list`) after the title.
    private static func record(
        _ id: String, _ version: Int, _ createdAt: Timestamp, _ updatedAt: Timestamp, _ title: String,
        body: String?, _ tags: [String], _ attachments: [MemoryAttachment]
    ) -> JSON {
        var fields: [(String, JSON)] = [
            ("id", .string(id)), ("version", .int(Int64(version))), ("createdAt", .string(createdAt.rfc3339)),
            ("updatedAt", .string(updatedAt.rfc3339)), ("title", .string(title))
        ]
        if let body { fields.append(("body", .string(body))) }
        fields += [("tags", .array(tags.map(JSON.string))), ("attachments", .array(attachments.map(attachment)))]
        return .object(fields)
    }

    /// The columns of a note list on a terminal (`list`, `search`).
    static let columns = ["id", "title", "tags", "updatedAt"]

    /// A batch's records (`add --lines`): piped, JSON Lines as every batch and list; on a terminal or with --pretty one indented array.
    static func emitList(_ records: [JSON], _ output: Output) {
        if output.mode == .pretty { output.emit(.array(records)) } else { for r in records { output.emitLine(r) } }
    }

    static let idArgument = ArgumentSpec("ID", help: "A note id or a unique prefix of one.")

    /// The attachment `get` reads when no name is given: the note's only one. None is NOT_FOUND and several
    /// a usage error, each listing the names there are (none, or which to choose from).
    static func onlyAttachment(of id: String, in vault: MemoryVault) throws -> String {
        let note = try vault.show(id)
        let names = note.attachments.map(\.name)
        let details = JSON.object([("id", .string(note.id)), ("attachments", .array(names.map(JSON.string)))])
        switch names.count {
        case 1: return names[0]
        case 0: throw StarlineError(.notFound, "note \(note.id) has no attachments", details: details)
        default:
            throw StarlineError(
                .usage,
                "note \(note.id) has \(names.count) attachments; name the one to get: \(names.map { "'\($0)'" }.joined(separator: ", "))",
                details: details)
        }
    }

    /// Longest title `add --lines` derives from a line (in characters); a longer line is cut and ends in "…".
    static let maxDerivedTitle = 80

    /// The title of a note added without --title from a line: the line, trimmed, cut to `maxDerivedTitle`.
    static func title(fromLine line: String) -> String {
        let text = line.trimmingWhitespace()
        guard text.count > maxDerivedTitle else { return text }
        return String(text.prefix(maxDerivedTitle - 1)).trimmingWhitespace() + "…"
    }

    /// The options of a command that takes only a note id (`show`, `rm`).
    struct Target {
        var memory: MemoryOptions
        var id: String

        init(_ arguments: ParsedArguments) throws {
            memory = try MemoryOptions(arguments)
            id = arguments.positionals[0]
        }
    }
    static let tag = Option<[String]>.strings("tag", short: "t", "TAG", help: "A tag (repeatable).")
    static let title = Option<String?>.string("title", "TEXT", help: "The note's title.")

    /// The body from the words given, or stdin for `-` or no words when stdin is not a terminal (at most 16 MiB).
    static func body(_ words: [String], _ context: CommandContext, required: Bool) throws -> String? {
        if words == ["-"] || (words.isEmpty && required && !context.io.stdinIsTerminal) {
            let bytes = try context.readStandardInput(maxBytes: 16 * 1024 * 1024)
            guard let text = String(validating: bytes, as: UTF8.self) else {
                throw StarlineError(.usage, "the note text on stdin is not UTF-8")
            }
            return text
        }
        if words.isEmpty {
            if required { throw StarlineError(.usage, "no note text: give it as arguments, or - to read stdin") }
            return nil
        }
        return words.joined(separator: " ")
    }
}

/// `sl-memory add [TEXT…|-]`.
enum AddCommand: Command {
    static let attach = Option<[String]>.strings("attach", short: "a", "FILE", help: "Attach FILE to the new note (repeatable).")
    static let lines = Option<Bool>.flag(
        "lines",
        help:
            "One note per line of stdin (blank lines skipped), each titled by its line (cut to \(NoteRecord.maxDerivedTitle) characters) unless --title, all added in one transaction; one record each (JSON Lines with --jsonl)."
    )
    static let spec = CommandSpec(
        "add", abstract: "Add a note (text from the arguments or stdin) and print it",
        options: [NoteRecord.title.spec, NoteRecord.tag.spec, attach.spec, lines.spec],
        arguments: [
            ArgumentSpec(
                "TEXT|-", help: "The note's text; - (or nothing, with stdin not a terminal) reads stdin.", optional: true, variadic: true)
        ],
        examples: [
            Example("sl-memory add --title 'Wi-Fi' --tag home 'The guest network is starline-guest'", "A note with a title and a tag."),
            Example("pbpaste | sl-memory add - --title clipboard", "A note from stdin.")
        ])

    struct Options {
        var memory: MemoryOptions; var draft: [String]; var title: String?; var tags: [String]; var attachments: [String]; var lines: Bool
    }

    static func options(_ arguments: ParsedArguments) throws -> Options {
        let options = Options(
            memory: try MemoryOptions(arguments), draft: arguments.positionals, title: try arguments[NoteRecord.title],
            tags: try arguments[NoteRecord.tag], attachments: try arguments[attach], lines: try arguments[lines])
        if options.lines && (!options.draft.isEmpty || !options.attachments.isEmpty) {
            throw StarlineError(.usage, "--lines reads every note from stdin: it takes no TEXT and no --attach")
        }
        return options
    }

    static func run(_ options: Options, _ context: CommandContext) throws -> ExitStatus {
        if options.lines {
            let bytes = try context.readStandardInput(maxBytes: 256 * 1024 * 1024)
            let drafts = try bytes.split(separator: 0x0A).compactMap { line -> NoteDraft? in
                guard let text = String(validating: line.last == 0x0D ? line.dropLast() : line, as: UTF8.self) else {
                    throw StarlineError(.usage, "a line on stdin is not UTF-8")
                }
                return text.trimmingWhitespace().isEmpty
                    ? nil : NoteDraft(title: options.title ?? NoteRecord.title(fromLine: text), body: text, tags: options.tags)
            }
            let vault = try VaultAccess.open(options.memory, context)
            let notes = try vault.add(contentsOf: drafts)
            NoteRecord.emitList(notes.map(NoteRecord.note), context.output)
            return .ok
        }
        let body = try NoteRecord.body(options.draft, context, required: true) ?? ""
        let files = try options.attachments.map { try AttachmentInput.open($0) }
        let vault = try VaultAccess.open(options.memory, context)
        var note = try vault.add(NoteDraft(title: options.title ?? "", body: body, tags: options.tags))
        for file in files {
            note = try vault.attach(note.id, from: file.fd, name: file.name, inputName: file.path)
        }
        context.output.emit(NoteRecord.note(note))
        return .ok
    }
}

/// `sl-memory list`.
enum ListCommand: Command {
    static let spec = CommandSpec(
        "list", abstract: "List notes (titles, tags, attachments; no bodies)",
        options: [NoteRecord.tag.spec] + ListOptions.specs)
    struct Options { var memory: MemoryOptions; var tags: [String]; var list: ListOptions }
    static func options(_ arguments: ParsedArguments) throws -> Options {
        Options(memory: try MemoryOptions(arguments), tags: try arguments[NoteRecord.tag], list: try ListOptions(arguments))
    }
    static func run(_ options: Options, _ context: CommandContext) throws -> ExitStatus {
        let vault = try VaultAccess.open(options.memory, context)
        let notes = try vault.list().filter { note in options.tags.allSatisfy(note.tags.contains) }
        RecordList.print(notes.map(NoteRecord.summary), context.output, options.list, columns: NoteRecord.columns)
        return .ok
    }
}

/// `sl-memory show ID`.
enum ShowCommand: Command {
    static let spec = CommandSpec("show", abstract: "Print one note with its text", arguments: [NoteRecord.idArgument])
    static func options(_ arguments: ParsedArguments) throws -> NoteRecord.Target { try NoteRecord.Target(arguments) }
    static func run(_ options: NoteRecord.Target, _ context: CommandContext) throws -> ExitStatus {
        let vault = try VaultAccess.open(options.memory, context)
        context.output.emit(NoteRecord.note(try vault.show(options.id)))
        return .ok
    }
}

/// `sl-memory edit ID`.
enum EditCommand: Command {
    static let body = Option<String?>.string("body", "TEXT|-", help: "Replace the text (- reads stdin).")
    static let noTags = Option<Bool>.flag("no-tags", help: "Remove every tag.")
    static let spec = CommandSpec(
        "edit", abstract: "Change a note's title, text or tags (its version goes up by one)",
        discussion: "--tag replaces the tag set with the tags given; --no-tags empties it.",
        options: [NoteRecord.title.spec, body.spec, NoteRecord.tag.spec, noTags.spec], arguments: [NoteRecord.idArgument])
    struct Options { var memory: MemoryOptions; var id: String; var title: String?; var body: String?; var tags: [String]?;  }
    static func options(_ arguments: ParsedArguments) throws -> Options {
        let tags = try arguments[NoteRecord.tag], none = try arguments[noTags]
        if none && !tags.isEmpty { throw StarlineError(.usage, "--tag and --no-tags cannot be used together") }
        return Options(
            memory: try MemoryOptions(arguments), id: arguments.positionals[0], title: try arguments[NoteRecord.title],
            body: try arguments[body], tags: none ? [] : tags.isEmpty ? nil : tags)
    }
    static func run(_ options: Options, _ context: CommandContext) throws -> ExitStatus {
        guard options.title != nil || options.body != nil || options.tags != nil else {
            throw StarlineError(.usage, "nothing to change: give --title, --body, --tag or --no-tags")
        }
        let body = try options.body.map { try NoteRecord.body([$0], context, required: true) ?? "" }
        let vault = try VaultAccess.open(options.memory, context)
        context.output.emit(NoteRecord.note(try vault.edit(options.id, title: options.title, body: body, tags: options.tags)))
        return .ok
    }
}

/// `sl-memory rm ID`.
enum RemoveCommand: Command {
    static let spec = CommandSpec("rm", abstract: "Remove a note and its attachments", arguments: [NoteRecord.idArgument])
    static func options(_ arguments: ParsedArguments) throws -> NoteRecord.Target { try NoteRecord.Target(arguments) }
    static func run(_ options: NoteRecord.Target, _ context: CommandContext) throws -> ExitStatus {
        let vault = try VaultAccess.open(options.memory, context)
        context.output.emit(.object([("removed", .string(try vault.remove(options.id)))]))
        return .ok
    }
}

/// `sl-memory search WORD…`.
enum SearchCommand: Command {
    static let spec = CommandSpec(
        "search", abstract: "Find the notes whose title, text or tags hold every word",
        discussion: """
            The vault keeps an encrypted index (keyed BLAKE2b tokens of every word): a search computes the tokens of its \
            words and decrypts only the notes that hold them all. Words match whole, case-insensitively.
            """,
        options: ListOptions.specs,
        arguments: [ArgumentSpec("WORD", help: "Words that must all occur.", variadic: true)],
        examples: [Example("sl-memory search wifi password --jsonl | jq -r .id", "The ids of notes holding both words.")])
    struct Options { var memory: MemoryOptions; var query: String; var list: ListOptions }
    static func options(_ arguments: ParsedArguments) throws -> Options {
        let query = arguments.positionals.joined(separator: " ")
        guard !query.trimmingWhitespace().isEmpty else { throw StarlineError(.usage, "no words to search for") }
        return Options(memory: try MemoryOptions(arguments), query: query, list: try ListOptions(arguments))
    }
    static func run(_ options: Options, _ context: CommandContext) throws -> ExitStatus {
        let vault = try VaultAccess.open(options.memory, context)
        RecordList.print(
            try vault.search(options.query).map(NoteRecord.summary), context.output, options.list,
            columns: NoteRecord.columns)
        return .ok
    }
}
