import { ForkdError, type BuildProgress, type BuildStep, type BuildTemplateRequest, type RegistryAuth, type TemplateInfo } from '@forkd/protocol';
import type { ClaimSandbox } from '../../node-contract/node-types.js';
import type { TemplateImage } from '../../store/store.js';
import { dockerfileSource } from '../../shared/dockerfile/dockerfile-source.js';
import { planDockerfile, type BaseDefaults, type CopyStep, type FromSource, type RunStep, type Step } from '../../shared/dockerfile/dockerfile-plan.js';
import type { ImageVolumes } from '../images/image-volumes.js';
import { layerPathParts, resolveDirInScope } from '../images/scoped-path.js';
import { clampToMaxima } from '../manager/sandbox-maxima.js';
import type { TemplateRegistry } from '../templates/template-registry.js';
import { infoOf, loginShell, runBuild, runLogged, type TemplateBuildHost } from '../templates/template-builder.js';
import { ContextFiles, selectionDigest } from './context-files.js';
import { copyIntoRoot, ownerFor } from './context-copy.js';
import { stepKey, type StepCache } from './step-cache.js';

export interface DockerfileBuildDeps {
  m: TemplateBuildHost;
  templates: TemplateRegistry;
  images: ImageVolumes | undefined;
  steps: StepCache;
}

export type DockerfileRequest = { name: string; dockerfile: string; buildArgs?: Record<string, string> | undefined; context?: BuildTemplateRequest['context']; registryAuth?: RegistryAuth | undefined; ready?: string | undefined };

/** Where the steps start: a volume, its key, the defaults it brings, and what the template says it came from. */
interface Base {
  volume: string;
  key: string;
  defaults: BaseDefaults;
  /** The image reference its sandboxes' image record names. */
  ref: string;
  /** What the template records it was built from: the image reference, or the template's name. */
  from: string;
  shell?: string[] | undefined;
}

/** Where a build is after a step: the key so far, the volume holding its files, and whether every step so far came from the cache. */
interface Cursor {
  key: string;
  volume: string;
  cached: boolean;
}

/**
 * A template from a Dockerfile. Each step that changes files (RUN, COPY,
 * ADD, a WORKDIR that is missing) leaves a volume in the step cache keyed by
 * its parent's key and its inputs (step-cache.ts); a rebuild takes every
 * step whose key is there and runs from the first that is not. RUN runs in
 * a build sandbox as a template build's setup does (same isolation, the
 * tenant's from its first instant); COPY writes the context's files from
 * the request (context-files.ts), never the host's. The last step's tree
 * and the final env, cwd, user and start command become the template; a
 * rebuild whose every input is unchanged leaves the template as it is.
 */
