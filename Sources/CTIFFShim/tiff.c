#include "starline_tiff.h"

#include <stdarg.h>
#include <stdio.h>

typedef int (*get_field_fn)(void *tif, uint32_t tag, ...);
typedef void (*handler_fn)(const char *module, const char *format, va_list arguments);
typedef handler_fn (*set_handler_fn)(handler_fn handler);

int starline_tiff_get_uint32(void *get_field, void *tif, uint32_t tag, uint32_t *value) {
    return ((get_field_fn)get_field)(tif, tag, value);
}

static _Thread_local char last_error[512];

static void keep_error(const char *module, const char *format, va_list arguments) {
    (void)module;
    vsnprintf(last_error, sizeof last_error, format, arguments);
}

static void drop_warning(const char *module, const char *format, va_list arguments) {
    (void)module;
    (void)format;
    (void)arguments;
}

void starline_tiff_install_handlers(void *set_error_handler, void *set_warning_handler) {
    ((set_handler_fn)set_error_handler)(keep_error);
    ((set_handler_fn)set_warning_handler)(drop_warning);
}

const char *starline_tiff_last_error(void) { return last_error; }

void starline_tiff_clear_error(void) { last_error[0] = 0; }
