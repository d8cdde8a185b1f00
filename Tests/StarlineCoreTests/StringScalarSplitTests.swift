import StarlineCore
import Testing

@Test("splitAtScalar splits at every separator scalar, where split(separator:) sees one Character")
func splitAtScalarSplitsBeforeExtendingScalars() {
    let path = "/moments/🏻/a/\u{301}b"
    #expect(path.split(separator: "/").count == 2, "the Character-based split this replaces")
    #expect(path.splitAtScalar("/") == ["", "moments", "🏻", "a", "\u{301}b"])
    #expect("a//b/".splitAtScalar("/") == ["a", "", "b", ""])
    #expect("a//b/".splitAtScalar("/", omittingEmptySubsequences: true) == ["a", "b"])
    #expect("".splitAtScalar("/") == [""])
}
