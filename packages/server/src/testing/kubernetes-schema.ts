import { join } from 'node:path';
import ts from 'typescript';
import { REPO_ROOT } from '../shared/config.js';
import type { KubeObject } from './kustomize.js';

/** `kubernetes-models/<group/version>/<Kind>`: the model of a built-in kind (core `v1` has no group). */
function modelPath(o: KubeObject): string {
  if (!/^[a-z0-9.]*\/?v[0-9a-z]+$/.test(o.apiVersion) || !/^[A-Z][A-Za-z]+$/.test(o.kind)) throw new Error(`${o.apiVersion} ${o.kind}: not a built-in kind`);
  return `kubernetes-models/${o.apiVersion}/${o.kind}`;
}

const describe = (o: KubeObject) => `${o.kind} ${o.metadata.namespace ?? ''}/${o.metadata.name}`;

/**
 * What the API server would refuse, found without one: each object against
 * the Kubernetes OpenAPI schemas (kubernetes-models' validators: types,
 * required fields, formats), then against the same schemas' TypeScript
 * declarations for fields the schema does not have (the schemas allow
 * unknown fields; the API server's strict field validation, kubectl's
 * default, refuses them). Returns one line per problem; none is valid.
 */
export async function kubernetesProblems(objects: readonly KubeObject[]): Promise<string[]> {
  const out: string[] = [];
  const known: KubeObject[] = [];
  for (const o of objects) {
    let model: Record<string, unknown>;
    try {
      model = (await import(modelPath(o))) as Record<string, unknown>;
    } catch (err) {
      out.push(`${describe(o)}: ${(err as Error).message}`);
      continue;
    }
    const Model = model[o.kind] as (new (data: unknown) => { validate(): void }) | undefined;
    if (!Model) {
      out.push(`${describe(o)}: no model`);
      continue;
    }
    known.push(o);
    try {
      new Model(o).validate();
    } catch (err) {
      out.push(`${describe(o)}: ${(err as Error).message}`);
    }
  }
  return [...out, ...unknownFields(known)];
}

/** Type-checks every object as a literal of its kind's interface: TypeScript reports every field the interface lacks, and wrong types. */
function unknownFields(usable: readonly KubeObject[]): string[] {
  if (!usable.length) return [];
  const imports = usable.map((o, i) => `import type { I${o.kind} as T${i} } from '${modelPath(o)}';`);
  const lines = usable.map((o, i) => `export const o${i}: T${i} = ${JSON.stringify(o)};`);
  const file = join(REPO_ROOT, 'packages/server/src/testing/kubernetes-check.virtual.ts');
  const text = [...imports, ...lines].join('\n');
  const options: ts.CompilerOptions = { strict: true, noEmit: true, module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, target: ts.ScriptTarget.ES2022, types: [], skipLibCheck: true };
  const host = ts.createCompilerHost(options);
  const { getSourceFile, fileExists, readFile } = host;
  host.getSourceFile = (name, lang, ...rest) => (name === file ? ts.createSourceFile(name, text, lang) : getSourceFile.call(host, name, lang, ...rest));
  host.fileExists = (name) => name === file || fileExists.call(host, name);
  host.readFile = (name) => (name === file ? text : readFile.call(host, name));
  const program = ts.createProgram([file], options, host);
  const source = program.getSourceFile(file)!;
  return [...program.getSyntacticDiagnostics(source), ...program.getSemanticDiagnostics(source)].map((d) => {
    const line = d.start === undefined ? -1 : source.getLineAndCharacterOfPosition(d.start).line - imports.length;
    const o = usable[line];
    return `${o ? describe(o) : 'manifests'}: ${ts.flattenDiagnosticMessageText(d.messageText, ' ')}`;
  });
}
