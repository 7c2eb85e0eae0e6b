/**
 * Turns on SQLite's `file:` URI filenames for this process, which read-without-shm.ts needs (`?immutable=1`).
 * better-sqlite3 has no per-connection flag for them, and its bundled SQLite is built with SQLITE_USE_URI=0; its
 * addon reads the SQLITE_USE_URI environment variable once, when it loads at the first `new Database()` of the
 * process. So this runs on import, before connection.ts can open anything. It changes nothing else that netingest
 * opens: every path is made absolute first (resolve()), so none starts with "file:". A value the user set wins.
 */
process.env.SQLITE_USE_URI ??= '1';

export {};
