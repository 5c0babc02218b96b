import postgres from 'postgres';
import { ForkdError } from '@forkd/protocol';

export type Sql = postgres.Sql;

/**
 * One constant key for pg_advisory_xact_lock: replicas starting at once run
 * the migrations one after the other, the later ones finding nothing to do.
 */
const MIGRATION_LOCK = 0x666f726b64;

/** The URL without its password (and query), for messages and logs: the URL is a credential. */
export function redactDatabaseUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.username ? `${decodeURIComponent(u.username)}@` : ''}${u.host}${u.pathname}`;
  } catch {
    return '(an unparsable URL)';
  }
}

/** Whether `url` names PostgreSQL (what FORKD_DATABASE_URL accepts). */
export function isPostgresUrl(url: string): boolean {
  return /^postgres(ql)?:\/\/./.test(url);
}

/**
 * Connects to PostgreSQL and applies the migrations it has not seen
 * (counted in forkd_schema, one row per applied migration), under an
 * advisory lock, in one transaction. A wrong or unreachable URL is a
 * ForkdError naming the server without its password.
 */
export async function openPostgres(url: string, migrations: readonly string[]): Promise<Sql> {
  if (!isPostgresUrl(url)) throw new ForkdError('INVALID_ARGUMENT', 'FORKD_DATABASE_URL must be a postgres:// or postgresql:// URL');
  let sql: Sql | undefined;
  try {
    // Inside the try: a URL the driver cannot parse throws here, with the URL in the error.
    sql = postgres(url, { max: 10, connect_timeout: 10, onnotice: () => {}, connection: { application_name: 'forkd' } });
    await sql.begin(async (tx) => {
      await tx`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK})`;
      await tx`CREATE TABLE IF NOT EXISTS forkd_schema (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`;
      const [row] = await tx<{ n: number }[]>`SELECT count(*)::int AS n FROM forkd_schema`;
      for (let v = row?.n ?? 0; v < migrations.length; v++) {
        await tx.unsafe(migrations[v]!);
        await tx`INSERT INTO forkd_schema (version) VALUES (${v + 1})`;
      }
    });
  } catch (err) {
    await sql?.end({ timeout: 1 }).catch(() => undefined);
    throw new ForkdError('UNAVAILABLE', `cannot open the control database at ${redactDatabaseUrl(url)}: ${describe(err)}`);
  }
  return sql;
}

/** The driver's reason, which names neither the URL nor the password. */
function describe(err: unknown): string {
  const e = err as { code?: unknown; message?: unknown };
  const msg = typeof e.message === 'string' && e.message ? e.message : String(err);
  return typeof e.code === 'string' && !msg.includes(e.code) ? `${msg} (${e.code})` : msg;
}
