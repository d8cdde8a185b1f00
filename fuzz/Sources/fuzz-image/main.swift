import FuzzSupport
import StarlineCore
import StarlineQR

// The PNG, JPEG and PBM/PGM/PPM loaders of sl-qr decode, with a small pixel limit (a bomb must be refused
// before its buffer is allocated, whatever its header says).
Fuzz.run { bytes in
    _ = try? ImageLoader.load(bytes: bytes, name: "fuzz", maxPixels: 1 << 22)
}
