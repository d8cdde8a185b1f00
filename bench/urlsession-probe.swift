import Foundation
import FoundationNetworking

// bench/sessions compiles this (swiftc -O -static-stdlib, like the tools) to show what the transport the
// sessions issue first named — URLSession from FoundationNetworking — costs a command-line tool here:
// `urlsession-probe URL TOKEN` is GET URL with a bearer token; without arguments it only starts.
let args = CommandLine.arguments
if args.count < 3 { print("probe 0.1"); exit(0) }
var request = URLRequest(url: URL(string: args[1])!)
request.setValue("Bearer \(args[2])", forHTTPHeaderField: "Authorization")
let done = DispatchSemaphore(value: 0)
nonisolated(unsafe) var status = 1
URLSession.shared.dataTask(with: request) { data, response, error in
    if let data, (response as? HTTPURLResponse)?.statusCode == 200 { FileHandle.standardOutput.write(data); status = 0 }
    done.signal()
}.resume()
done.wait()
exit(Int32(status))
