/// Prints the records of a list command in the format `ListOptions` and the streams call for (README,
/// Conventions): the command hands over records one by one, as it always did, and never formats.
///
/// Piped or redirected without `-o`, every list is JSON Lines — one compact record per line, the one shape a
/// script can count (`wc -l`), cut short (`head`), filter (`grep`, `jq -c 'select(…)'`) and read while it
/// streams; `-o json` (or `--pretty`) is one JSON array for a program that wants a document (`jq '.[0]'`,
/// `jq -s` on the lines gives the same). Nothing here is set up (no width, no buffering) unless a table or
/// delimited text is asked for. Every format streams:
/// a JSON array is written element by element, CSV and TSV row by row, a table in blocks of
/// `TableLayout.blockRows` rows laid out together (memory stays bounded on a list of any length).
public final class RecordList: @unchecked Sendable {
    // @unchecked: as Output, written from one thread at a time (bulk workers hand results to one finisher).
    private enum Form { case jsonArray(JSON.Style), jsonLines, table, delimited(DelimitedText.Dialect) }

    private let output: Output
    private let form: Form
    private let fields: [String]?
    private let columns: [String]
    private var now: Timestamp?
    private var count = 0
    private var table: TableLayout?
    /// A JSON array's bytes not yet written (written in 64 KiB pieces, not per record).
    private var pending: [UInt8] = []

    /// `columns`: what a table, CSV or TSV shows without `--fields` — the fields a person scans the list for.
    /// `now`: what a table's times are relative to (`sl-tasks --now`); the streams' clock when nil.
    public init(_ output: Output, _ options: ListOptions, columns: [String], now: Timestamp? = nil) {
        self.output = output
        self.now = now
        fields = options.fields
        self.columns = options.fields ?? columns
        let format = options.format ?? Self.defaultFormat(output)
        form =
            switch format {
            case .json: .jsonArray(output.mode == .pretty ? .pretty : .compact)
            case .jsonl: .jsonLines
            case .table: .table
            case .csv: .delimited(.csv)
            case .csvCRLF: .delimited(.csvCRLF)
            case .tsv: .delimited(.tsv)
            }
    }

    /// The format the list will be printed in, `-o` or the default for these streams.
    public static func format(_ output: Output, _ options: ListOptions) -> ListFormat {
        options.format ?? defaultFormat(output)
    }

    /// Without `-o`: a table for a person; piped, or with --compact or --jsonl, JSON Lines; with --pretty one
    /// indented JSON array (pretty records one per line would be no format at all).
    static func defaultFormat(_ output: Output) -> ListFormat {
        guard output.modeIsExplicit || !output.stdoutIsTerminal else { return .table }
        return output.modeIsExplicit && output.mode == .pretty ? .json : .jsonl
    }

    /// One record, printed now (or, for a table, with its block).
    public func add(_ record: JSON) {
        defer { count += 1 }
        switch form {
        case .jsonArray(let style):
            pending.append(count == 0 ? 0x5B : 0x2C)
            if style == .pretty { pending += [0x0A, 0x20, 0x20] }
            projected(record).write(to: &pending, style: style, indent: 1)
            if pending.count >= 64 * 1024 { output.writeBytes(pending); pending.removeAll(keepingCapacity: true) }
        case .jsonLines:
            output.emitLine(projected(record))
        case .table:
            if table == nil {
                // A table of nothing prints nothing, and starts no pager.
                output.flush()
                TerminalPager.startIfWanted(output.io)
                table = TableLayout(columns: columns, width: Self.width(output))
                // One instant for the whole table: the clock is read once, not per row.
                if now == nil { now = output.io.now() }
            }
            // Times as far from now ("in 2d", "3h ago"): a table is read by a person; -o json keeps RFC 3339.
            let now = now ?? output.io.now()
            let cells = columns.map { column -> String in
                let value = Self.value(record, at: column)
                if RelativeTime.isTimeColumn(column), let text = value?.stringValue, let time = Timestamp(rfc3339: text) {
                    return RelativeTime.text(time, now: now)
                }
                return CellText.table(value)
            }
            if let block = table!.add(cells) { output.write(block); output.flush() }
        case .delimited(let dialect):
            if count == 0 { output.write(DelimitedText.row(columns, dialect: dialect, header: true)) }
            let terminal = output.stdoutIsTerminal
            output.write(
                DelimitedText.row(columns.map { CellText.delimited(Self.value(record, at: $0), terminal: terminal) }, dialect: dialect))
            output.flush()
        }
    }

    public func add(contentsOf records: [JSON]) { for r in records { add(r) } }

    /// Ends the list: closes a JSON array (`[]` when empty) and prints a table's last block. A table of
    /// nothing prints nothing on stdout (as ls does); CSV and TSV still print their header.
    public func finish() {
        switch form {
        case .jsonArray(let style):
            pending += count == 0 ? Array("[]\n".utf8) : Array((style == .pretty ? "\n]\n" : "]\n").utf8)
            output.writeBytes(pending)
            pending.removeAll()
        case .jsonLines: break
        case .table:
            if let block = table?.finish() { output.write(block) }
            output.flush()
        case .delimited(let dialect):
            if count == 0 { output.write(DelimitedText.row(columns, dialect: dialect, header: true)) }
            output.flush()
        }
    }

    /// A whole list at once.
    public static func print(_ records: [JSON], _ output: Output, _ options: ListOptions, columns: [String], now: Timestamp? = nil) {
        let list = RecordList(output, options, columns: columns, now: now)
        list.add(contentsOf: records)
        list.finish()
    }

    /// The record with only `--fields` (in that order; a missing one is null), or as it is.
    private func projected(_ record: JSON) -> JSON {
        guard let fields else { return record }
        return .object(fields.map { ($0, Self.value(record, at: $0) ?? .null) })
    }

    /// The value at `path` (`a.b` reaches into objects), nil when absent.
    static func value(_ record: JSON, at path: String) -> JSON? {
        var value: JSON? = record
        for key in path.split(separator: ".") {
            guard case .object? = value else { return nil }
            value = value?[String(key)]
        }
        return value
    }

    /// The table's width: `COLUMNS` when set to a number, else the terminal's, else 80.
    static func width(_ output: Output) -> Int {
        if let text = output.io.environment["COLUMNS"], let columns = Int(text), (10...10_000).contains(columns) { return columns }
        return output.io.terminalColumns ?? 80
    }
}
