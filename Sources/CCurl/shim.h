#ifndef STARLINE_CCURL_SHIM_H
#define STARLINE_CCURL_SHIM_H

// The header's types and constants only; the functions are looked up with dlsym (CurlLibrary.swift).
#define CURL_DISABLE_TYPECHECK 1
// CURLOPT_PROTOCOLS is the fallback for libcurl older than 7.85 (no CURLOPT_PROTOCOLS_STR).
#define CURL_DISABLE_DEPRECATION 1
#if __has_include(<curl/curl.h>)
#include <curl/curl.h>
#elif __has_include("/usr/include/x86_64-linux-gnu/curl/curl.h")
#include "/usr/include/x86_64-linux-gnu/curl/curl.h"
#elif __has_include("/usr/include/aarch64-linux-gnu/curl/curl.h")
#include "/usr/include/aarch64-linux-gnu/curl/curl.h"
#else
#error "libcurl headers not found: install libcurl4-openssl-dev"
#endif

#include <execinfo.h>

// Makes glibc load its unwinder (libgcc_s) now. pthread_exit unwinds the thread, and glibc dlopens libgcc_s
// for that on its first use, under the dynamic loader's lock; libdispatch's dispatch_main ends an async tool's
// main thread with pthread_exit, and the main queue (the main actor) runs only after that. So if the first
// pthread_exit comes while libcurl is being loaded on another thread, every main-actor continuation waits for
// the whole load. backtrace(3) takes the same one-time path: its NOTES say it is "part of libgcc, which gets
// loaded dynamically when first used".
static inline void starline_load_unwinder(void) {
    void *frame[1];
    (void)backtrace(frame, 1);
}

// curl_easy_setopt and curl_easy_getinfo are variadic, which Swift cannot call. These wrappers take the
// dlsym'ed function as `fn` and make a real variadic call, so the C compiler sets up the variadic ABI
// (e.g. %al on x86-64) correctly. One wrapper per argument type curl reads with va_arg.

typedef CURLcode (*starline_curl_setopt_fn)(CURL *, CURLoption, ...);
typedef CURLcode (*starline_curl_getinfo_fn)(CURL *, CURLINFO, ...);

/// The write and header callbacks: size_t (char *ptr, size_t size, size_t nmemb, void *userdata).
typedef size_t (*starline_curl_data_callback)(char *, size_t, size_t, void *);
/// CURLOPT_XFERINFOFUNCTION: non-zero aborts the transfer (used for cancellation).
typedef int (*starline_curl_xferinfo_callback)(void *, curl_off_t, curl_off_t, curl_off_t, curl_off_t);

static inline CURLcode starline_curl_setopt_long(void *fn, CURL *handle, CURLoption option, long value) {
    return ((starline_curl_setopt_fn)fn)(handle, option, value);
}

static inline CURLcode starline_curl_setopt_ptr(void *fn, CURL *handle, CURLoption option, const void *value) {
    return ((starline_curl_setopt_fn)fn)(handle, option, value);
}

static inline CURLcode starline_curl_setopt_off(void *fn, CURL *handle, CURLoption option, curl_off_t value) {
    return ((starline_curl_setopt_fn)fn)(handle, option, value);
}

static inline CURLcode starline_curl_setopt_data_callback(void *fn, CURL *handle, CURLoption option, starline_curl_data_callback value) {
    return ((starline_curl_setopt_fn)fn)(handle, option, value);
}

static inline CURLcode starline_curl_setopt_xferinfo_callback(void *fn, CURL *handle, CURLoption option, starline_curl_xferinfo_callback value) {
    return ((starline_curl_setopt_fn)fn)(handle, option, value);
}

static inline CURLcode starline_curl_getinfo_long(void *fn, CURL *handle, CURLINFO info, long *value) {
    return ((starline_curl_getinfo_fn)fn)(handle, info, value);
}

// The type of each function CurlLibrary looks up with dlsym, taken from curl.h's own declaration, so a
// binding cannot disagree with the library's signature (a mismatch fails to compile, not at the first call).
typedef __typeof__(&curl_global_init) starline_curl_global_init_f;
typedef __typeof__(&curl_easy_init) starline_curl_easy_init_f;
typedef __typeof__(&curl_easy_cleanup) starline_curl_easy_cleanup_f;
typedef __typeof__(&curl_easy_reset) starline_curl_easy_reset_f;
typedef __typeof__(&curl_easy_perform) starline_curl_easy_perform_f;
typedef __typeof__(&curl_easy_strerror) starline_curl_easy_strerror_f;
typedef __typeof__(&curl_slist_append) starline_curl_slist_append_f;
typedef __typeof__(&curl_slist_free_all) starline_curl_slist_free_all_f;
typedef __typeof__(&curl_version) starline_curl_version_f;

// Macros Swift may not import (they are built from other macros).
static const long starline_curl_global_default = CURL_GLOBAL_DEFAULT;
static const long starline_curlproto_http_https = CURLPROTO_HTTP | CURLPROTO_HTTPS;

#endif