export async function buildFromDockerfile(d: DockerfileBuildDeps, req: DockerfileRequest, progress: BuildProgress, claim?: ClaimSandbox): Promise<TemplateInfo> {
  const { df, from } = dockerfileSource(req.dockerfile, req.buildArgs);
  if (from.kind === 'template' && from.name === req.name) throw new ForkdError('INVALID_ARGUMENT', 'a template cannot be built from itself');
  const files = new ContextFiles(req.context);
  const base = await baseOf(d, from, req.registryAuth, progress);
  const plan = planDockerfile(df, base.defaults, req.buildArgs);
  if (!plan.ok) throw new ForkdError('INVALID_ARGUMENT', `Dockerfile ${plan.error}`, { line: plan.line });
  let at: Cursor = { key: base.key, volume: base.volume, cached: true };
  const total = plan.value.steps.length;
  const budget = { ...COPY_BUDGET };
  for (const s of plan.value.steps) {
    const info: Omit<BuildStep, 'status'> = { index: s.index, total, instruction: s.instruction };
    await progress(`Step ${s.index}/${total} : ${s.instruction}`, { ...info, status: 'start' });
    const t0 = performance.now();
    at = await runStep(d, base, files, budget, s, at, progress, claim);
    const durationMs = Math.round(performance.now() - t0);
    if (at.cached) await progress(' ---> CACHED', { ...info, status: 'cached', durationMs });
    else await progress(` ---> done in ${(durationMs / 1000).toFixed(1)}s`, { ...info, status: 'done', durationMs });
  }
  const f = plan.value.final;
  const image: TemplateImage = { ref: base.ref, env: f.env, ...(f.cwd ? { cwd: f.cwd } : {}), ...(f.user ? { user: f.user } : {}), ...(base.shell ? { shell: base.shell } : {}) };
  image.buildKey = stepKey(at.key, JSON.stringify({ image, start: f.start, ready: req.ready }));
  const current = await d.templates.get(req.name);
  if (current?.image?.buildKey === image.buildKey && (await d.templates.has(req.name))) {
    await progress(`template ${req.name} is up to date`);
    return infoOf(d.templates, req.name);
  }
  if (!f.start) {
    await d.templates.publish(req.name, { rootfsKey: at.volume, from: base.from, image });
    await progress(`template ${req.name} built`);
    return infoOf(d.templates, req.name);
  }
  const stage = await d.templates.stage(at.volume, image);
  try {
    return await runBuild(d.m, d.templates, { name: req.name, source: stage, setup: [], start: f.start, ready: req.ready !== undefined ? loginShell(req.ready) : undefined, from: base.from, image }, progress, claim);
  } finally {
    await d.templates.remove(stage).catch((err) => d.m.logger.warn('staged Dockerfile template cleanup failed', { template: stage, error: String(err) }));
  }
}

async function baseOf(d: DockerfileBuildDeps, from: FromSource, auth: RegistryAuth | undefined, progress: BuildProgress): Promise<Base> {
  if (from.kind === 'image') {
    if (!d.images) throw new ForkdError('NOT_IMPLEMENTED', 'this node cannot build templates from images');
    const img = await d.images.volumeFor(from.ref, { auth, progress });
    const { start: _start, ...defaults } = img.defaults;
    return { volume: img.rootKey, key: stepKey('image', JSON.stringify({ chain: img.cacheKey, defaults, shell: img.shell })), defaults, ref: img.ref, from: img.ref, shell: img.shell };
  }
  const rec = await d.templates.get(from.name);
  if (!rec || !(await d.templates.has(from.name))) throw new ForkdError('NOT_FOUND', `template ${from.name} not found`);
  const i = rec.image;
  // The template as built at that instant: a rebuild of it (a new createdAt) is a new base.
  return {
    volume: d.templates.volume(from.name),
    key: stepKey('template', JSON.stringify({ id: rec.id, createdAt: rec.createdAt })),
    defaults: { env: i?.env ?? {}, cwd: i?.cwd, user: i?.user },
    ref: i?.ref ?? `template:${from.name}`,
    // As a build --from records it: what template exports send incremental against.
    from: from.name,
    shell: i?.shell,
  };
}

async function runStep(d: DockerfileBuildDeps, base: Base, files: ContextFiles, budget: { bytes: number; entries: number }, s: Step, at: Cursor, progress: BuildProgress, claim: ClaimSandbox | undefined): Promise<Cursor> {
  switch (s.kind) {
    case 'meta':
      return unchanged(d, at, stepKey(at.key, s.material));
    case 'workdir': {
      const key = stepKey(at.key, s.material);
      if (await d.steps.has(key)) return { key, volume: d.steps.volume(key), cached: at.cached };
      // Made only where the tree lacks it; either way the key moves on.
      if (await d.steps.hasDir(at.volume, s.path)) return unchanged(d, at, key);
      return { key, volume: await d.steps.make(key, at.volume, (root) => resolveDirInScope(root, layerPathParts(s.path) ?? [], true).then(() => {})), cached: false };
    }
    case 'copy':
      return copyStep(d, files, s, at, budget);
    case 'run':
      return runRun(d, base, s, at, progress, claim);
  }
}

