#include <openssl/evp.h>

// The type of each libcrypto function StarlineCrypto looks up with dlsym, taken from OpenSSL 3's own
// declarations, so a binding cannot disagree with the library's signature (a mismatch fails to compile, not at
// the first call).
typedef __typeof__(&EVP_MD_fetch) starline_EVP_MD_fetch_f;
typedef __typeof__(&EVP_MD_CTX_new) starline_EVP_MD_CTX_new_f;
typedef __typeof__(&EVP_MD_CTX_free) starline_EVP_MD_CTX_free_f;
typedef __typeof__(&EVP_DigestInit_ex) starline_EVP_DigestInit_ex_f;
typedef __typeof__(&EVP_DigestUpdate) starline_EVP_DigestUpdate_f;
typedef __typeof__(&EVP_DigestFinal_ex) starline_EVP_DigestFinal_ex_f;
typedef __typeof__(&EVP_CIPHER_fetch) starline_EVP_CIPHER_fetch_f;
typedef __typeof__(&EVP_CIPHER_CTX_new) starline_EVP_CIPHER_CTX_new_f;
typedef __typeof__(&EVP_CIPHER_CTX_free) starline_EVP_CIPHER_CTX_free_f;
typedef __typeof__(&EVP_EncryptInit_ex) starline_EVP_EncryptInit_ex_f;
typedef __typeof__(&EVP_EncryptUpdate) starline_EVP_EncryptUpdate_f;
typedef __typeof__(&EVP_MAC_fetch) starline_EVP_MAC_fetch_f;
typedef __typeof__(&EVP_MAC_CTX_new) starline_EVP_MAC_CTX_new_f;
typedef __typeof__(&EVP_MAC_CTX_free) starline_EVP_MAC_CTX_free_f;
typedef __typeof__(&EVP_MAC_init) starline_EVP_MAC_init_f;
typedef __typeof__(&EVP_MAC_update) starline_EVP_MAC_update_f;
typedef __typeof__(&EVP_MAC_final) starline_EVP_MAC_final_f;
