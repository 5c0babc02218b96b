import { chmodSync, closeSync, openSync, statSync } from 'node:fs';
import Database from 'better-sqlite3';

/** Opens a SQLite file in WAL mode and applies the migrations it has not seen (user_version counts them). */
export function openSqlite(file: string, migrations: readonly string[]): Database.Database {
  privateDatabase(file);
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('busy_timeout = 5000');
  const version = db.pragma('user_version', { simple: true }) as number;
  for (let v = version; v < migrations.length; v++) {
    db.transaction(() => {
      db.exec(migrations[v]!);
      db.pragma(`user_version = ${v + 1}`);
    })();
  }
  return db;
}

/**
 * The database file exists, owner-only, before SQLite opens it: SQLite gives
 * its -wal and -shm files the database's own mode. Files an older forkd left
 * 0644 are tightened, their -wal/-shm too.
 */
function privateDatabase(file: string): void {
  if (file === ':memory:' || file === '') return;
  closeSync(openSync(file, 'a', 0o600));
  for (const f of [file, `${file}-wal`, `${file}-shm`]) {
    const st = statSync(f, { throwIfNoEntry: false });
    if (st && (st.mode & 0o077) !== 0) chmodSync(f, st.mode & 0o700);
  }
}
