import StarlineCore

/// `withUnsafeBytes` / `withUnsafeMutableBytes` for bodies that throw `StarlineError`: the standard library's
/// versions are `rethrows`, which widens a typed error to `any Error`.
extension Array where Element == UInt8 {
    func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws(StarlineError) -> R) throws(StarlineError) -> R {
        let result: Result<R, StarlineError> = withUnsafeBytes { b in Result { () throws(StarlineError) -> R in try body(b) } }
        return try result.get()
    }

    mutating func withMutableBytes<R>(_ body: (UnsafeMutableRawBufferPointer) throws(StarlineError) -> R) throws(StarlineError) -> R {
        let result: Result<R, StarlineError> = withUnsafeMutableBytes { b in Result { () throws(StarlineError) -> R in try body(b) } }
        return try result.get()
    }
}
