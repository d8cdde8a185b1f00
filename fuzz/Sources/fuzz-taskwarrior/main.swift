import FuzzSupport
import StarlineCore
import StarlineWorkspace

// `sl-tasks import --format taskwarrior`: the export parsed and every task imported.
let now = Timestamp(seconds: 1_767_225_600)

Fuzz.run { bytes in
    guard let tasks = try? Taskwarrior.parse(bytes) else { return }
    for (index, task) in tasks.enumerated() {
        if case .upsert(let imported)? = try? Taskwarrior.importTask(task, existing: nil, now: now, index: index) {
            _ = Taskwarrior.export(imported)
            _ = try? Taskwarrior.importTask(task, existing: imported, now: now, index: index)
        }
    }
}
