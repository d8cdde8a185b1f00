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

    /// Why no soname loaded: `dlerror()`'s text.
    public struct LoadError: Error {
        public let reason: String
    }

    /// Opens the first soname that loads (`RTLD_LAZY | RTLD_LOCAL`).
    ///
    /// Lazy, as the dynamic loader binds a program's own libraries: dlopen(3) says RTLD_NOW means "all
    /// undefined symbols in the shared object are resolved before dlopen() returns" — for libcurl that is
    /// every function its ~30 dependencies import (LDAP, Kerberos, SSH, …), ~1,900 symbol lookups (~20% of
    /// `sl-sessions list`'s instructions) that curl(1) itself never does for the parts a request does not
    /// touch. What we call is resolved and checked one by one with `dlsym` (`function(_:as:)`, `missing`).
    public static func open(_ sonames: [String]) -> Result<SharedLibrary, LoadError> {
        for soname in sonames {
            if let handle = dlopen(soname, RTLD_LAZY | RTLD_LOCAL) { return .success(SharedLibrary(name: soname, handle: handle)) }
        }
        return .failure(LoadError(reason: dlerror().map { String(cString: $0) } ?? "unknown error"))
    }

    /// The function `name` as the C function pointer type `T`; never call it while `missing` is not empty.
    public mutating func function<T>(_ name: String, as type: T.Type) -> T {
        unsafeBitCast(address(name), to: type)
    }

    /// The raw address of `name` (for functions only called through C shims, such as variadic ones).
    public mutating func address(_ name: String) -> UnsafeMutableRawPointer {
        if let pointer = dlsym(handle, name) { return pointer }
        missing.append(name)
        return unsafeBitCast(sharedLibraryMissingSymbol, to: UnsafeMutableRawPointer.self)
    }
}

/// Stands in for a symbol the library lacks; loaders refuse a library with missing symbols, so it is never called.
private let sharedLibraryMissingSymbol: @convention(c) () -> Void = {}
