#include <sqlite3.h>

// SQLITE_TRANSIENT is a function-like cast macro Swift cannot import:
// "If the destructor argument is SQLITE_TRANSIENT, SQLite makes its own private copy of the data
// immediately, before the sqlite3_bind_*() routine returns."
static inline sqlite3_destructor_type starline_sqlite_transient(void) { return SQLITE_TRANSIENT; }

// sqlite3_db_config is variadic; this is its form for the integer options ("the next argument is an
// integer ... followed by a pointer to an integer into which is written the new setting").
static inline int starline_sqlite3_db_config_int(sqlite3 *db, int op, int value, int *result) {
    return sqlite3_db_config(db, op, value, result);
}

#include <sys/stat.h>
#include <unistd.h>

// SQLite's unix VFS, when the process runs as root, fchowns the -wal and -shm files to the database's
// owner every time it opens them. A chown that changes nothing still sets the file's ctime, so every
// open by root looked like a write to the WAL (the memory vault's open fingerprint compares ctimes).
// This one only calls fchown when the owner differs, which is what SQLite wants it for.
static inline int starline_fchown_if_needed(int fd, uid_t uid, gid_t gid) {
    struct stat info;
    if (fstat(fd, &info) == 0 && info.st_uid == uid && info.st_gid == gid) return 0;
    return fchown(fd, uid, gid);
}

// Installs it in the default VFS ("xSetSystemCall ... to override system calls"); call once, before the
// first connection. Returns SQLITE_OK, or SQLITE_NOTFOUND when the VFS does not know the call.
static inline int starline_sqlite3_install_quiet_fchown(void) {
    sqlite3_vfs *vfs = sqlite3_vfs_find(0);
    if (vfs == 0 || vfs->iVersion < 3 || vfs->xSetSystemCall == 0) return SQLITE_NOTFOUND;
    return vfs->xSetSystemCall(vfs, "fchown", (sqlite3_syscall_ptr)starline_fchown_if_needed);
}
