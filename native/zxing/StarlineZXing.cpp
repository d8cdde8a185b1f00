// See include/starline_zxing.h.
#define ZX_USE_UTF8 1
#include "starline_zxing.h"

#include <ZXing/ReadBarcode.h>
#include <ZXing/ZXVersion.h>

#include <map>
#include <new>
#include <string>
#include <vector>

struct starline_zxing_results {
    std::vector<ZXing::Result> symbols;
    /// Each symbol's bytesECI(), kept so the pointer handed out stays valid until starline_zxing_free.
    std::vector<ZXing::ByteArray> bytesECI;
};

#define STARLINE_STRING(x) #x
#define STARLINE_VERSION(a, b, c) STARLINE_STRING(a) "." STARLINE_STRING(b) "." STARLINE_STRING(c)

extern "C" starline_zxing_results *starline_zxing_read(const uint8_t *pixels, int32_t width, int32_t height) {
    if (pixels == nullptr || width <= 0 || height <= 0) return nullptr;
    try {
        ZXing::DecodeHints hints;
        hints.setFormats(ZXing::BarcodeFormat::QRCode);
        // "Spend more time to try to find a barcode; optimize for accuracy, not speed" and "Also try
        // detecting code in 90, 180 and 270 degree rotated images" (DecodeHints.h); downscaling (on by default
        // in 1.4 for large images) finds codes blurred over many pixels.
        hints.setTryHarder(true);
        hints.setTryRotate(true);
        hints.setTryDownscale(true);
        ZXing::ImageView view(pixels, width, height, ZXing::ImageFormat::Lum);
        auto found = ZXing::ReadBarcodes(view, hints);
        // A structured-append sequence found whole is one payload (ISO/IEC 18004: its symbols' data are
        // concatenated in order); MergeStructuredAppendSequence joins one sequence and returns an invalid result
        // when a symbol is missing, and then its parts are kept as they are and the caller marks them
        // (starline_zxing_sequence).
        auto *results = new starline_zxing_results;
        std::map<std::string, ZXing::Results> sequences;
        for (auto &result : found) {
            if (!result.isValid()) continue;
            if (result.isPartOfSequence()) {
                sequences[result.sequenceId()].push_back(std::move(result));
            } else {
                results->symbols.push_back(std::move(result));
            }
        }
        for (auto &[id, parts] : sequences) {
            ZXing::Result joined = ZXing::MergeStructuredAppendSequence(parts);
            if (joined.isValid()) {
                results->symbols.push_back(std::move(joined));
            } else {
                for (auto &part : parts) results->symbols.push_back(std::move(part));
            }
        }
        for (auto &symbol : results->symbols) results->bytesECI.push_back(symbol.bytesECI());
        return results;
    } catch (...) {
        return nullptr;
    }
}

extern "C" int32_t starline_zxing_count(const starline_zxing_results *results) {
    return results ? static_cast<int32_t>(results->symbols.size()) : 0;
}

static const ZXing::Result *symbol_at(const starline_zxing_results *results, int32_t index) {
    if (results == nullptr || index < 0 || static_cast<size_t>(index) >= results->symbols.size()) return nullptr;
    return &results->symbols[static_cast<size_t>(index)];
}

extern "C" const uint8_t *starline_zxing_bytes(const starline_zxing_results *results, int32_t index, size_t *length) {
    const ZXing::Result *symbol = symbol_at(results, index);
    if (symbol == nullptr) {
        if (length) *length = 0;
        return nullptr;
    }
    const ZXing::ByteArray &bytes = symbol->bytes();
    if (length) *length = bytes.size();
    return bytes.data();
}

extern "C" const uint8_t *starline_zxing_bytes_eci(const starline_zxing_results *results, int32_t index, size_t *length) {
    if (symbol_at(results, index) == nullptr) {
        if (length) *length = 0;
        return nullptr;
    }
    const ZXing::ByteArray &bytes = results->bytesECI[static_cast<size_t>(index)];
    if (length) *length = bytes.size();
    return bytes.data();
}

extern "C" void starline_zxing_sequence(const starline_zxing_results *results, int32_t index, int32_t *position, int32_t *count) {
    const ZXing::Result *symbol = symbol_at(results, index);
    // A joined sequence reports the size of the sequence it came from, but is whole: only a lone part counts.
    bool part = symbol != nullptr && symbol->isPartOfSequence() && symbol->sequenceIndex() >= 0;
    if (position) *position = part ? symbol->sequenceIndex() : -1;
    if (count) *count = part ? symbol->sequenceSize() : -1;
}

extern "C" void starline_zxing_corners(const starline_zxing_results *results, int32_t index, int32_t xy[8]) {
    const ZXing::Result *symbol = symbol_at(results, index);
    if (symbol == nullptr) {
        for (int i = 0; i < 8; i++) xy[i] = 0;
        return;
    }
    const ZXing::Position &p = symbol->position();
    const ZXing::PointI corners[4] = {p.topLeft(), p.topRight(), p.bottomRight(), p.bottomLeft()};
    for (int i = 0; i < 4; i++) {
        xy[2 * i] = corners[i].x;
        xy[2 * i + 1] = corners[i].y;
    }
}

extern "C" int32_t starline_zxing_orientation(const starline_zxing_results *results, int32_t index) {
    const ZXing::Result *symbol = symbol_at(results, index);
    return symbol ? symbol->orientation() : 0;
}

extern "C" void starline_zxing_free(starline_zxing_results *results) { delete results; }

extern "C" const char *starline_zxing_version(void) {
    return STARLINE_VERSION(ZXING_VERSION_MAJOR, ZXING_VERSION_MINOR, ZXING_VERSION_PATCH);
}
