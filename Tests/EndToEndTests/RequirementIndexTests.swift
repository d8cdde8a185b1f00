import StarlineTestSupport
import Testing

/// The README's requirement index is what the test sources and docs/requirements.md say now, and every S/W
/// requirement of docs/requirements.md has at least one test that cites it by name.
@Suite struct RequirementIndexTests {
    @Test func theReadmesRequirementIndexIsCurrentAndEveryRequirementHasATest() throws {
        let run = try Tools.shell("python3 '\(repositoryRoot)/scripts/requirement-index' --check")
        #expect(run.status != 1, "stale: run scripts/requirement-index (\(run.stderrText))")
        #expect(run.status != 2, "a requirement without a test: \(run.stderrText)")
        #expect(run.status == 0, "\(run.stderrText)")
    }
}
