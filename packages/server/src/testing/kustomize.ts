import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';

/** A Kubernetes object as a manifest states it. */
export type KubeObject = Record<string, unknown> & { apiVersion: string; kind: string; metadata: { name: string; namespace?: string } };

/** The only fields of a kustomization.yaml this renderer knows: anything else is refused, never ignored. */
const KNOWN_FIELDS = new Set(['apiVersion', 'kind', 'resources']);

/**
 * Renders a kustomization the way `kustomize build` does for what forkd's
 * manifests use: `resources` (files and directories holding a
 * kustomization), in order, each object once. A field it does not implement
 * (patches, generators, namespace) is an error, so a manifest change that
 * needs a real kustomize feature fails here instead of being checked wrong.
 */
export async function renderKustomization(dir: string): Promise<KubeObject[]> {
  const k = parseOne(await readFile(join(dir, 'kustomization.yaml'), 'utf8'), `${dir}/kustomization.yaml`);
  for (const f of Object.keys(k)) if (!KNOWN_FIELDS.has(f)) throw new Error(`${dir}/kustomization.yaml: field ${f} is not rendered by this test`);
  if (k.kind !== 'Kustomization') throw new Error(`${dir}/kustomization.yaml: kind ${String(k.kind)}`);
  const out: KubeObject[] = [];
  for (const r of asStrings(k.resources, `${dir}/kustomization.yaml resources`)) {
    const path = join(dir, r);
    const objs = (await stat(path)).isDirectory() ? await renderKustomization(path) : await loadManifests(path);
    out.push(...objs);
  }
  const seen = new Set<string>();
  for (const o of out) {
    const id = `${o.apiVersion}/${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`;
    if (seen.has(id)) throw new Error(`${dir}: ${id} appears twice`);
    seen.add(id);
  }
  return out;
}

/** Every object of a multi-document YAML file (empty documents skipped). */
export async function loadManifests(file: string): Promise<KubeObject[]> {
  const docs = parseAllDocuments(await readFile(file, 'utf8'), { prettyErrors: true });
  if (!Array.isArray(docs)) throw new Error(`${file}: not a YAML stream`);
  const out: KubeObject[] = [];
  for (const d of docs) {
    if (d.errors.length) throw new Error(`${file}: ${d.errors.map((e) => e.message).join('; ')}`);
    const o: unknown = d.toJS();
    if (o === null || o === undefined) continue;
    out.push(asKubeObject(o, file));
  }
  return out;
}

function parseOne(text: string, where: string): Record<string, unknown> {
  const docs = parseAllDocuments(text);
  if (!Array.isArray(docs) || docs.length !== 1 || docs[0]!.errors.length) throw new Error(`${where}: one YAML document expected`);
  const o: unknown = docs[0]!.toJS();
  if (!isRecord(o)) throw new Error(`${where}: a mapping expected`);
  return o;
}

function asKubeObject(o: unknown, where: string): KubeObject {
  if (!isRecord(o) || typeof o.apiVersion !== 'string' || typeof o.kind !== 'string') throw new Error(`${where}: an object with apiVersion and kind expected`);
  const m = o.metadata;
  if (!isRecord(m) || typeof m.name !== 'string') throw new Error(`${where}: ${o.kind} without metadata.name`);
  return o as KubeObject;
}

function asStrings(v: unknown, where: string): string[] {
  if (!Array.isArray(v) || !v.every((s): s is string => typeof s === 'string')) throw new Error(`${where}: a list of paths expected`);
  return v;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
