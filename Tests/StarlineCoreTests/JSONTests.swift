import Testing
@testable import StarlineCore

@Suite struct JSONTests {
    @Test func keepsKeyOrderAndRoundTrips() throws {
        let text = #"{"z":1,"a":[true,false,null],"m":{"k":"v"},"d":1.5,"e":-0.25,"big":9007199254740993}"#
        let value = try JSON.parse(text)
        #expect(value.serialized() == text)
        #expect(value["big"]?.intValue == 9007199254740993)
    }

    @Test func escapesControlCharactersButKeepsUnicode() throws {
        let value = JSON.string("a\"b\\c\n\u{01}星\u{1F600}\u{7F}")
        let text = value.serialized()
        #expect(text == #""a\"b\\c\n\u0001星😀\u007f""#)
        #expect(try JSON.parse(text) == value)
    }

    @Test("C1 controls, bidi controls and zero-width characters are escaped: the same value, visible on a terminal")
    func escapesCharactersHiddenOnATerminal() throws {
        let value = JSON.string("a\u{9B}2J\u{202E}b\u{200B}c\u{2066}d\u{FEFF}e\u{061C}f\u{A0}星é")
        let text = value.serialized()
        #expect(text == #""a\u009b2J\u202eb\u200bc\u2066d\ufeffe\u061cf\#u{A0}星é""#)
        #expect(try JSON.parse(text) == value)
    }

    @Test func escapesJavaScriptLineTerminatorsAndRoundTripsLargeDocuments() throws {
        #expect(JSON.string("a\u{2028}b\u{2029}c").serialized() == #""a\u2028b\u2029c""#)
        let big = JSON.array((0..<5000).map { .object([("i", .int($0)), ("s", .string("星 \($0) \"q\""))]) })
        let text = big.serialized()
        #expect(try JSON.parse(text) == big)
        #expect(text.utf8.count > 100_000)
    }

    @Test func decodesEscapesAndSurrogatePairs() throws {
        #expect(try JSON.parse(#""\u00e9\ud83d\ude00\/\t""#) == .string("é😀/\t"))
    }

    @Test(arguments: ["", "{", "[1,]", "{\"a\" 1}", "01", "1.", "\"\\ud800\"", "\"a\nb\"", "tru", "[1] x", "\"\\x\"", "{\"a\":1,}"])
    func rejectsMalformedInput(_ text: String) {
        #expect(throws: StarlineError.self) { try JSON.parse(text) }
        do { _ = try JSON.parse(text) } catch let e as StarlineError {
            #expect(e.code == .data)
            #expect(e.exitStatus == .data)
        } catch { Issue.record("unexpected error \(error)") }
    }

    @Test func rejectsInvalidUTF8() {
        #expect(throws: StarlineError.self) { try JSON.parse([0x22, 0xFF, 0x22]) }
    }

    @Test func limitsNestingDepth() {
        let deep = String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)
        #expect(throws: StarlineError.self) { try JSON.parse(deep) }
    }

    @Test func prettyPrintsWithTwoSpaces() {
        let value = JSON.object([("a", .array([.int(1)])), ("b", .object([]))])
        #expect(value.serialized(.pretty) == "{\n  \"a\": [\n    1\n  ],\n  \"b\": {}\n}")
    }

    @Test func setReplacesInPlace() {
        var value = JSON.object([("a", .int(1)), ("b", .int(2))])
        value.set("a", .int(3))
        value.set("c", .null)
        #expect(value.serialized() == #"{"a":3,"b":2,"c":null}"#)
    }
}

@Suite struct Base64Tests {
    @Test(arguments: [
        ("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foob", "Zm9vYg=="), ("fooba", "Zm9vYmE="), ("foobar", "Zm9vYmFy")
    ])
    func rfc4648Vectors(_ plain: String, _ encoded: String) {
        #expect(Base64.encode(Array(plain.utf8)) == encoded)
        #expect(Base64.decode(encoded) == Array(plain.utf8))
    }

    @Test func binaryRoundTrip() {
        let bytes = (0..<300).map { UInt8($0 % 256) }
        #expect(Base64.decode(Base64.encode(bytes)) == bytes)
    }

    @Test func rejectsGarbage() {
        #expect(Base64.decode("Zm9v!") == nil)
        #expect(Base64.decode("Z") == nil)
        #expect(Base64.decode("Zg==Zg") == nil)
    }
}

@Suite struct ExitStatusTests {
    @Test func everyCodeMapsToTheDocumentedStatus() {
        #expect(StarlineError(.usage, "x").exitStatus.rawValue == 2)
        #expect(StarlineError(.invalidURL, "x").exitStatus.rawValue == 2)
        #expect(StarlineError(.notLoggedIn, "x").exitStatus.rawValue == 3)
        #expect(StarlineError(.sessionRevoked, "x").exitStatus.rawValue == 4)
        #expect(StarlineError(.accountRestricted, "x").exitStatus.rawValue == 4)
        #expect(StarlineError(.forbidden, "x").exitStatus.rawValue == 5)
        #expect(StarlineError(.notFound, "x").exitStatus.rawValue == 6)
        #expect(StarlineError(.network, "x").exitStatus.rawValue == 7)
        #expect(StarlineError(.partial, "x").exitStatus.rawValue == 8)
        #expect(StarlineError(.noResult, "x").exitStatus.rawValue == 9)
        #expect(StarlineError(.storage, "x").exitStatus.rawValue == 10)
        #expect(StarlineError(.sessionChanged, "x").exitStatus.rawValue == 11)
        #expect(StarlineError(.noSymbol, "x").exitStatus.rawValue == 12)
        #expect(StarlineError(.capacityExceeded, "x").exitStatus.rawValue == 12)
        #expect(StarlineError(.wrongPassphrase, "x").exitStatus.rawValue == 13)
        // A code declares its exit status (no string literal falls through to 1 unnoticed).
        #expect(StarlineError(ErrorCode("SOMETHING_NEW", exit: .internalError), "x").exitStatus.rawValue == 1)
    }

    @Test func errorObjectShape() {
        let e = StarlineError(.storage, "disk full", details: .object([("path", .string("/x"))]))
        #expect(
            e.json.serialized() == #"{"error":{"code":"STORAGE_ERROR","message":"disk full","retryable":false,"details":{"path":"/x"}}}"#)
    }
}
