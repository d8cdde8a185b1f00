#if canImport(Glibc)
import Glibc
#endif
import StarlineCore

/// A C library opened with `dlopen` when first needed (libzbar, libcurl): linking them costs every start
/// of a tool the loading of their whole dependency tree, used or not.
///
/// Symbols are looked up one by one; a missing one is recorded in `missing` and answered with a stub,
/// so a loader can build its table of function pointers and then refuse the library as a whole.
public struct SharedLibrary {
    public let name: String
    let handle: UnsafeMutableRawPointer
    public private(set) var missing: [String] = []

    /// Why no soname loaded: `dlerror()`'s text, or the trust rule the file broke (`refused`).
    public struct LoadError: Error {
        public let reason: String
        /// The file was there but not loaded: it broke the rule of a file that decides what code runs.
        public var refused = false
    }

    /// Opens the first soname found in the system's library directories (`systemDirectories`), as a file that
    /// decides what code runs (`open(path:)`).
    ///
    /// Only those directories: a soname given to dlopen as it is would also be looked up in the executable's
    /// RUNPATH, and a binary built with `$ORIGIN` there (a plain `swift build`) would load a library someone
    /// dropped beside it and run its constructor with the tool's privileges.
    ///
    /// Lazy, as the dynamic loader binds a program's own libraries: dlopen(3) says RTLD_NOW means "all
    /// undefined symbols in the shared object are resolved before dlopen() returns" — for libcurl that is
    /// every function its ~30 dependencies import (LDAP, Kerberos, SSH, …), ~1,900 symbol lookups (~20% of
    /// `sl-sessions list`'s instructions) that curl(1) itself never does for the parts a request does not
    /// touch. What we call is resolved and checked one by one with `dlsym` (`function(_:as:)`, `missing`).
    public static func open(_ sonames: [String]) -> Result<SharedLibrary, LoadError> {
        var failures: [String] = []
        for soname in sonames {
            guard let path = systemDirectories.lazy.map({ $0 + "/" + soname }).first(where: { access($0, F_OK) == 0 }) else {
                failures.append("\(soname): not found in \(systemDirectories.joined(separator: ", "))")
                continue
            }
            switch open(path: path, name: soname) {
            case .success(let library): return .success(library)
            case .failure(let error): failures.append(error.reason)
            }
        }
        return .failure(LoadError(reason: failures.joined(separator: "; ")))
    }

    /// The directories system libraries are installed in (Debian's multiarch directory first).
    public static let systemDirectories: [String] = {
        #if arch(x86_64)
        let triplet = "x86_64-linux-gnu"
        #elseif arch(arm64)
        let triplet = "aarch64-linux-gnu"
        #else
        let triplet = "unknown-linux-gnu"
        #endif
        return ["/usr/lib/\(triplet)", "/lib/\(triplet)", "/usr/lib", "/lib"]
    }()

    /// Opens the library at the absolute `path` under the rule of a file that decides what code runs
    /// (`FileTrust.trustDeciding`: regular, owned by root or by us, writable by nobody else), checked on a
    /// descriptor that dlopen then loads (`/proc/self/fd/N`): the file checked is the file loaded, whatever
    /// replaces the path meanwhile. `name` is what messages call it.
    public static func open(path: String, name: String? = nil) -> Result<SharedLibrary, LoadError> {
        let fd: Int32
        do {
            guard let opened = try AtomicFile.openChecked(path, what: "library", trust: .trustDeciding) else {
                return .failure(LoadError(reason: "\(path): \(String(cString: strerror(ENOENT)))"))
            }
            fd = opened.fd
        } catch {
            return .failure(LoadError(reason: error.message, refused: error.code == .insecurePermissions))
        }
        // The descriptor stays open (close-on-exec) for the life of the process: the loader knows the library by
        // the name /proc/self/fd/N, and glibc matches a library it has loaded by name before anything else, so
        // the same number reused for another library would be answered with this one.
        guard let handle = dlopen("/proc/self/fd/\(fd)", RTLD_LAZY | RTLD_LOCAL) else {
            close(fd)
            return .failure(LoadError(reason: dlerror().map { String(cString: $0) } ?? "unknown error"))
        }
        return .success(SharedLibrary(name: name ?? path, handle: handle))
    }

