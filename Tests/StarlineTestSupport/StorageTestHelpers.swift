import Foundation
import StarlineCore

/// Creates a new private temporary directory and returns its path.
///
/// Suites hold it in a property instead of running test bodies in a `withTemporaryDirectory { dir in … }`
/// closure: with Swift 6.3.1, `let e = #expect(throws:) { … }` inside a closure can make a later closure of
/// the same type run the body of the one in the macro (a closure-discriminator collision), which silently
/// changes what a test does.
public func makeStorageTempDir(prefix: String = "starline-storage") throws -> String {
    var template = Array("\(FileManager.default.temporaryDirectory.path)/\(prefix)-XXXXXX".utf8CString)
    guard let created = mkdtemp(&template) else {
        throw StarlineError(.storage, "mkdtemp failed: errno \(errno)")
    }
    return String(cString: created)
}

/// Permission bits of `path` (following symlinks), or nil when it does not exist.
public func permissionBits(_ path: String) -> mode_t? {
    var info = stat()
    guard stat(path, &info) == 0 else { return nil }
    return info.st_mode & 0o7777
}

/// Starts `body` on a new thread; `wait()` on the result joins it.
public func startThread(_ body: @escaping @Sendable () -> Void) -> DispatchGroup {
    let group = DispatchGroup()
    group.enter()
    Thread {
        body()
        group.leave()
    }.start()
    return group
}
