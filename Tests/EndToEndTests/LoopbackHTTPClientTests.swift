import StarlineTestSupport
import Testing

/// The tests' own HTTP client reads an answer as curl did: the status and headers of the final answer, the body by
/// its length or its chunks, and curl's exit code for each way an exchange can end badly (the dev server tests
/// assert on those codes: a dropped connection, a timeout).
@Suite struct LoopbackHTTPClientTests {
    func answer(_ text: String, _ ending: LoopbackHTTPClient.Ending = .end, method: String = "GET") -> HTTPResult {
        LoopbackHTTPClient.parse(Array(text.utf8), ending: ending, method: method)
    }

    @Test("a whole answer: status, headers by lowercased name, the body by Content-Length")
    func wholeAnswer() {
        let r = answer("HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nX-A:  b \r\nContent-Length: 7\r\n\r\n{\"a\":1}")
        #expect(r.status == 201 && r.curlExit == 0)
        #expect(r.header("Content-Type") == "application/json" && r.header("x-a") == "b")
        #expect(r.text == "{\"a\":1}")
    }

    @Test("interim 100 answers are skipped; a chunked body is decoded; HEAD and 204 have none")
    func interimAndChunked() {
        let r = answer(
            """
            HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: \
            chunked\r\n\r\n3;x=y\r\nabc\r\nA\r\n0123456789\r\n0\r\n\r\n
            """)
        #expect(r.status == 200 && r.curlExit == 0 && r.text == "abc0123456789")
        #expect(answer("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", method: "HEAD").body.isEmpty)
        #expect(answer("HTTP/1.1 204 No Content\r\n\r\n").curlExit == 0)
    }

    @Test("curl's codes: nothing answered 52, reset 56, timed out 28, a short or unfinished body 18, not HTTP 8")
    func failures() {
        #expect(answer("").status == 0 && answer("").curlExit == 52)
        #expect(answer("HTTP/1.1 200 OK\r\nContent-Le", .reset).curlExit == 56)
        #expect(answer("HTTP/1.1 200 OK\r\nContent-Le").status == 0 && answer("HTTP/1.1 200 OK\r\nContent-Le").curlExit == 56)
        #expect(answer("", .timedOut).curlExit == 28)
        let short = answer("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc")
        #expect(short.status == 200 && short.curlExit == 18 && short.text == "abc")
        #expect(answer("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab").curlExit == 18)
        #expect(answer("SSH-2.0-OpenSSH\r\n\r\n").curlExit == 8)
    }

    @Test("a real exchange with a dev server; nobody listening is 7")
    func realExchange() throws {
        let server = try DevServerProcess()
        let reply = try server.request("GET", "/.well-known/oauth-authorization-server")
        #expect(reply.status == 200 && reply.curlExit == 0)
        #expect(try reply.json()["issuer"]?.stringValue?.hasPrefix("http://127.0.0.1:") == true)
        let port = server.port
        server.kill()
        #expect(try server.request("GET", "http://127.0.0.1:\(port)/", maxTime: 5).curlExit == 7)
    }
}