    /// The function `name` as the C function pointer type `T`; never call it while `missing` is not empty.
    /// `T` is best the header's own declaration (`typedef __typeof__(&name) …_f` in the C module's shim.h):
    /// then a binding cannot disagree with the library's signature — a mismatch fails to compile instead of
    /// crashing at the first call.
    public mutating func function<T>(_ name: String, as type: T.Type = T.self) -> T {
        unsafeBitCast(address(name), to: type)
    }

    /// The raw address of `name` (for functions only called through C shims, such as variadic ones).
    public mutating func address(_ name: String) -> UnsafeMutableRawPointer {
        if let pointer = dlsym(handle, name) { return pointer }
        missing.append(name)
        return unsafeBitCast(sharedLibraryMissingSymbol, to: UnsafeMutableRawPointer.self)
    }
}

extension SharedLibrary {
    /// What messages say about a library a loader needs.
    public struct Requirement: Sendable {
        /// How messages name it ("libzbar").
        public let name: String
        /// The Debian package that installs it ("libzbar0").
        public let package: String
        /// What to do when a function is missing ("zbar 0.23 or newer is needed").
        public let remedy: String?

        public init(_ name: String, package: String, remedy: String? = nil) {
            self.name = name
            self.package = package
            self.remedy = remedy
        }
    }

    /// The one way a library is loaded: the first of `sonames` opened (`open(_:)`), its functions bound by
    /// `bind`, and the library refused as a whole when one of them is missing — so a loader never hands out a
    /// table with a stub in it, and every loader says the same things when it cannot load.
    public static func load<Functions>(
        _ sonames: [String], _ requirement: Requirement, bind: (inout SharedLibrary) -> Functions
    ) -> Result<Functions, StarlineError> {
        switch open(sonames) {
        case .success(var library): return library.bound(requirement, bind)
        case .failure(let error): return .failure(requirement.cannotLoad(error.reason))
        }
    }

    /// The same for the library at the absolute `path` (`open(path:)`): a file the trust rule refused is said
    /// to be refused, not missing.
    public static func load<Functions>(
        path: String, _ requirement: Requirement, bind: (inout SharedLibrary) -> Functions
    ) -> Result<Functions, StarlineError> {
        switch open(path: path, name: requirement.name) {
        case .success(var library): return library.bound(requirement, bind)
        case .failure(let error) where error.refused:
            return .failure(StarlineError(.internalError, "\(requirement.name) not loaded: \(error.reason)"))
        case .failure(let error): return .failure(requirement.cannotLoad(error.reason))
        }
    }

    /// Several libraries loaded as one, for a library whose functions are spread over the libraries under it
    /// (libsecret and GLib, GObject, GIO): each opened (`open(_:)`), the functions bound from all of them by
    /// `bind` (the libraries in the order given), and the whole refused when one cannot be opened or any function
    /// is missing, in the same words as `load(_:_:bind:)`.
    public static func load<Functions>(
        _ libraries: [(sonames: [String], requirement: Requirement)], bind: (inout [SharedLibrary]) -> Functions
    ) -> Result<Functions, StarlineError> {
        var opened: [SharedLibrary] = []
        for (sonames, requirement) in libraries {
            switch open(sonames) {
            case .success(let library): opened.append(library)
            case .failure(let error): return .failure(requirement.cannotLoad(error.reason))
            }
        }
        let functions = bind(&opened)
        for (index, library) in opened.enumerated() where !library.missing.isEmpty {
            let requirement = libraries[index].requirement
            let remedy = requirement.remedy.map { ": " + $0 } ?? ""
            return .failure(
                StarlineError(.internalError, "\(requirement.name) lacks \(library.missing.joined(separator: ", "))\(remedy)"))
        }
        return .success(functions)
    }

    private mutating func bound<Functions>(_ requirement: Requirement, _ bind: (inout SharedLibrary) -> Functions)
        -> Result<Functions, StarlineError>
    {
        let functions = bind(&self)
        guard missing.isEmpty else {
            let remedy = requirement.remedy.map { ": " + $0 } ?? ""
            return .failure(StarlineError(.internalError, "\(requirement.name) lacks \(missing.joined(separator: ", "))\(remedy)"))
        }
        return .success(functions)
    }
}

extension SharedLibrary.Requirement {
    func cannotLoad(_ reason: String) -> StarlineError {
        StarlineError(.internalError, "cannot load \(name) (install the \(package) package): \(reason)")
    }
}

/// Stands in for a symbol the library lacks; loaders refuse a library with missing symbols, so it is never called.
private let sharedLibraryMissingSymbol: @convention(c) () -> Void = {}
