#include <libheif/heif.h>

// The type of each function HEIFLibrary looks up with dlsym, taken from heif.h's own declaration, so a binding
// cannot disagree with the library's signature (a mismatch fails to compile, not at the first call). Several
// return `struct heif_error` by value, which a hand-written @convention(c) type would get wrong silently.
typedef __typeof__(&heif_init) starline_heif_init_f;
typedef __typeof__(&heif_get_version) starline_heif_get_version_f;
typedef __typeof__(&heif_context_alloc) starline_heif_context_alloc_f;
typedef __typeof__(&heif_context_free) starline_heif_context_free_f;
typedef __typeof__(&heif_context_set_maximum_image_size_limit) starline_heif_context_set_maximum_image_size_limit_f;
typedef __typeof__(&heif_context_read_from_memory_without_copy) starline_heif_context_read_from_memory_without_copy_f;
typedef __typeof__(&heif_context_get_primary_image_handle) starline_heif_context_get_primary_image_handle_f;
typedef __typeof__(&heif_image_handle_get_width) starline_heif_image_handle_get_width_f;
typedef __typeof__(&heif_image_handle_get_height) starline_heif_image_handle_get_height_f;
typedef __typeof__(&heif_image_handle_release) starline_heif_image_handle_release_f;
typedef __typeof__(&heif_decode_image) starline_heif_decode_image_f;
typedef __typeof__(&heif_image_get_plane_readonly) starline_heif_image_get_plane_readonly_f;
typedef __typeof__(&heif_image_release) starline_heif_image_release_f;
