#if canImport(Glibc)
import Glibc
#endif
import StarlineCore

// KEYRING_UNAVAILABLE and STORAGE_LOCKED (exit 10) are in the table of StarlineCore/StarlineError.swift.

/// One libsecret call with a bound: a `GCancellable` that a watchdog thread cancels when the deadline
/// passes, so a wedged daemon (or a bus that accepts the connection and never answers) ends in an error.
///
/// libsecret's own bound is GDBus's default of 25 s per D-Bus message, and a `_sync` call may send several;
/// its docs say so plainly: "This method may block indefinitely and should not be used in user interface
/// threads." Every `_sync` function takes a cancellable: "cancellable: optional cancellation object", and a
/// cancelled call returns `G_IO_ERROR_CANCELLED`, which `failure` reports as a timeout when the watchdog fired.
final class KeyringCall {
    let library: SecretLibrary
    /// The `GCancellable *` to pass to every `_sync` call of this operation.
    let cancellable: UnsafeMutableRawPointer?
    let timeoutNanoseconds: UInt64
    private let watch = Locked(Watch())

    private struct Watch {
        var done = false
        var fired = false
    }

    /// Starts the watchdog. When no thread can be created (EAGAIN) the call runs unbounded, as libsecret's
    /// own calls do; that is the only case without a bound.
    init(_ library: SecretLibrary, timeoutNanoseconds: UInt64) {
        self.library = library
        self.timeoutNanoseconds = timeoutNanoseconds
        cancellable = library.cancellableNew()
        // The watchdog holds its own reference (g_object_ref), so it may outlive this object.
        let handle = CancellableReference(library: library, pointer: library.objectRef(cancellable))
        let watch = self.watch
        let deadline = MonotonicClock.nanoseconds() + timeoutNanoseconds
        let started = WorkerThreads.detach {
            let finished = watch.await(deadline: deadline) { $0.done ? true : nil } ?? false
            if !finished {
                watch.withLock { $0.fired = true }
                // g_cancellable_cancel: "This function is thread-safe. In other words, you can safely call it
                // from a thread other than the one running the operation that was passed the cancellable."
                handle.library.cancellableCancel(handle.pointer)
            }
            handle.library.objectUnref(handle.pointer)
        }
        if !started { library.objectUnref(handle.pointer) }
    }

    deinit {
        watch.withLockNotifying { $0.done = true }
        library.objectUnref(cancellable)
    }

    /// Whether the watchdog cancelled the call.
    var timedOut: Bool { watch.withLock { $0.fired } }

    /// Runs `body` with a `GError **` and turns a set error into a `StarlineError` (freeing the GError).
    /// `body` returns nil for failure, as libsecret's functions return NULL/FALSE with `error` set.
    func run<T>(_ what: String, _ body: (SecretLibrary.ErrorOut) -> T?) throws(StarlineError) -> T? {
        var error: UnsafeMutableRawPointer? = nil
        let value = body(&error)
        if let error { throw failure(what, error) }
        return value
    }

    /// A GError as a `StarlineError`, and the GError freed. The layout is GLib's public struct:
    /// `struct GError { GQuark domain; gint code; gchar *message; }` (guint32, gint, pointer at offset 8).
    func failure(_ what: String, _ error: UnsafeMutableRawPointer) -> StarlineError {
        let domain = error.load(fromByteOffset: 0, as: UInt32.self)
        let code = error.load(fromByteOffset: 4, as: Int32.self)
        let message = error.load(fromByteOffset: 8, as: UnsafePointer<CChar>?.self).map { String(cString: $0) } ?? "unknown error"
        let domainName = library.quarkToString(domain).map { String(cString: $0) } ?? String(domain)
        library.errorFree(error)
        let details = JSON.object([("domain", .string(domainName)), ("code", .int(Int(code))), ("message", .string(message))])
        let io = library.ioErrorQuark(), dbus = library.dbusErrorQuark(), secret = library.secretErrorQuark()
        let seconds = timeoutNanoseconds / 1_000_000_000
        // G_IO_ERROR_CANCELLED 19 (our watchdog), G_IO_ERROR_TIMED_OUT 24; G_DBUS_ERROR_NO_REPLY 4 ("used for
        // message reply timeouts"), TIMEOUT 12, TIMED_OUT 20.
        if (domain == io && (code == 19 || code == 24)) || (domain == dbus && (code == 4 || code == 12 || code == 20)) {
            return StarlineError(
                .keyringUnavailable,
                "the Secret Service did not answer within \(seconds) s (\(what)); try again, or use --no-keyring",
                retryable: true, details: details)
        }
        // SECRET_ERROR_IS_LOCKED 2: "the item or collection is locked and the operation cannot be performed".
        if domain == secret && code == 2 {
            return StarlineError(
                .storageLocked, "the keyring is locked (\(what)); unlock it in your desktop session and try again",
                details: details)
        }
        // G_DBUS_ERROR_SERVICE_UNKNOWN 2, NAME_HAS_NO_OWNER 3, NO_SERVER 11, DISCONNECTED 15, FILE_NOT_FOUND 17,
        // SPAWN_EXEC_FAILED 23, SPAWN_CHILD_EXITED 25 (activation failed); G_IO_ERROR_NOT_FOUND 1 (no socket).
        if (domain == dbus && [2, 3, 11, 15, 17, 23, 25].contains(code)) || (domain == io && code == 1) {
            return Self.unavailable("no Secret Service answers on the D-Bus session bus (\(message))", details: details)
        }
        return StarlineError(.storage, "the Secret Service failed (\(what)): \(message)", details: details)
    }

    static func unavailable(_ reason: String, details: JSON? = nil) -> StarlineError {
        StarlineError(
            .keyringUnavailable,
            "\(reason); the Secret Service keyring (gnome-keyring, KeePassXC) needs a desktop session: use --no-keyring to keep the key in a file instead",
            details: details)
    }
}

/// The watchdog's reference to the cancellable. @unchecked: a GObject reference may be released on any thread.
private struct CancellableReference: @unchecked Sendable {
    let library: SecretLibrary
    let pointer: UnsafeMutableRawPointer?
}
