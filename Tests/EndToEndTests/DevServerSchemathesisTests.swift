import Foundation
import StarlineCore
import StarlineTestSupport
import Testing

/// Property-based testing of sl-devserver against its own contract with schemathesis (PyPI).
enum Schemathesis {
    /// schemathesis is importable, or gets installed from PyPI now; when neither works the test is
    /// skipped and the reason printed.
    static let available: Bool = {
        if (try? Tools.shell("python3 -c 'import schemathesis'"))?.status == 0 { return true }
        let install = try? Tools.shell("timeout 600 python3 -m pip install --quiet schemathesis")
        if (try? Tools.shell("python3 -c 'import schemathesis'"))?.status == 0 { return true }
        FileHandle.standardError.write(
            Data(
                "skipping the schemathesis run: schemathesis cannot be installed from PyPI (\(install?.stderrText.suffix(300) ?? "python3 missing"))\n"
                    .utf8))
        return false
    }()
}

@Suite struct DevServerSchemathesisTests {
    @Test("schemathesis finds no server errors and no responses outside the contract", .enabled(if: Schemathesis.available))
    func contractHoldsUnderGeneratedRequests() throws {
        let server = try DevServerProcess(["--device-interval", "0"])
        let login = try server.login("alice")
        let work = TemporaryDirectory()
        // /__dev/ routes are left out: faults and resets would break the run on purpose. One worker:
        // schemathesis 4.x with --workers hit an internal hypothesis race here ("AST constructor recursion").
        let run = try Tools.shell(
            """
            cd '\(work.path)' && timeout 900 python3 -c 'import sys; from schemathesis.cli import schemathesis; sys.argv[0] = "schemathesis"; sys.exit(schemathesis())' run '\(server.baseURL)/openapi.yaml' \
              -H 'Authorization: Bearer \(login.token)' --exclude-path-regex '^/__dev/' -n 8 --request-timeout 40 \
              -c not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance --no-color
            """)
        #expect(run.status == 0, "schemathesis failed:\n\(run.stdoutText.suffix(4000))\n\(run.stderrText.suffix(1000))")
        #expect(run.stdoutText.contains("passed"))
    }
}
