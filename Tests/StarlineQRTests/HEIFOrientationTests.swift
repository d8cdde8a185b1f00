import Foundation
import StarlineCore
import StarlineQR
import StarlineTestSupport
import Testing

/// A HEIC's rotation is the container's (`irot`, HEIF's own orientation; an Exif orientation is not applied on top
/// of it): a phone photo taken sideways loads upright. The files are written by libheif's own encoder through its C
/// API (heif-enc 1.15 writes no `irot`), from Python's ctypes, with `heif_encoding_options.image_orientation`.
@Suite struct HEIFOrientationTests {
    /// Encodes IN.png as HEVC at quality 90 into OUT.heic with the Exif-numbered orientation ORIENTATION.
    static let encoder = #"""
        import ctypes, sys
        from PIL import Image
        h = ctypes.CDLL("libheif.so.1")
        class Err(ctypes.Structure):
            _fields_ = [("code", ctypes.c_int), ("subcode", ctypes.c_int), ("message", ctypes.c_char_p)]
        class Opts(ctypes.Structure):
            _fields_ = [("version", ctypes.c_uint8), ("save_alpha_channel", ctypes.c_uint8), ("macos", ctypes.c_uint8),
                        ("two_colr", ctypes.c_uint8), ("nclx", ctypes.c_void_p), ("macos_no_nclx", ctypes.c_uint8),
                        ("image_orientation", ctypes.c_int)]
        for name in ["heif_init", "heif_context_get_encoder_for_format", "heif_encoder_set_lossy_quality", "heif_image_create",
                     "heif_image_add_plane", "heif_context_encode_image", "heif_context_write_to_file"]:
            getattr(h, name).restype = Err
        h.heif_context_alloc.restype = ctypes.c_void_p
        h.heif_encoding_options_alloc.restype = ctypes.POINTER(Opts)
        h.heif_image_get_plane.restype = ctypes.POINTER(ctypes.c_uint8)
        def ok(e, what):
            if e.code != 0: sys.exit(f"{what}: {e.message}")
        h.heif_init(None)
        ctx = ctypes.c_void_p(h.heif_context_alloc())
        enc = ctypes.c_void_p()
        ok(h.heif_context_get_encoder_for_format(ctx, 1, ctypes.byref(enc)), "encoder")
        ok(h.heif_encoder_set_lossy_quality(enc, 90), "quality")
        im = Image.open(sys.argv[1]).convert("RGB")
        w, ht = im.size
        img = ctypes.c_void_p()
        ok(h.heif_image_create(w, ht, 1, 10, ctypes.byref(img)), "image")
        ok(h.heif_image_add_plane(img, 10, w, ht, 8), "plane")
        stride = ctypes.c_int()
        plane = h.heif_image_get_plane(img, 10, ctypes.byref(stride))
        data = im.tobytes()
        for y in range(ht):
            ctypes.memmove(ctypes.addressof(plane.contents) + y * stride.value, data[y * w * 3:(y + 1) * w * 3], w * 3)
        opts = h.heif_encoding_options_alloc()
        if opts.contents.version < 5: sys.exit("libheif too old for image_orientation")
        opts.contents.image_orientation = int(sys.argv[3])
        ok(h.heif_context_encode_image(ctx, img, enc, opts, None), "encode")
        ok(h.heif_context_write_to_file(ctx, sys.argv[2].encode()), "write")
        """#

    @Test(
        """
        an irot of 90° (orientation 6) and none: the image loads turned as the container says, pixels close to the \
        source
        """)
    func heicRotationIsApplied() throws {
        let dir = try TestImages.temporaryDirectory()
        // 48×32: not square, so a rotation shows in the size; left half dark, right half light.
        let source = GrayImage(width: 48, height: 32, pixels: (0..<(48 * 32)).map { $0 % 48 < 24 ? 30 : 220 })
        let pgm = dir.appendingPathComponent("in.pgm"), png = dir.appendingPathComponent("in.png")
        try TestImages.write(TestImages.pgm(source), to: pgm)
        let convert = try Tools.runInstalled(
            "/usr/bin/python3",
            ["-c", "import sys\nfrom PIL import Image\nImage.open(sys.argv[1]).convert('RGB').save(sys.argv[2])", pgm.path, png.path])
        try #require(convert.status == 0, "Pillow: \(convert.stderrText)")
        var loaded: [Int: GrayImage] = [:]
        for orientation in [1, 6] {
            let out = dir.appendingPathComponent("o\(orientation).heic")
            let run = try Tools.runInstalled("/usr/bin/python3", ["-c", Self.encoder, png.path, out.path, String(orientation)])
            try #require(run.status == 0, "libheif's encoder (libheif1, python3): \(run.stderrText)")
            loaded[orientation] = try ImageLoader.load(bytes: Array(try Data(contentsOf: out)), name: "o\(orientation).heic")
        }
        let upright = try #require(loaded[1]), turned = try #require(loaded[6])
        #expect(upright.width == 48 && upright.height == 32)
        #expect(turned.width == 32 && turned.height == 48, "\(turned.width)×\(turned.height)")
        // Turned 90° clockwise: the source's left (dark) half is now the top, its right (light) half the bottom.
        let top = turned.pixels[(8 * 32)..<(8 * 32 + 32)], bottom = turned.pixels[(40 * 32)..<(40 * 32 + 32)]
        #expect(top.allSatisfy { $0 < 80 } && bottom.allSatisfy { $0 > 170 }, "top \(Array(top)), bottom \(Array(bottom))")
    }
}
