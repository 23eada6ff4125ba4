/* SQLite 3 (Debian's libsqlite3-dev) for the persistent cache. */
#include <sqlite3.h>
