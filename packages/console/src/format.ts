const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];

/** 1536 → "1.5 KiB". */
export function formatBytes(n: number): string {
  if (!Number.isFinite(n) || n < 0) return '–';
  let v = n;
  let u = 0;
  while (v >= 1024 && u < UNITS.length - 1) {
    v /= 1024;
    u++;
  }
  return `${u === 0 ? v : v < 10 ? v.toFixed(1) : Math.round(v)} ${UNITS[u]}`;
}

/** A limit in MiB ("512 MiB", "10 GiB"); absent: the server's default. */
export function formatMb(mb: number | undefined): string {
  return mb === undefined ? 'default' : formatBytes(mb * 1024 * 1024);
}

/** How long ago `iso` was, coarsely ("45s", "3m", "2h", "4d"). */
export function formatAge(iso: string, now: number): string {
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return '–';
  const s = Math.max(0, Math.floor((now - t) / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m`;
  if (s < 86400) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86400)}d`;
}

/** A CPU share ("0.5 CPU", "2 CPUs"). */
export function formatCpus(cpus: number): string {
  return `${cpus} ${cpus === 1 ? 'CPU' : 'CPUs'}`;
}

/** A percentage with one decimal below 10 ("3.4%", "57%"). */
export function formatPercent(p: number): string {
  if (!Number.isFinite(p)) return '–';
  return `${p < 10 ? p.toFixed(1) : Math.round(p)}%`;
}

/** `k=v` pairs, one per line or comma-separated, into a map; a pair without `=` is an error. */
export function parsePairs(text: string): { ok: true; value: Record<string, string> } | { ok: false; error: string } {
  const value: Record<string, string> = {};
  for (const raw of text.split(/[\n,]/)) {
    const pair = raw.trim();
    if (!pair) continue;
    const at = pair.indexOf('=');
    if (at <= 0) return { ok: false, error: `"${pair}": expected key=value` };
    value[pair.slice(0, at).trim()] = pair.slice(at + 1).trim();
  }
  return { ok: true, value };
}

/** A duration in milliseconds ("35 ms", "1.2 s", "2m 5s"). */
export function formatMs(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return '–';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`;
  const s = Math.round(ms / 1000);
  return `${Math.floor(s / 60)}m ${s % 60}s`;
}

/** The time of day of `iso` in the browser's zone, to the second ("14:03:27"); another day's also gets its date. */
export function formatClock(iso: string, now: number): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '–';
  const time = d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit', hour12: false });
  return new Date(now).toDateString() === d.toDateString() ? time : `${d.toLocaleDateString()} ${time}`;
}
