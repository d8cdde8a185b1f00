import StarlineCore

/// A file to import, parsed and checked in full before the workspace is locked: a bad file changes nothing.
package struct WorkspaceImport: Sendable {
    enum Content: Sendable {
        case workspace(Workspace)
        case taskwarrior([JSON])
        case bookmarks([NetscapeBookmarks.Bookmark])
    }

    package let format: InterchangeFormat
    let content: Content

    /// What an import did, as printed:
    /// `{"format","tasks":{"added","updated","unchanged","removed","skipped"},"websites":{"added","duplicates","skipped","updated"},
    /// "recents":{"added","updated","unchanged"},"skipped":[{"uuid"|"url","skipped":REASON}]}`. A record the file holds
    /// exactly as we do is `unchanged`, not `updated`: re-importing one's own export changes nothing and writes nothing.
    /// Every skipped record is listed with why (W1): nothing is left out without a word.
    package struct Counts: Sendable {
        package var tasksAdded = 0, tasksUpdated = 0, tasksUnchanged = 0, tasksRemoved = 0, tasksSkipped = 0
        package var sitesAdded = 0, sitesDuplicates = 0, sitesSkipped = 0, sitesUpdated = 0
        package var recentsAdded = 0, recentsUpdated = 0, recentsUnchanged = 0
        /// The skipped records, in file order: `{"uuid","skipped"}` for a task, `{"url","skipped"}` for a site.
        package var skipped: [JSON] = []

        /// True when the workspace has to be written.
        package var changed: Bool {
            tasksAdded + tasksUpdated + tasksRemoved + sitesAdded + sitesUpdated + recentsAdded + recentsUpdated > 0
        }

        mutating func skipTask(_ uuid: String, _ reason: String) {
            tasksSkipped += 1
            skipped.append(.object([("uuid", .string(uuid)), ("skipped", .string(reason))]))
        }

        mutating func skipSite(_ url: String?, _ reason: String) {
            sitesSkipped += 1
            skipped.append(.object([("url", JSON.optional(url)), ("skipped", .string(reason))]))
        }

        package func json(_ format: InterchangeFormat) -> JSON {
            .object([
                ("format", .string(format.rawValue)),
                (
                    "tasks",
                    .object([
                        ("added", .int(tasksAdded)), ("updated", .int(tasksUpdated)), ("unchanged", .int(tasksUnchanged)),
                        ("removed", .int(tasksRemoved)), ("skipped", .int(tasksSkipped))
                    ])
                ),
                (
                    "websites",
                    .object([
                        ("added", .int(sitesAdded)), ("duplicates", .int(sitesDuplicates)), ("skipped", .int(sitesSkipped)),
                        ("updated", .int(sitesUpdated))
                    ])
                ),
                (
                    "recents",
                    .object([("added", .int(recentsAdded)), ("updated", .int(recentsUpdated)), ("unchanged", .int(recentsUnchanged))])
                ),
                ("skipped", .array(skipped))
            ])
        }
    }

    /// Parses `bytes` as `format`; `source` names the file in error messages (DATA_ERROR, exit 12).
    /// Invalid UTF-8 is refused up front, whatever the format and wherever it is (a title, a URL, a tag, an
    /// unknown field): one rule and one message with the byte offset, instead of one per parser.
    package init(_ bytes: [UInt8], format: InterchangeFormat, source: String) throws {
        self.format = format
        if let offset = WorkspaceImport.invalidUTF8Offset(bytes) {
            throw StarlineError(
                .data, "\(source) is not UTF-8 text: invalid byte sequence at byte \(offset)",
                details: .object([("path", .string(source)), ("offset", .int(offset))]))
        }
        switch format {
        case .json:
            let doc: JSON
            do { doc = try JSON.parse(bytes) } catch let e as StarlineError {
                throw StarlineError(.data, "\(source) is not JSON: \(e.message)", details: e.details)
            }
            let incoming: Workspace
            do { incoming = try Workspace(json: doc) } catch {
                throw StarlineError(.data, "\(source) is not a workspace document: \(error.message)")
            }
            // A newer document may mean its fields differently: refused, as a newer workspace.json is for writing.
            if incoming.version > Workspace.currentVersion {
                throw StarlineError(
                    .unsupportedVersion,
                    "\(source) has format version \(incoming.version), newer than this sl-tasks (version \(Workspace.currentVersion)): upgrade sl-tasks to import it",
                    details: .object([
                        ("path", .string(source)), ("version", .int(incoming.version)),
                        ("supported", .int(Workspace.currentVersion))
                    ]))
            }
            for (i, t) in incoming.tasks.enumerated() where t["title"]?.stringValue == nil {
                throw StarlineError(.data, "\(source): tasks[\(i)] has no title", details: .object([("index", .int(i))]))
            }
            // A time that is there must be one, within 0001–9999: an import never brings in a date that
            // would be printed wrapped or silently replaced.
            let times: [(String, [JSON], [String])] = [
                ("tasks", incoming.tasks, ["due", "doneAt", "createdAt", "updatedAt"] + TaskRecord.keptDates),
                ("websites", incoming.websites, ["createdAt"]),
                ("recents", incoming.recents, ["lastVisitedAt"])
            ]
            for (kind, records, fields) in times {
                for (i, record) in records.enumerated() {
                    for field in fields {
                        guard let value = record[field], !value.isNull, timestamp(value) == nil else { continue }
                        throw StarlineError(
                            .data,
                            "\(source): \(kind)[\(i)].\(field) \(value.serialized().prefix(80)) is not an RFC 3339 date-time within the years 0001–9999",
                            details: .object([("record", .string("\(kind)[\(i)]")), ("field", .string(field))]))
                    }
                }
            }
            for (i, task) in incoming.tasks.enumerated() {
                try WorkspaceImport.checkKeptFields(task, record: "tasks[\(i)]", source: source)
            }
            content = .workspace(incoming)
        case .taskwarrior:
            content = .taskwarrior(try Taskwarrior.parse(bytes))
        case .netscape:
            content = .bookmarks(try NetscapeBookmarks.parse(String(decoding: bytes, as: UTF8.self)))
        }
    }

    /// The kept Taskwarrior fields of an imported task (W1), when present: `recur` a string, `annotations` an array
    /// of `{entry, description}` with a string description and an RFC 3339 entry within 0001–9999.
    static func checkKeptFields(_ task: JSON, record: String, source: String) throws {
        func fail(_ field: String, _ why: String) -> StarlineError {
            StarlineError(
                .data, "\(source): \(record).\(field) \(why)", details: .object([("record", .string(record)), ("field", .string(field))]))
        }
        if let recur = task["recur"], !recur.isNull, recur.stringValue == nil { throw fail("recur", "is not a string") }
        guard let annotations = task["annotations"], !annotations.isNull else { return }
        guard let items = annotations.arrayValue else { throw fail("annotations", "is not an array of {entry, description}") }
        for (k, item) in items.enumerated() {
            guard case .object = item, item["description"]?.stringValue != nil else {
                throw fail("annotations[\(k)]", "is not an object with a description string")
            }
            if let entry = item["entry"], !entry.isNull, timestamp(entry) == nil {
                throw fail(
                    "annotations[\(k)].entry", "\(entry.serialized().prefix(80)) is not an RFC 3339 date-time within the years 0001–9999")
            }
        }
    }

    /// The offset of the first byte that is not part of a well-formed UTF-8 sequence; nil when all are.
    static func invalidUTF8Offset(_ bytes: [UInt8]) -> Int? {
        if String(validating: bytes, as: UTF8.self) != nil { return nil }
        var parser = Unicode.UTF8.ForwardParser()
        var iterator = bytes.makeIterator()
        var offset = 0
        while true {
            switch parser.parseScalar(from: &iterator) {
            case .valid(let scalar): offset += scalar.count
            case .error: return offset
            case .emptyInput: return nil
            }
        }
    }
}
