/* SQLite 3 (Debian's libsqlite3-dev) for the persistent cache. */
#include <sqlite3.h>

/* Binds a blob that SQLite copies before returning: SQLITE_TRANSIENT is a
   cast of -1 to a function pointer, which Swift cannot import. */
static inline int lds_sqlite_bind_blob_copy(sqlite3_stmt *stmt, int index, const void *bytes, int length) {
  return sqlite3_bind_blob(stmt, index, bytes, length, SQLITE_TRANSIENT);
}
