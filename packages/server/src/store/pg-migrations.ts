/**
 * The control store's PostgreSQL schema, one entry per version (applied in
 * order by pg-open.ts; never edit a released one, append). The same tables
 * as SQLite's (sqlite-control-store.ts), created in their final shape: there
 * is no PostgreSQL database from before. Times are ISO strings (TEXT) as the
 * records carry them, so they come back exactly as given; only a lease's
 * expiry is a timestamptz, judged by the server's now(). Text is COLLATE "C":
 * ordered and compared bytewise, as SQLite does, whatever the database's locale.
 */
export const PG_MIGRATIONS: readonly string[] = [
  `CREATE TABLE api_keys (
     id TEXT COLLATE "C" PRIMARY KEY,
     tenant TEXT COLLATE "C" NOT NULL,
     hash TEXT COLLATE "C" NOT NULL UNIQUE,
     prefix TEXT COLLATE "C" NOT NULL,
     name TEXT COLLATE "C",
     admin BOOLEAN NOT NULL,
     created_at TEXT COLLATE "C" NOT NULL,
     revoked_at TEXT COLLATE "C"
   );
   CREATE TABLE owners (
     kind TEXT COLLATE "C" NOT NULL,
     id TEXT COLLATE "C" NOT NULL,
     tenant TEXT COLLATE "C" NOT NULL,
     PRIMARY KEY (kind, id)
   );
   CREATE INDEX owners_by_tenant ON owners (tenant, kind);
   CREATE TABLE audit (
     id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
     at TEXT COLLATE "C" NOT NULL,
     key_id TEXT COLLATE "C",
     tenant TEXT COLLATE "C",
     sandbox_id TEXT COLLATE "C",
     operation TEXT COLLATE "C" NOT NULL,
     target TEXT COLLATE "C",
     code TEXT COLLATE "C" NOT NULL,
     status INTEGER NOT NULL,
     duration_ms DOUBLE PRECISION NOT NULL,
     request_id TEXT COLLATE "C"
   );
   CREATE INDEX audit_by_tenant ON audit (tenant, id);
   CREATE INDEX audit_by_at ON audit (at);
   CREATE TABLE sandbox_token_hashes (
     id TEXT COLLATE "C" PRIMARY KEY,
     hash TEXT COLLATE "C" NOT NULL
   );
   CREATE TABLE tenant_limits (
     tenant TEXT COLLATE "C" PRIMARY KEY,
     limits TEXT COLLATE "C" NOT NULL,
     updated_at TEXT COLLATE "C" NOT NULL
   );
   CREATE TABLE policies (
     scope TEXT COLLATE "C" NOT NULL,
     id TEXT COLLATE "C" NOT NULL,
     policy TEXT COLLATE "C" NOT NULL,
     updated_at TEXT COLLATE "C" NOT NULL,
     PRIMARY KEY (scope, id)
   );
   CREATE TABLE network_settings (
     scope TEXT COLLATE "C" NOT NULL,
     name TEXT COLLATE "C" NOT NULL,
     setting TEXT COLLATE "C" NOT NULL,
     updated_at TEXT COLLATE "C" NOT NULL,
     PRIMARY KEY (scope, name)
   );
   CREATE TABLE secrets (
     tenant TEXT COLLATE "C" NOT NULL,
     name TEXT COLLATE "C" NOT NULL,
     sealed BYTEA NOT NULL,
     created_at TEXT COLLATE "C" NOT NULL,
     updated_at TEXT COLLATE "C" NOT NULL,
     PRIMARY KEY (tenant, name)
   );
   CREATE TABLE grants (
     id TEXT COLLATE "C" PRIMARY KEY,
     tenant TEXT COLLATE "C" NOT NULL,
     sandbox_id TEXT COLLATE "C" NOT NULL,
     secret TEXT COLLATE "C" NOT NULL,
     spec TEXT COLLATE "C" NOT NULL,
     created_at TEXT COLLATE "C" NOT NULL,
     expires_at TEXT COLLATE "C"
   );
   CREATE INDEX grants_by_sandbox ON grants (sandbox_id);
   CREATE TABLE nodes (
     id TEXT COLLATE "C" PRIMARY KEY,
     url TEXT COLLATE "C" NOT NULL,
     sealed_token TEXT COLLATE "C" NOT NULL,
     state TEXT COLLATE "C" NOT NULL,
     capacity TEXT COLLATE "C" NOT NULL,
     registered_at TEXT COLLATE "C" NOT NULL,
     last_seen_at TEXT COLLATE "C" NOT NULL
   );
   CREATE TABLE placements (
     kind TEXT COLLATE "C" NOT NULL,
     id TEXT COLLATE "C" NOT NULL,
     node TEXT COLLATE "C" NOT NULL,
     PRIMARY KEY (kind, id)
   );
   CREATE INDEX placements_by_node ON placements (node, kind, id);
   CREATE TABLE exports (
     snapshot_id TEXT COLLATE "C" PRIMARY KEY,
     sandbox_id TEXT COLLATE "C" NOT NULL,
     manifest TEXT COLLATE "C" NOT NULL,
     node TEXT COLLATE "C" NOT NULL,
     exported_at TEXT COLLATE "C" NOT NULL
   );
   CREATE INDEX exports_by_sandbox ON exports (sandbox_id, exported_at);
   CREATE TABLE leases (
     name TEXT COLLATE "C" PRIMARY KEY,
     holder TEXT COLLATE "C" NOT NULL,
     expires_at TIMESTAMPTZ NOT NULL
   );`,
  // Quota reservations of operations in flight, seen by every replica (store/quota-records.ts).
  `CREATE TABLE quota_reservations (
     id TEXT COLLATE "C" PRIMARY KEY,
     tenant TEXT COLLATE "C" NOT NULL,
     demand JSONB NOT NULL,
     sandbox_ids JSONB NOT NULL,
     expires_at TIMESTAMPTZ NOT NULL
   );
   CREATE INDEX quota_reservations_by_tenant ON quota_reservations (tenant);`,
  // Calls waiting for approval, decided through any replica (store/approval-records.ts).
  `CREATE TABLE approvals (
     id TEXT COLLATE "C" PRIMARY KEY,
     tenant TEXT COLLATE "C" NOT NULL,
     info JSONB NOT NULL,
     decision TEXT COLLATE "C",
     created_at TEXT COLLATE "C" NOT NULL,
     expires_at TEXT COLLATE "C" NOT NULL
   );
   CREATE INDEX approvals_by_tenant ON approvals (tenant, created_at);`,
  // E2B's template builder: builds, their logs, uploaded files, tags (store/template-build-records.ts).
  `CREATE TABLE template_builds (
     id TEXT COLLATE "C" PRIMARY KEY,
     tenant TEXT COLLATE "C" NOT NULL,
     template TEXT COLLATE "C" NOT NULL,
     record JSONB NOT NULL,
     status TEXT COLLATE "C" NOT NULL,
     reason TEXT,
     created_at TEXT COLLATE "C" NOT NULL,
     updated_at TEXT COLLATE "C" NOT NULL
   );
   CREATE TABLE template_build_logs (
     build_id TEXT COLLATE "C" NOT NULL,
     seq INTEGER NOT NULL,
     entry JSONB NOT NULL,
     PRIMARY KEY (build_id, seq)
   );
   CREATE TABLE template_files (
     tenant TEXT COLLATE "C" NOT NULL,
     hash TEXT COLLATE "C" NOT NULL,
     data BYTEA NOT NULL,
     created_at TEXT COLLATE "C" NOT NULL,
     PRIMARY KEY (tenant, hash)
   );
   CREATE TABLE template_tags (
     template TEXT COLLATE "C" NOT NULL,
     tag TEXT COLLATE "C" NOT NULL,
     tenant TEXT COLLATE "C" NOT NULL,
     build_id TEXT COLLATE "C" NOT NULL,
     created_at TEXT COLLATE "C" NOT NULL,
     PRIMARY KEY (template, tag)
   );`,
];
