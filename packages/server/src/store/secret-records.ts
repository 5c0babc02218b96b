/** A tenant's secret as stored: the value sealed (AES-256-GCM, control-plane/secrets/secret-cipher.ts), never in plain text. */
export interface SecretRecord {
  tenant: string;
  name: string;
  sealed: Buffer;
  createdAt: string;
  updatedAt: string;
}

/** A grant as stored: which secret a sandbox's requests to which destinations get, in which header, until when. */
export interface GrantRecord {
  id: string;
  tenant: string;
  sandboxId: string;
  secret: string;
  hosts: string[];
  methods?: string[] | undefined;
  paths?: string[] | undefined;
  /** The template (`Name: text with {secret}`), never the value. */
  header: string;
  createdAt: string;
  expiresAt?: string | undefined;
}

/** The control store's part for just-in-time secrets. */
export interface SecretRecords {
  /** Inserts or replaces the sealed value (the creation time stays). */
  putSecret(tenant: string, name: string, sealed: Buffer, at: string): Promise<void>;
  secret(tenant: string, name: string): Promise<SecretRecord | undefined>;
  /** Names and times only: listing never reads a value out. */
  listSecrets(tenant: string): Promise<Omit<SecretRecord, 'sealed'>[]>;
  deleteSecret(tenant: string, name: string): Promise<boolean>;
  insertGrant(g: GrantRecord): Promise<void>;
  /** A sandbox's grants, or every grant (to push them to the nodes at start). */
  grants(sandboxId?: string): Promise<GrantRecord[]>;
  deleteGrant(id: string): Promise<boolean>;
}

/** A grant as both stores keep it: its rule columns as one JSON text. */
export interface GrantRow {
  id: string;
  tenant: string;
  sandbox_id: string;
  secret: string;
  spec: string;
  created_at: string;
  expires_at: string | null;
}

type GrantSpecColumns = Pick<GrantRecord, 'hosts' | 'methods' | 'paths' | 'header'>;

/** What a grant's `spec` column holds (absent methods and paths left out). */
export function grantSpec(g: GrantRecord): GrantSpecColumns {
  return { hosts: g.hosts, header: g.header, ...(g.methods ? { methods: g.methods } : {}), ...(g.paths ? { paths: g.paths } : {}) };
}

export function toGrant(r: GrantRow): GrantRecord {
  const spec = JSON.parse(r.spec) as GrantSpecColumns;
  return { id: r.id, tenant: r.tenant, sandboxId: r.sandbox_id, secret: r.secret, ...spec, createdAt: r.created_at, ...(r.expires_at ? { expiresAt: r.expires_at } : {}) };
}
