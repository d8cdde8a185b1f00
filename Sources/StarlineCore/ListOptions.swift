/// `-o/--output FORMAT` and `--fields A,B,…` of every command that prints a list; its `RecordList` prints.
public struct ListOptions: Sendable {
    public static let format = Option<ListFormat?>.choice(
        "output", short: "o", "FORMAT",
        help: """
            Print the list as json (one array), jsonl (one record per line), table, csv (LF line ends), csv-crlf (RFC 4180's \
            CRLF) or tsv. Default: a table on a terminal; piped or redirected, jsonl, as every list command prints.
            """)
    public static let fields = Option<[String]?>.converted(
        .value(
            "fields", "A,B,…",
            help: """
                Only these fields, in this order (a.b reaches into an object): the columns of a table, CSV or TSV, the keys \
                of JSON.
                """),
        { try ListOptions.parseFields($0) })
    public static let specs: [OptionSpec] = [format.spec, fields.spec]

    /// The format asked for with -o, if any.
    public var format: ListFormat?
    /// The fields asked for with --fields, if any.
    public var fields: [String]?

    public init(format: ListFormat? = nil, fields: [String]? = nil) {
        self.format = format
        self.fields = fields
    }

    public init(_ arguments: ParsedArguments) throws {
        format = try arguments[Self.format]
        fields = try arguments[Self.fields]
    }

    /// At most this many fields, each a path of at most 8 names of at most 64 characters: a list of columns,
    /// not a way to make the tool do unbounded work per record.
    static let maxFields = 64

    static func parseFields(_ text: String) throws -> [String] {
        let names = text.split(separator: ",", omittingEmptySubsequences: false).map { String($0).trimmingWhitespace() }
        func refuse(_ why: String) -> StarlineError {
            StarlineError(.usage, "--fields '\(text)': \(why)", details: .object([("option", .string("fields")), ("value", .string(text))]))
        }
        guard !names.isEmpty, names.count <= maxFields else { throw refuse("give 1 to \(maxFields) field names separated by commas") }
        for name in names {
            let parts = name.split(separator: ".", omittingEmptySubsequences: false)
            guard !name.isEmpty, parts.count <= 8, parts.allSatisfy({ !$0.isEmpty && $0.count <= 64 }) else {
                throw refuse("'\(name)' is not a field name (letters, digits and _, a.b for a field inside an object)")
            }
            guard
                name.unicodeScalars.allSatisfy({
                    $0 == "." || $0 == "_" || $0 == "-" || ($0.isASCII && $0.properties.isAlphabetic) || ("0"..."9").contains($0)
                })
            else {
                throw refuse("'\(name)' is not a field name (letters, digits and _, a.b for a field inside an object)")
            }
        }
        return names
    }
}
