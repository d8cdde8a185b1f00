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
