/// A finished QR symbol: a square of `size × size` modules, without the quiet zone.
///
/// Modules are stored one byte each (0 light, 1 dark), row-major; a version-40 symbol
/// is 31 329 bytes, and byte access keeps the renderers' inner loops simple.
public struct QRMatrix: Sendable, Equatable {
    /// Symbol version, 1…40; `size == 17 + 4 * version`.
    public let version: Int
    public let level: QRErrorCorrection
    /// Modules per side.
    public let size: Int
    /// Row-major, `size * size` entries, 1 = dark.
    @usableFromInline let modules: [UInt8]

    /// Builds a matrix from row-major modules (`true` = dark).
    /// - Precondition: `modules.count == size * size` and `size > 0`.
    public init(version: Int, level: QRErrorCorrection, size: Int, modules: [Bool]) {
        precondition(size > 0 && modules.count == size * size, "QRMatrix needs size*size modules")
        self.init(version: version, level: level, size: size, packed: modules.map { $0 ? 1 : 0 })
    }

    /// Internal: `packed` already holds 0/1 bytes.
    init(version: Int, level: QRErrorCorrection, size: Int, packed: [UInt8]) {
        self.version = version
        self.level = level
        self.size = size
        self.modules = packed
    }

    /// `true` when the module in column `x`, row `y` (origin top left) is dark.
    /// - Precondition: `0 <= x < size`, `0 <= y < size`.
    @inlinable
    public subscript(x: Int, y: Int) -> Bool {
        precondition(x >= 0 && x < size && y >= 0 && y < size, "QRMatrix index out of range")
        return modules[y * size + x] != 0
    }

    /// Like the subscript, but positions outside the symbol (the quiet zone) are light.
    func isDark(x: Int, y: Int) -> Bool {
        x >= 0 && x < size && y >= 0 && y < size && modules[y * size + x] != 0
    }
}
