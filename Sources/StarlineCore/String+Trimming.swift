extension String {
    /// The string without leading and trailing whitespace (spaces, tabs, CR, LF and other Unicode whitespace).
    public func trimmingWhitespace() -> String {
        var s = Substring(self)
        while s.first?.isWhitespace == true { s.removeFirst() }
        while s.last?.isWhitespace == true { s.removeLast() }
        return String(s)
    }
}
