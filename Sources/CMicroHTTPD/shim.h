#include <stdarg.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <microhttpd.h>

// MHD_start_daemon is variadic; Swift calls the va_list form through this wrapper.
static inline struct MHD_Daemon *starline_mhd_start_daemon_va(unsigned int flags, uint16_t port,
    MHD_AcceptPolicyCallback apc, void *apc_cls,
    MHD_AccessHandlerCallback dh, void *dh_cls, va_list ap) {
    return MHD_start_daemon_va(flags, port, apc, apc_cls, dh, dh_cls, ap);
}
