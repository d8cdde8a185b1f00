/// How a command that prints a list prints it (README, Conventions): JSON for pipes, a table for people.
///
/// Piped or redirected, every list command prints JSON Lines (one shape for every list, so one habit in
/// scripts). On a terminal it prints an aligned table (as gh, kubectl and docker do) unless `--pretty`,
/// `--compact` or `--jsonl` asks for JSON. `-o/--output` chooses any of them.
public enum ListFormat: String, Sendable, CaseIterable {
    /// One JSON array, written as it streams (compact, or pretty on a terminal or with --pretty).
    case json
    /// One compact JSON record per line: the default when piped.
    case jsonl
    /// Aligned columns with a header, as wide as the terminal (`COLUMNS`, else the terminal's width, else 80).
    case table
    /// RFC 4180's quoting with a header row and LF line ends, as GAM and the Unix tools write CSV (`cut`, `awk`,
    /// `sort` and `diff` see no stray CR); quoted where needed; formula cells neutralised.
    case csv
    /// The same with RFC 4180's CRLF line ends, for a program that asks for them.
    case csvCRLF = "csv-crlf"
    /// Tab-separated with a header row; tabs, newlines and backslashes in a value escaped as \t, \n, \\.
    case tsv
}
