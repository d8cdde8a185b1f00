import Foundation
import StarlineCore
import StarlineTestSupport
import Testing

/// S16, docs/fleet.md's Kubernetes Indexed Job: the manifest in deploy/kubernetes is valid for the Kubernetes
/// versions the recipe names (kubernetes-validate, strict: an unknown field is an error), and the document shows
/// exactly that manifest. Its pods are run from it against the installed package by scripts/package-check
/// (scripts/indexed-job-check.sh: a chroot and a second uid need root and a release build).
@Suite struct KubernetesRecipeTests {
    static var checkout: String { Tools.binDirectory.components(separatedBy: "/.build/").first! }
    static var manifest: String { checkout + "/deploy/kubernetes/revoke-job.yaml" }

    static var validator: String {
        let cache = ProcessInfo.processInfo.environment["XDG_CACHE_HOME"] ?? (NSHomeDirectory() + "/.cache")
        return cache + "/starline/test-venv/bin/kubernetes-validate"
    }

    @Test(
        """
        S16 the Indexed Job manifest validates strictly against Kubernetes 1.29 (backoffLimitPerIndex) and the newest \
        schema
        """)
    func testS16TheManifestValidates() throws {
        #expect(FileManager.default.isExecutableFile(atPath: Self.validator), "\(Self.validator) is missing: run scripts/bootstrap")
        for version in ["1.29", "1.37"] {
            let run = try Tools.run(
                Self.validator, ["--strict", "-k", version, Self.manifest], home: NSHomeDirectory(), runAs: .testProcess)
            #expect(run.status == 0, "Kubernetes \(version): \(run.stdoutText) \(run.stderrText)")
            #expect(run.stdoutText.contains("passed for resource job/") && run.stdoutText.contains("persistentvolumeclaim/"))
        }
        // The validator is strict: a field Kubernetes does not know fails it (the check can fail).
        let dir = TemporaryDirectory("k8s-validate")
        let broken = try String(contentsOfFile: Self.manifest, encoding: .utf8)
            .replacingOccurrences(of: "backoffLimitPerIndex:", with: "backoffLimitPerIndexx:")
        try broken.write(toFile: dir.file("broken.yaml"), atomically: true, encoding: .utf8)
        let refused = try Tools.run(
            Self.validator, ["--strict", "-k", "1.29", dir.file("broken.yaml")], home: dir.path, runAs: .testProcess)
        #expect(refused.status != 0)
    }

    @Test(
        """
        S16 docs/fleet.md shows the manifest of deploy/kubernetes and the GNU parallel script exactly, and names the \
        Containerfile
        """)
    func testS16TheDocumentShowsTheManifestThatIsChecked() throws {
        let fleet = try String(contentsOfFile: Self.checkout + "/docs/fleet.md", encoding: .utf8)
        let manifest = try String(contentsOfFile: Self.manifest, encoding: .utf8)
        #expect(fleet.contains("```yaml\n" + manifest + "```\n"), "docs/fleet.md must show deploy/kubernetes/revoke-job.yaml verbatim")
        #expect(fleet.contains("deploy/Containerfile"))
        let campaign = try String(contentsOfFile: Self.checkout + "/deploy/parallel/revoke-campaign.sh", encoding: .utf8)
        #expect(fleet.contains("```sh\n" + campaign + "```\n"), "docs/fleet.md must show deploy/parallel/revoke-campaign.sh verbatim")
        #expect(FileManager.default.fileExists(atPath: Self.checkout + "/deploy/Containerfile"))
    }
}
