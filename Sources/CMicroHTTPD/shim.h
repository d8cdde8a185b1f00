#include <stdarg.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <microhttpd.h>

// MHD_start_daemon, MHD_get_daemon_info and MHD_get_connection_info are variadic; Swift cannot
// call C variadics, so these fixed-signature wrappers pass the options the devserver uses.

/// "MHD_OPTION_SOCK_ADDR: Bind daemon to the supplied struct sockaddr ... If this option is not
/// specified, the daemon will listen to incoming connections from anywhere." The devserver always
/// passes a loopback address. MHD_OPTION_NOTIFY_COMPLETED releases the per-request context.
/// Every connection holds a thread: MHD_OPTION_CONNECTION_LIMIT and MHD_OPTION_PER_IP_CONNECTION_LIMIT
/// bound them (further connections are closed at once), MHD_OPTION_CONNECTION_TIMEOUT closes idle
/// ones ("after how many seconds of inactivity should a connection automatically be timed out").
/// MHD_OPTION_UNESCAPE_CALLBACK: "Specify a function that should be called for unescaping escape sequences
/// in URIs and URI arguments. … If this option is not specified, the default method will be used which
/// decodes escape sequences of the form "%HH"." This one decodes nothing: the devserver routes on the raw
/// path (a %2F is not a "/", a %00 does not cut the path) and decodes each path parameter and query value
/// itself, after routing.
static inline size_t starline_mhd_keep_escaped(void *cls, struct MHD_Connection *connection, char *s) {
    (void)cls;
    (void)connection;
    size_t n = 0;
    while (s[n] != 0) n++;
    return n;
}

/// MHD_OPTION_NOTIFY_CONNECTION: "Called when a connection is started and when it is closed" (its
/// MHD_CONNECTION_NOTIFY_STARTED and MHD_CONNECTION_NOTIFY_CLOSED); the devserver's connection watch keeps
/// its deadline for a whole request with it.
static inline struct MHD_Daemon *starline_mhd_start(unsigned int flags,
    MHD_AccessHandlerCallback handler, void *handler_cls,
    MHD_RequestCompletedCallback completed, void *completed_cls,
    MHD_NotifyConnectionCallback notify, void *notify_cls,
    const struct sockaddr *address, unsigned int connection_limit,
    unsigned int per_ip_connection_limit, size_t memory_limit, unsigned int timeout_seconds) {
    return MHD_start_daemon(flags, 0, NULL, NULL, handler, handler_cls,
        MHD_OPTION_NOTIFY_COMPLETED, completed, completed_cls,
        MHD_OPTION_NOTIFY_CONNECTION, notify, notify_cls,
        MHD_OPTION_SOCK_ADDR, address,
        MHD_OPTION_CONNECTION_LIMIT, connection_limit,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, per_ip_connection_limit,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, memory_limit,
        MHD_OPTION_CONNECTION_TIMEOUT, timeout_seconds,
        MHD_OPTION_UNESCAPE_CALLBACK, starline_mhd_keep_escaped, NULL,
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

/// MHD_CONNECTION_INFO_CONNECTION_FD: the connection's socket (-1 when MHD does not say).
static inline int starline_mhd_connection_fd(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info ? (int)info->connect_fd : -1;
}

/// The bytes a TCP socket has received so far: struct tcp_info's tcpi_bytes_received (getsockopt TCP_INFO,
/// Linux 4.1; "RFC4898 tcpEStatsAppHCThruOctetsReceived"), read at its offset in <linux/tcp.h>'s layout (128)
/// because glibc's <netinet/tcp.h> declares an older, shorter struct tcp_info. -1 when the kernel gives less.
static inline long long starline_tcp_bytes_received(int fd) {
    unsigned char info[256];
    socklen_t length = sizeof info;
    if (getsockopt(fd, IPPROTO_TCP, 11 /* TCP_INFO */, info, &length) != 0 || length < 136) return -1;
    unsigned long long value;
    __builtin_memcpy(&value, info + 128, sizeof value);
    return (long long)value;
}
