import Foundation
import StarlineCore
import StarlineLoader
import StarlineTestSupport
import Testing

/// The one way a dlopen'ed library is loaded (libzbar, libcurl, libwebp, libtiff, libheif, libcrypto, libsecret, the
/// ZXing-C++ shim): opened,
/// bound, and refused as a whole with the same words when it is missing, lacks a function or breaks the trust rule.
@Suite struct SharedLibraryTests {
    typealias ZlibVersion = @convention(c) () -> UnsafePointer<CChar>?
    static let zlib = SharedLibrary.Requirement("zlib", package: "zlib1g", remedy: "zlib 1.2 or newer is needed")

    @Test("a library that is there is bound, and its functions answer")
    func boundLibraryAnswers() throws {
        let version = try SharedLibrary.load(["libz.so.1"], Self.zlib) { library in library.function("zlibVersion") as ZlibVersion }.get()
        let text = String(cString: try #require(version()))
        #expect(text.hasPrefix("1."), "\(text)")
    }

    @Test("a library none of whose sonames is installed says which package installs it")
    func missingLibraryNamesItsPackage() {
        let result = SharedLibrary.load(["libstarline-none.so.9", "libstarline-none.so"], .init("libnone", package: "libnone9")) { _ in 0 }
        guard case .failure(let error) = result else { Issue.record("loaded a library that does not exist"); return }
        #expect(error.code == .internalError)
        #expect(
            error.message.hasPrefix("cannot load libnone (install the libnone9 package): libstarline-none.so.9: not found in /usr/lib/"))
        #expect(error.message.contains("; libstarline-none.so: not found"))
    }

    @Test("a library lacking one function is refused as a whole, the function named, never half-bound")
    func lackingFunctionRefusesTheLibrary() {
        var bound = false
        let result = SharedLibrary.load(["libz.so.1"], Self.zlib) { library in
            bound = true
            return (library.function("zlibVersion") as ZlibVersion, library.address("starline_no_such_function"))
        }
        #expect(bound)
        guard case .failure(let error) = result else { Issue.record("a table with a stub was handed out"); return }
        #expect(error.message == "zlib lacks starline_no_such_function: zlib 1.2 or newer is needed")
    }

    @Test("a library file others may write is refused by the trust rule, not reported as missing")
    func untrustedFileIsRefusedNotMissing() throws {
        let directory = TemporaryDirectory("shared-library")
        let copy = directory.file("libz.so.1")
        // The file itself, not the soname's symbolic link (copied as a link, it would dangle).
        let installed = URL(fileURLWithPath: "/usr/lib/x86_64-linux-gnu/libz.so.1").resolvingSymlinksInPath().path
        try FileManager.default.copyItem(atPath: installed, toPath: copy)
        #expect(chmod(copy, 0o664) == 0)
        let refused = SharedLibrary.load(path: copy, Self.zlib) { library in library.function("zlibVersion") as ZlibVersion }
        guard case .failure(let error) = refused else { Issue.record("loaded a group-writable library"); return }
        #expect(error.message.hasPrefix("zlib not loaded: "), "\(error.message)")
        #expect(error.message.contains("writable by others (mode 0664)") && !error.message.contains("install the"), "\(error.message)")
        // The same file, writable by its owner alone, loads.
        #expect(chmod(copy, 0o644) == 0)
        let version = try SharedLibrary.load(path: copy, Self.zlib) { library in library.function("zlibVersion") as ZlibVersion }.get()
        #expect(version() != nil)
    }

    @Test(
        """
        libraries loaded as one (libsecret and GLib): bound from each, refused whole when one is missing or lacks a \
        function
        """)
    func severalLibrariesLoadAsOne() throws {
        typealias Cosine = @convention(c) (Double) -> Double
        let libm = SharedLibrary.Requirement("libm", package: "libc6")
        let both = try SharedLibrary.load([(["libz.so.1"], Self.zlib), (["libm.so.6"], libm)]) { libraries in
            (libraries[0].function("zlibVersion") as ZlibVersion, libraries[1].function("cos") as Cosine)
        }.get()
        #expect(both.1(0) == 1 && both.0() != nil)
        // The second lacks a function: the whole is refused, naming that library and function.
        let lacking = SharedLibrary.load([(["libz.so.1"], Self.zlib), (["libm.so.6"], libm)]) { libraries in
            (libraries[0].function("zlibVersion") as ZlibVersion, libraries[1].address("starline_no_such_function"))
        }
        guard case .failure(let error) = lacking else { Issue.record("a table with a stub was handed out"); return }
        #expect(error.message == "libm lacks starline_no_such_function")
        // One not installed: nothing is bound at all, and the message names its package.
        var bound = false
        let missing = SharedLibrary.load([(["libz.so.1"], Self.zlib), (["libstarline-none.so.9"], .init("libnone", package: "libnone9"))]) {
            _ in bound = true
        }
        guard case .failure(let absent) = missing else { Issue.record("loaded a library that does not exist"); return }
        #expect(!bound && absent.message.hasPrefix("cannot load libnone (install the libnone9 package): "), "\(absent.message)")
    }
}
