/** Minimal HTTP calls against a real daemon for end-to-end tests (no SDK: the server never imports it). */
/** A running API and the key to call it with. */
export interface ApiTarget {
  url: string;
  apiKey: string;
}

export async function api(t: ApiTarget, method: string, path: string, body?: unknown): Promise<{ status: number; json: any; text: string }> {
  const r = await fetch(t.url + path, { method, headers: { 'content-type': 'application/json', authorization: `Bearer ${t.apiKey}` }, body: body ? JSON.stringify(body) : null });
  const text = await r.text();
  let json: unknown;
  try {
    json = text ? JSON.parse(text.split('\n')[0]!) : undefined;
  } catch {
    json = undefined;
  }
  return { status: r.status, json, text };
}

/** Runs a command through the NDJSON exec route; throws unless the route answered 200. */
export async function execHttp(t: ApiTarget, id: string, cmd: string[]): Promise<{ stdout: string; exit: number }> {
  const r = await api(t, 'POST', `/v1/sandboxes/${id}/exec`, { cmd });
  if (r.status !== 200) throw new Error(`exec failed (HTTP ${r.status}): ${r.text}`);
  const events = r.text
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
  const stdout = events
    .filter((e) => e.type === 'stdout')
    .map((e) => Buffer.from(e.data, 'base64').toString())
    .join('');
  return { stdout, exit: events.find((e) => e.type === 'exit')?.exitCode ?? -1 };
}
