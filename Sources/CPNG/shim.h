#include <png.h>
// zlib (zlib1g-dev, a dependency of libpng-dev): sl-qr writes its 1-bit PNGs itself (PNGWriter).
#include <zlib.h>

// PNG_IMAGE_ROW_STRIDE / PNG_IMAGE_SIZE are function-like macros.
static inline png_uint_32 starline_png_image_row_stride(const png_image *image) {
    return PNG_IMAGE_ROW_STRIDE(*image);
}
static inline png_alloc_size_t starline_png_image_size(const png_image *image) {
    return PNG_IMAGE_SIZE(*image);
}
static inline int starline_png_image_failed(const png_image *image) {
    return PNG_IMAGE_FAILED(*image);
}
// "A largest size for the PNG data stream ... This is a safe upper bound on the size of the
// compressed data": lets the writer compress once into a buffer of this size.
static inline png_alloc_size_t starline_png_image_png_size_max(const png_image *image) {
    return PNG_IMAGE_PNG_SIZE_MAX(*image);
}
// deflateInit2 is a function-like macro (it passes ZLIB_VERSION and sizeof(z_stream) to deflateInit2_).
static inline int starline_deflate_init2(z_streamp stream, int level, int windowBits, int memLevel) {
    return deflateInit2(stream, level, Z_DEFLATED, windowBits, memLevel, Z_DEFAULT_STRATEGY);
}
// Z_FILTERED: "for data produced by a filter (or predictor) … Filtered data consists mostly of small values
// with a somewhat random distribution. In this case, the compression algorithm is tuned to compress them
// better" (zlib.h) — what PNG's Up filter leaves.
static inline int starline_deflate_init2_filtered(z_streamp stream, int level, int windowBits, int memLevel) {
    return deflateInit2(stream, level, Z_DEFLATED, windowBits, memLevel, Z_FILTERED);
}
