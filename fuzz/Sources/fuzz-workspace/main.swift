import FuzzSupport
import StarlineCore
import StarlineWorkspace

// workspace.json as sl-tasks reads it (decode, shape check, `check`), and the interchange detector.
let store = WorkspaceStore(path: "/nonexistent/starline-fuzz")
let now = Timestamp(seconds: 1_767_225_600)

Fuzz.run { bytes in
    _ = InterchangeFormat.detect(bytes)
    guard let workspace = try? store.decode(bytes) else { return }
    _ = WorkspaceCheck.run(workspace)
    _ = workspace.json.serialized()
    _ = DateInput.resolve(String(fuzz: bytes.prefix(64)), now: now)?.rfc3339
}
