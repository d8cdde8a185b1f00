#include <stdarg.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <microhttpd.h>

// MHD_start_daemon, MHD_get_daemon_info and MHD_get_connection_info are variadic; Swift cannot
// call C variadics, so these fixed-signature wrappers pass the options the devserver uses.

/// "MHD_OPTION_SOCK_ADDR: Bind daemon to the supplied struct sockaddr ... If this option is not
/// specified, the daemon will listen to incoming connections from anywhere." The devserver always
/// passes a loopback address. MHD_OPTION_NOTIFY_COMPLETED releases the per-request context.
/// Every connection holds a thread: MHD_OPTION_CONNECTION_LIMIT and MHD_OPTION_PER_IP_CONNECTION_LIMIT
/// bound them (further connections are closed at once), MHD_OPTION_CONNECTION_TIMEOUT closes idle
/// ones ("after how many seconds of inactivity should a connection automatically be timed out").
static inline struct MHD_Daemon *starline_mhd_start(unsigned int flags,
    MHD_AccessHandlerCallback handler, void *handler_cls,
    MHD_RequestCompletedCallback completed, void *completed_cls,
    const struct sockaddr *address, unsigned int connection_limit,
    unsigned int per_ip_connection_limit, size_t memory_limit, unsigned int timeout_seconds) {
    return MHD_start_daemon(flags, 0, NULL, NULL, handler, handler_cls,
        MHD_OPTION_NOTIFY_COMPLETED, completed, completed_cls,
        MHD_OPTION_SOCK_ADDR, address,
        MHD_OPTION_CONNECTION_LIMIT, connection_limit,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, per_ip_connection_limit,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, memory_limit,
        MHD_OPTION_CONNECTION_TIMEOUT, timeout_seconds,
        MHD_OPTION_END);
}

/// The port actually bound (for port 0).
static inline uint16_t starline_mhd_bound_port(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info ? info->port : 0;
}

static inline const struct sockaddr *starline_mhd_client_address(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    return info ? info->client_addr : NULL;
}
