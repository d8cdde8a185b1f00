// A C interface to ZXing-C++ (Debian's libzxing2), built as the shared object libStarlineZXing.so
// that sl-qr decode loads with dlopen as its second engine, when libzbar found nothing (StarlineQR's
// ZXingLibrary): Swift cannot call C++ directly, and linking ZXing would cost every start of sl-qr.
// Nothing here throws: every C++ exception is caught at this boundary.
#ifndef STARLINE_ZXING_H
#define STARLINE_ZXING_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define STARLINE_ZXING_EXPORT __attribute__((visibility("default")))

/// The QR symbols ZXing found in one image; owned by the caller, released with starline_zxing_free.
typedef struct starline_zxing_results starline_zxing_results;

/// Reads the QR symbols of an 8-bit grey image (`width` pixels a row, no padding), trying harder and
/// rotated, as ZXing's DecodeHints allow; the symbols of a structured-append sequence found complete are
/// joined into one (ZXing's MergeStructuredAppendSequences). NULL when ZXing failed (out of memory, or an exception).
STARLINE_ZXING_EXPORT starline_zxing_results *starline_zxing_read(const uint8_t *pixels, int32_t width, int32_t height);

/// How many symbols were found (0 or more).
STARLINE_ZXING_EXPORT int32_t starline_zxing_count(const starline_zxing_results *results);

/// The payload bytes of symbol `index` as stored (ZXing's Result::bytes(): no charset conversion); valid
/// until starline_zxing_free. `*length` receives the byte count.
STARLINE_ZXING_EXPORT const uint8_t *starline_zxing_bytes(const starline_zxing_results *results, int32_t index, size_t *length);

/// The payload of symbol `index` in the ECI protocol (ZXing's Result::bytesECI()): the symbology identifier
/// (`]Q` and a digit), then the bytes with every backslash doubled and each ECI designator written as a
/// backslash and six digits where it applies. Valid until starline_zxing_free.
STARLINE_ZXING_EXPORT const uint8_t *starline_zxing_bytes_eci(const starline_zxing_results *results, int32_t index, size_t *length);

/// Symbol `index`'s place in a structured-append sequence whose other symbols were not all found (complete
/// sequences come back joined, as one symbol): `*position` 0-based, `*count` symbols in all; both -1 when the
/// symbol is not such a part.
STARLINE_ZXING_EXPORT void starline_zxing_sequence(const starline_zxing_results *results, int32_t index, int32_t *position, int32_t *count);

/// The corners of symbol `index` in image pixels, in the symbol's own frame: top-left (the origin finder
/// pattern), top-right, bottom-right, bottom-left, as x0 y0 x1 y1 x2 y2 x3 y3.
STARLINE_ZXING_EXPORT void starline_zxing_corners(const starline_zxing_results *results, int32_t index, int32_t xy[8]);

/// The symbol's rotation in degrees, clockwise (ZXing's Result::orientation()).
STARLINE_ZXING_EXPORT int32_t starline_zxing_orientation(const starline_zxing_results *results, int32_t index);

STARLINE_ZXING_EXPORT void starline_zxing_free(starline_zxing_results *results);

/// The ZXing-C++ version the shim was built against, e.g. "1.4.0".
STARLINE_ZXING_EXPORT const char *starline_zxing_version(void);

#ifdef __cplusplus
}
#endif

#endif
