"""Holds the write lock of an SQLite file, as another process using the same cache file would.

``python3 sqlite_locker.py PATH`` opens PATH, begins an immediate transaction (the file's write lock),
prints ``held`` and keeps the lock until it reads a line or its stdin closes; then it rolls back and exits.
"""
import sqlite3
import sys


def main() -> None:
    connection = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=10)
    connection.execute("BEGIN IMMEDIATE")
    print("held", flush=True)
    sys.stdin.readline()
    connection.execute("ROLLBACK")
    connection.close()


if __name__ == "__main__":
    main()
