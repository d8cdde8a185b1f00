#ifndef STARLINE_SIGNALS_H
#define STARLINE_SIGNALS_H

/// The termination signals every Starline tool ends on cleanly (SIGINT, SIGTERM, SIGHUP): exit 128 + the
/// signal number after removing the temporary files it tracks. In C because the handler must be
/// async-signal-safe (signal-safety(7)): no allocation, no locks, only unlink, write and _exit.

/// Installs the handler for the three signals, except for one the process was started with ignored
/// (nohup, a background job of a non-interactive shell keeps ignoring it, as POSIX tools do).
void starline_signals_install(void);
int starline_signals_installed(void);

/// Makes a close-on-exec pipe and returns its read end (-1 when it cannot be made). After
/// `starline_signals_arm` the handler only writes the signal number (one byte) to it and returns: the
/// thread that reads it runs the tool's clean-up (abandon a pending login) and then calls
/// `starline_signals_finish`. Arm only once that thread runs, or a signal would wake nobody.
int starline_signals_open_wake_pipe(void);
void starline_signals_arm(void);

/// Tracks a temporary file for removal on a signal; call it before creating the file. Returns its slot,
/// or -1 when all slots are taken (the file is then only removed by the code that made it). Called while
/// the process is ending on a signal, it does not return: the process ends first.
int starline_signals_track(const char *path);
void starline_signals_untrack(int slot);

/// Removes the tracked files and ends the process with 128 + `signal`.
_Noreturn void starline_signals_finish(int signal);

/// This process gets SIGKILL when its parent ends (prctl PR_SET_PDEATHSIG; prctl is variadic).
void starline_die_with_parent(void);

/// The width in columns of the terminal on `fd` (ioctl TIOCGWINSZ; ioctl is variadic), 0 when it is not a
/// terminal or does not say.
int starline_terminal_columns(int fd);

#endif
