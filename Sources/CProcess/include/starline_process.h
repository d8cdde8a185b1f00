#ifndef STARLINE_PROCESS_H
#define STARLINE_PROCESS_H

#include <spawn.h>
#include <sys/types.h>

/// Process and socket calls Swift cannot make directly: prctl(2) is variadic (Swift imports no C variadic
/// function), and `struct ucred`, accept4(2) and POSIX_SPAWN_SETSID are GNU extensions that the Glibc
/// module does not declare (they need _GNU_SOURCE). Used by the memory vault's unlock agent.

/// Makes this process undumpable: prctl(PR_SET_DUMPABLE, 0) and a core size limit of 0 (setrlimit
/// RLIMIT_CORE, soft and hard). Returns 0, or the errno of the call that failed.
int starline_process_make_undumpable(void);

/// closefrom(lowest) (glibc 2.34): closes every descriptor from `lowest` up, whatever the process inherited.
void starline_close_descriptors_from(int lowest);

/// prctl(PR_GET_DUMPABLE): 1 (dumpable), 0 (not), or -1 with errno.
int starline_process_dumpable(void);

/// prctl(PR_SET_DUMPABLE, value): 0, or -1 with errno. Tests put the flag back with it.
int starline_process_set_dumpable(int value);

/// getsockopt(fd, SOL_SOCKET, SO_PEERCRED): the peer's pid, uid and gid. Returns 0, or -1 with errno.
int starline_peer_credentials(int fd, pid_t *pid, uid_t *uid, gid_t *gid);

/// accept4(fd, NULL, NULL, SOCK_CLOEXEC): the connection is never inherited by a process spawned meanwhile.
int starline_accept_cloexec(int fd);

/// posix_spawn_file_actions_addclosefrom_np(actions, lowest) (glibc 2.34): the child starts with no descriptor
/// from `lowest` up. Returns 0 or an errno.
int starline_spawn_close_from(posix_spawn_file_actions_t *actions, int lowest);

/// The POSIX_SPAWN_SETSID flag of posix_spawnattr_setflags (glibc 2.26).
short starline_posix_spawn_setsid_flag(void);

#endif
