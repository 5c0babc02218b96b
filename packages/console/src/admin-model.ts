/** The tenants an admin can see: those with keys and those with sandboxes, sorted, each once. */
export function tenantNames(keys: readonly { tenant: string }[], sandboxes: readonly { tenant?: string | undefined }[]): string[] {
  const names = new Set<string>();
  for (const k of keys) names.add(k.tenant);
  for (const s of sandboxes) if (s.tenant) names.add(s.tenant);
  return [...names].sort();
}

/** "used / limit" with the unit's formatting; a null limit is none ("3 / no limit"). */
export function usageText(used: number, limit: number | null, fmt: (n: number) => string = String): string {
  return `${fmt(used)} / ${limit === null ? 'no limit' : fmt(limit)}`;
}

/** Whether usage is at or past its limit (the table marks it). */
export function atLimit(used: number, limit: number | null): boolean {
  return limit !== null && used >= limit;
}

/** A limit as typed: empty is the server's default (left out), `none` no limit (null), else a number of at least 0. */
export function parseLimit(text: string): { ok: true; value: number | null | undefined } | { ok: false; error: string } {
  const t = text.trim().toLowerCase();
  if (!t) return { ok: true, value: undefined };
  if (t === 'none') return { ok: true, value: null };
  const n = Number(t);
  if (!/^\d+(\.\d+)?$/.test(t) || !Number.isFinite(n)) return { ok: false, error: `"${text.trim()}": a number, "none" or empty (the server's default)` };
  return { ok: true, value: n };
}

/** How an override is shown in its input: the number, `none` for null, empty when absent. */
export function limitText(v: number | null | undefined): string {
  return v === undefined ? '' : v === null ? 'none' : String(v);
}
