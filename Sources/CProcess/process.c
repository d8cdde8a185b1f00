#define _GNU_SOURCE
#include "starline_process.h"

#include <errno.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

int starline_process_make_undumpable(void) {
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) return errno;
    struct rlimit none = {0, 0};
    if (setrlimit(RLIMIT_CORE, &none) != 0) return errno;
    return 0;
}

void starline_close_descriptors_from(int lowest) { closefrom(lowest); }

int starline_spawn_close_from(posix_spawn_file_actions_t *actions, int lowest) {
    return posix_spawn_file_actions_addclosefrom_np(actions, lowest);
}

int starline_process_dumpable(void) { return prctl(PR_GET_DUMPABLE, 0, 0, 0, 0); }

int starline_process_set_dumpable(int value) { return prctl(PR_SET_DUMPABLE, value, 0, 0, 0); }

int starline_peer_credentials(int fd, pid_t *pid, uid_t *uid, gid_t *gid) {
    struct ucred credentials;
    socklen_t length = sizeof credentials;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0) return -1;
    if (length != sizeof credentials) {
        errno = EINVAL;
        return -1;
    }
    *pid = credentials.pid;
    *uid = credentials.uid;
    *gid = credentials.gid;
    return 0;
}

int starline_accept_cloexec(int fd) { return accept4(fd, NULL, NULL, SOCK_CLOEXEC); }

short starline_posix_spawn_setsid_flag(void) { return POSIX_SPAWN_SETSID; }
