#define _GNU_SOURCE
#include "starline_signals.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { SLOTS = 16, FREE = 0, WRITING = 1, ACTIVE = 2 };

// A slot's path is only read by the handler while its state is ACTIVE; the states are atomics, the
// buffers static, so the handler never touches memory another thread may free.
static char paths[SLOTS][PATH_MAX];
static int states[SLOTS];
static int exiting = 0;
static int wake_fd = -1;
static int wake_write_end = -1;

// Other threads go on while the process ends: from the moment `exiting` is set no new file is tracked (a
// thread that asks waits for the end, see starline_signals_track), and a thread that tracked a file just
// before may still be about to create it — so a second sweep follows a short pause.
static void remove_tracked(void) {
    __atomic_store_n(&exiting, 1, __ATOMIC_SEQ_CST);
    for (int sweep = 0; sweep < 2; sweep++) {
        for (int i = 0; i < SLOTS; i++) {
            if (__atomic_load_n(&states[i], __ATOMIC_ACQUIRE) == ACTIVE) unlink(paths[i]);
        }
        if (sweep == 0) {
            struct timespec pause = {0, 20 * 1000 * 1000};
            nanosleep(&pause, NULL);
        }
    }
}

static void on_signal(int signal) {
    int saved = errno;
    int fd = __atomic_load_n(&wake_fd, __ATOMIC_ACQUIRE);
    if (fd >= 0) {
        unsigned char byte = (unsigned char)signal;
        ssize_t written = write(fd, &byte, 1);
        (void)written;
        errno = saved;
        return;
    }
    remove_tracked();
    _exit(128 + signal);
}

static int installed = 0;

int starline_signals_installed(void) { return __atomic_load_n(&installed, __ATOMIC_ACQUIRE); }

void starline_signals_install(void) {
    static const int handled[] = {SIGINT, SIGTERM, SIGHUP};
    __atomic_store_n(&installed, 1, __ATOMIC_RELEASE);
    for (unsigned i = 0; i < sizeof handled / sizeof handled[0]; i++) {
        struct sigaction old;
        if (sigaction(handled[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN) continue;
        struct sigaction action;
        memset(&action, 0, sizeof action);
        action.sa_handler = on_signal;
        sigemptyset(&action.sa_mask);
        // SA_RESTART: in the clean-up mode the handler returns, and the tool's own reads and waits
        // should not see EINTR for it.
        action.sa_flags = SA_RESTART;
        sigaction(handled[i], &action, NULL);
    }
}

int starline_signals_open_wake_pipe(void) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return -1;
    wake_write_end = fds[1];
    return fds[0];
}

void starline_signals_arm(void) { __atomic_store_n(&wake_fd, wake_write_end, __ATOMIC_RELEASE); }

int starline_signals_track(const char *path) {
    size_t length = strlen(path);
    if (length >= PATH_MAX) return -1;
    // The process is ending: the file must not be made. _exit follows within the sweep's pause.
    while (__atomic_load_n(&exiting, __ATOMIC_SEQ_CST)) pause();
    for (int i = 0; i < SLOTS; i++) {
        int expected = FREE;
        if (__atomic_compare_exchange_n(&states[i], &expected, WRITING, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
            memcpy(paths[i], path, length + 1);
            __atomic_store_n(&states[i], ACTIVE, __ATOMIC_RELEASE);
            return i;
        }
    }
    return -1;
}

void starline_signals_untrack(int slot) {
    if (slot >= 0 && slot < SLOTS) __atomic_store_n(&states[slot], FREE, __ATOMIC_RELEASE);
}

_Noreturn void starline_signals_finish(int signal) {
    remove_tracked();
    _exit(128 + signal);
}

void starline_die_with_parent(void) { prctl(PR_SET_PDEATHSIG, SIGKILL); }

int starline_terminal_columns(int fd) {
    struct winsize size;
    if (ioctl(fd, TIOCGWINSZ, &size) != 0) return 0;
    return size.ws_col;
}