/** A step that changes no files: CACHED when every step before it was and it was made before. */
async function unchanged(d: DockerfileBuildDeps, at: Cursor, key: string): Promise<Cursor> {
  const cached = at.cached && (await d.steps.marked(key));
  if (!cached) await d.steps.mark(key);
  return { key, volume: at.volume, cached };
}

/** What the COPY steps of one build may write (the daemon writes them, outside any sandbox's disk quota). */
export const COPY_BUDGET = { bytes: 256 * 1024 * 1024, entries: 200_000 };

async function copyStep(d: DockerfileBuildDeps, files: ContextFiles, s: CopyStep, at: Cursor, budget: { bytes: number; entries: number }): Promise<Cursor> {
  const selections = s.sources.map((src) => files.select(src));
  for (const { items } of selections) {
    budget.entries -= items.length;
    for (const { entry } of items) if (entry.type === 'file') budget.bytes -= files.blob(entry.sha256).length;
  }
  if (budget.bytes < 0 || budget.entries < 0) throw new ForkdError('INVALID_ARGUMENT', `the Dockerfile's COPY steps copy more than ${COPY_BUDGET.bytes} bytes or ${COPY_BUDGET.entries} files in all`);
  const key = stepKey(at.key, s.material, selectionDigest(selections));
  if (await d.steps.has(key)) return { key, volume: d.steps.volume(key), cached: at.cached };
  const volume = await d.steps.make(key, at.volume, async (root) => {
    const owner = await ownerFor(root, s.chown);
    for (const sel of selections) await copyIntoRoot(root, files, sel, s.dest, s.destIsDir, owner, s.chmod);
  });
  return { key, volume, cached: false };
}

/** A RUN in a build sandbox on the step before (staged as a template of the build's own), its files then taken as the step's. */
async function runRun(d: DockerfileBuildDeps, base: Base, s: RunStep, at: Cursor, progress: BuildProgress, claim: ClaimSandbox | undefined): Promise<Cursor> {
  const key = stepKey(at.key, s.material);
  if (await d.steps.has(key)) return { key, volume: d.steps.volume(key), cached: at.cached };
  const { m, templates } = d;
  const st = s.state;
  const stage = await templates.stage(at.volume, { ref: base.ref, env: st.env, ...(st.cwd !== '/' ? { cwd: st.cwd } : {}), ...(st.user ? { user: st.user } : {}), ...(base.shell ? { shell: base.shell } : {}) });
  try {
    const build = await m.create({ template: stage, ...clampToMaxima({ memoryMb: 2048, cpus: 2 }, m.maxima), snapshotIntervalSeconds: 0, idleTimeoutSeconds: 0 }, claim);
    try {
      // ARGs reach a RUN's environment, under the ENVs of the same name.
      const args = Object.fromEntries(Object.entries(st.args).filter(([k]) => !(k in st.env)));
      const { exitCode, tail } = await runLogged(m, build.id, { argv: s.argv, ...(Object.keys(args).length ? { env: args } : {}) }, progress);
      if (exitCode !== 0) throw new ForkdError('FAILED_PRECONDITION', `Dockerfile step ${s.index} (${s.instruction.slice(0, 200)}) failed with exit ${exitCode ?? 'none'}`, { outputTail: tail, step: s.index });
      await m.pause(build.id);
      const snap = (await m.timeline(build.id)).at(-1);
      if (!snap) throw new ForkdError('INTERNAL', 'the build snapshot is missing');
      return { key, volume: await d.steps.adopt(key, m.snapshotRootfsKey(snap.id)), cached: false };
    } finally {
      await m.delete(build.id).catch((err) => m.logger.warn('build sandbox cleanup failed', { sandbox: build.id, error: String(err) }));
    }
  } finally {
    await templates.remove(stage).catch((err) => m.logger.warn('staged step cleanup failed', { template: stage, error: String(err) }));
  }
}
