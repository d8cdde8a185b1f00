#ifndef STARLINE_TIFF_H
#define STARLINE_TIFF_H

#include <stdint.h>

/// libtiff calls Swift cannot make: TIFFGetField is variadic, and its error and warning handlers take a
/// va_list. libtiff itself is loaded with dlopen (StarlineQR's TIFFReader), so its functions come in as
/// addresses (`void *`) and are called here with their real C types.

/// TIFFGetField(tif, tag, &value) for a tag whose value is one uint32 (TIFFTAG_IMAGEWIDTH, _IMAGELENGTH).
/// Returns TIFFGetField's result: 1 when the tag is present.
int starline_tiff_get_uint32(void *get_field, void *tif, uint32_t tag, uint32_t *value);

/// Installs, through libtiff's TIFFSetErrorHandler and TIFFSetWarningHandler, handlers that keep the last
/// error message of the calling thread (`starline_tiff_last_error`) and drop warnings: libtiff's defaults
/// print both on stderr, in the middle of the tool's JSON.
void starline_tiff_install_handlers(void *set_error_handler, void *set_warning_handler);

/// The last error libtiff reported on this thread ("" when none), cleared by `starline_tiff_clear_error`.
const char *starline_tiff_last_error(void);
void starline_tiff_clear_error(void);

#endif
