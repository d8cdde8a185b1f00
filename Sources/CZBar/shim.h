#include <zbar.h>

// zbar_fourcc is a function-like macro; Swift cannot call it.
static inline unsigned long starline_zbar_fourcc(char a, char b, char c, char d) {
    return zbar_fourcc(a, b, c, d);
}

// The type of each function ZBarLibrary looks up with dlsym, taken from zbar.h's own declaration, so a
// binding cannot disagree with the library's signature (a mismatch fails to compile, not at the first call).
typedef __typeof__(&zbar_image_scanner_create) starline_zbar_image_scanner_create_f;
typedef __typeof__(&zbar_image_scanner_destroy) starline_zbar_image_scanner_destroy_f;
typedef __typeof__(&zbar_image_scanner_set_config) starline_zbar_image_scanner_set_config_f;
typedef __typeof__(&zbar_image_scanner_enable_cache) starline_zbar_image_scanner_enable_cache_f;
typedef __typeof__(&zbar_scan_image) starline_zbar_scan_image_f;
typedef __typeof__(&zbar_image_create) starline_zbar_image_create_f;
typedef __typeof__(&zbar_image_destroy) starline_zbar_image_destroy_f;
typedef __typeof__(&zbar_image_set_format) starline_zbar_image_set_format_f;
typedef __typeof__(&zbar_image_set_size) starline_zbar_image_set_size_f;
typedef __typeof__(&zbar_image_set_data) starline_zbar_image_set_data_f;
typedef __typeof__(&zbar_image_free_data) starline_zbar_image_free_data_f;
typedef __typeof__(&zbar_image_first_symbol) starline_zbar_image_first_symbol_f;
typedef __typeof__(&zbar_symbol_next) starline_zbar_symbol_next_f;
typedef __typeof__(&zbar_symbol_get_type) starline_zbar_symbol_get_type_f;
typedef __typeof__(&zbar_symbol_get_data) starline_zbar_symbol_get_data_f;
typedef __typeof__(&zbar_symbol_get_data_length) starline_zbar_symbol_get_data_length_f;
typedef __typeof__(&zbar_symbol_get_loc_size) starline_zbar_symbol_get_loc_size_f;
typedef __typeof__(&zbar_symbol_get_loc_x) starline_zbar_symbol_get_loc_x_f;
typedef __typeof__(&zbar_symbol_get_loc_y) starline_zbar_symbol_get_loc_y_f;
typedef __typeof__(&zbar_symbol_get_orientation) starline_zbar_symbol_get_orientation_f;
