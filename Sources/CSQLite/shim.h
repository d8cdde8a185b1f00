#include <sqlite3.h>

// SQLITE_TRANSIENT is a function-like cast macro Swift cannot import:
// "If the destructor argument is SQLITE_TRANSIENT, SQLite makes its own private copy of the data
// immediately, before the sqlite3_bind_*() routine returns."
static inline sqlite3_destructor_type starline_sqlite_transient(void) { return SQLITE_TRANSIENT; }
