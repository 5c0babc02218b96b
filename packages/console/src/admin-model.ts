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
