import Foundation
import StarlineCore
import StarlineTestSupport

/// Builds test images from `sl-qr encode --format matrix` output, so multi-symbol and inverted
/// images come from our own encoder without another imaging tool.
struct ModuleMatrix {
    var rows: [[Bool]]
    var size: Int { rows.count }

    init(json: JSON) throws {
        guard let rows = json["rows"]?.arrayValue else { throw StarlineError(.data, "no rows") }
        self.rows = rows.compactMap { $0.stringValue.map { $0.map { $0 == "1" } } }
    }
}

struct Canvas {
    var width: Int
    var height: Int
    var pixels: [UInt8]

    init(width: Int, height: Int, gray: UInt8 = 255) {
        self.width = width
        self.height = height
        pixels = [UInt8](repeating: gray, count: width * height)
    }

    mutating func draw(_ m: ModuleMatrix, x: Int, y: Int, scale: Int) {
        for (r, row) in m.rows.enumerated() {
            for (c, dark) in row.enumerated() where dark {
                for dy in 0..<scale {
                    let base = (y + r * scale + dy) * width + x + c * scale
                    for dx in 0..<scale { pixels[base + dx] = 0 }
                }
            }
        }
    }

    func inverted() -> Canvas {
        var c = self
        c.pixels = pixels.map { 255 - $0 }
        return c
    }

    /// Binary PGM (P5).
    var pgm: [UInt8] { Array("P5\n\(width) \(height)\n255\n".utf8) + pixels }

    /// Plain PPM (P3) with the gray value in every channel.
    var plainPPM: [UInt8] {
        var s = "P3\n# written by the Starline tests\n\(width) \(height)\n255\n"
        for p in pixels { s += "\(p) \(p) \(p)\n" }
        return Array(s.utf8)
    }
}

extension TemporaryDirectory {
    func write(_ name: String, _ bytes: [UInt8]) -> String {
        let path = file(name)
        _ = FileManager.default.createFile(atPath: path, contents: Data(bytes))
        return path
    }

    func read(_ name: String) -> [UInt8] {
        Array(FileManager.default.contents(atPath: file(name)) ?? Data())
    }
}

/// The repository root, for checks of committed files.
let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .path
