extension Substring {
    /// The pieces between occurrences of the scalar `separator` (URL paths, file paths).
    ///
    /// Not `split(separator:)`, which compares Characters: a separator followed by a combining mark or an
    /// emoji modifier ("/\u{301}x", "/🏻") is one Character, so the string would not split there.
    public func splitAtScalar(_ separator: Unicode.Scalar, omittingEmptySubsequences: Bool = false) -> [Substring] {
        unicodeScalars.split(separator: separator, omittingEmptySubsequences: omittingEmptySubsequences).map { Substring($0) }
    }
}

extension String {
    /// See `Substring.splitAtScalar`.
    public func splitAtScalar(_ separator: Unicode.Scalar, omittingEmptySubsequences: Bool = false) -> [Substring] {
        self[...].splitAtScalar(separator, omittingEmptySubsequences: omittingEmptySubsequences)
    }
}
