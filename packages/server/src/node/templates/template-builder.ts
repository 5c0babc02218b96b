import { setTimeout as sleep } from 'node:timers/promises';
import { BuildTemplateRequest, ForkdError, type BuildProgress, type TemplateInfo } from '@forkd/protocol';
import type { CreateSandboxRequest, ProcessInfo, SandboxInfo, SnapshotInfo } from '@forkd/protocol';
import type { GuestClient } from '../guest/guest-client.js';
import type { TemplateImage } from '../../store/store.js';
import type { ImageVolumes } from '../images/image-volumes.js';
import { buildFromImage } from './image-template.js';
import { installAptPackages } from './apt-packages.js';
import { buildFromDockerfile } from '../dockerfile/dockerfile-build.js';
import type { StepCache } from '../dockerfile/step-cache.js';
import type { ClaimSandbox, OutputHandlers, ProcessStream, SpawnOptions } from '../../node-contract/node-types.js';
import type { Logger } from '../../shared/logger.js';
import type { SandboxMaxima } from '../manager/sandbox-maxima.js';
import type { TemplateRegistry } from './template-registry.js';
import { OutputTail } from './output-tail.js';
import { clampToMaxima } from '../manager/sandbox-maxima.js';

/** What is kept of a setup command's output, for the error when it fails. */
const OUTPUT_TAIL_BYTES = 64 * 1024;
const READY_TIMEOUT_MS = 120_000;

/** What a build needs of the node: public methods of the SandboxManager. */
export interface TemplateBuildHost {
  readonly logger: Logger;
  readonly maxima: SandboxMaxima;
  create(req: CreateSandboxRequest, claim?: ClaimSandbox): Promise<SandboxInfo>;
  spawn(id: string, opts: SpawnOptions, handlers?: OutputHandlers): Promise<ProcessStream>;
  usage(id: string): Promise<{ cpuNanos: number }>;
  pause(id: string): Promise<SandboxInfo>;
  timeline(id: string): Promise<SnapshotInfo[]>;
  /** A snapshot's memory images: their host path and the first host id of the user namespace range they were dumped with (the runtime reads it from them). */
  snapshotImages(snapId: string): Promise<{ dir: string; idmap: number | undefined }>;
  /** Storage key of a snapshot's read-only root. */
  snapshotRootfsKey(snapId: string): string;
  delete(id: string): Promise<void>;
  guest(id: string): Promise<{ listProcesses(): Promise<ProcessInfo[]> } & Pick<GuestClient, 'readFile' | 'writeFile'>>;
}

/** A build as it runs: from a template (possibly a build's staged image root), with argv already made. */
export interface BuildPlan {
  name: string;
  /** The template the build sandbox starts from. */
  source: string;
  /** Debian packages installed before setup (apt-packages.ts). */
  aptPackages?: readonly string[] | undefined;
  setup: readonly string[];
  /** The start command's argv (a login bash for a request's `start`, an image's Entrypoint and Cmd). */
  start?: string[] | undefined;
  /** Run until it exits 0 before the template is taken (a request's `ready`). */
  ready?: string[] | undefined;
  /** What the template records it was built from. */
  from: string;
  image?: TemplateImage | undefined;
}

/** What builds other than from a template need of the node: image volumes, and the Dockerfile step cache. */
export interface BuildSources {
  images?: ImageVolumes | undefined;
  steps?: StepCache | undefined;
}

/** A request's shell strings run by a login bash (an image without bash gets its own shell: spawn-defaults.ts). */
export const loginShell = (cmd: string): string[] => ['/bin/bash', '-lc', cmd];

/**
 * Builds a template from another (an image: image-template.ts): see runBuild.
 * A template built from one that came from an image keeps its defaults.
 */
export async function buildTemplate(m: TemplateBuildHost, templates: TemplateRegistry, sources: BuildSources, input: BuildTemplateRequest, progress: BuildProgress, claim?: ClaimSandbox): Promise<TemplateInfo> {
  const parsed = BuildTemplateRequest.safeParse(input);
  if (!parsed.success) throw new ForkdError('INVALID_ARGUMENT', parsed.error.issues.map((i) => `${i.path.join('.') || 'body'}: ${i.message}`).join('; '));
  const req = parsed.data;
  if (req.name === 'base') throw new ForkdError('FAILED_PRECONDITION', 'the base template is built by forkd setup and cannot be replaced');
  if (req.dockerfile !== undefined) {
    if (!sources.steps) throw new ForkdError('NOT_IMPLEMENTED', 'this node cannot build templates from Dockerfiles');
    return buildFromDockerfile({ m, templates, images: sources.images, steps: sources.steps }, { ...req, dockerfile: req.dockerfile }, progress, claim);
  }
  if (req.copy) {
    const from = req.from!;
    if (req.name === from) throw new ForkdError('INVALID_ARGUMENT', 'a template cannot be a copy of itself');
    await progress(`copying template ${from} to ${req.name}`);
    await templates.copy(from, req.name);
    return infoOf(templates, req.name);
  }
  const images = sources.images;
  if (req.fromImage !== undefined) {
    if (!images) throw new ForkdError('NOT_IMPLEMENTED', 'this node cannot build templates from images');
    return buildFromImage(m, templates, images, { ...req, fromImage: req.fromImage }, progress, claim);
  }
  const from = req.from ?? 'base';
  if (req.name === from) throw new ForkdError('INVALID_ARGUMENT', 'a template cannot be built from itself');
  if (!(await templates.has(from))) throw new ForkdError('NOT_FOUND', `template ${from} not found`);
  const image = (await templates.get(from))?.image;
  if (image && req.aptPackages?.length) throw new ForkdError('INVALID_ARGUMENT', `aptPackages installs the host's Debian release: ${from} comes from an image`);
  return runBuild(m, templates, { name: req.name, source: from, aptPackages: req.aptPackages, setup: req.setup, start: req.start ? loginShell(req.start) : undefined, ready: req.ready ? loginShell(req.ready) : undefined, from, image }, progress, claim);
}

/**
 * Runs the setup commands in a build sandbox, optionally leaves a start
 * command running until its CPU use settles, then pauses it — which
 * captures memory and files at one instant — and publishes that snapshot's
 * root filesystem, plus its memory when the start command still runs (a
 * warm template: sandboxes from it start by restore). A start command that
 * exited by then leaves a cold template: there is nothing to restore.
 */
export async function runBuild(m: TemplateBuildHost, templates: TemplateRegistry, plan: BuildPlan, progress: BuildProgress, claim?: ClaimSandbox): Promise<TemplateInfo> {
  // The build sandbox belongs to the building tenant from its first instant: the tenant's keys reach it, no other tenant's do.
  // Shrunk to the server's maxima on a small host (a 1-CPU machine still builds).
  const build = await m.create({ template: plan.source, ...clampToMaxima({ memoryMb: 2048, cpus: 2 }, m.maxima), snapshotIntervalSeconds: 0, idleTimeoutSeconds: 0 }, claim);
  try {
    if (plan.aptPackages?.length) await installAptPackages(m, build.id, plan.aptPackages, progress);
    for (const cmd of plan.setup) await runSetup(m, build.id, cmd, progress);
    let warm = false;
    if (plan.start) {
      await progress(`start: ${plan.start.join(' ')}`);
      (await m.spawn(build.id, { argv: plan.start, tag: 'start' })).process.detach();
      if (plan.ready) await untilReady(m, build.id, plan.ready, progress);
      await settle(m, build.id);
      const proc = (await (await m.guest(build.id)).listProcesses()).find((p) => p.tag === 'start');
      warm = !!proc?.running;
      if (!warm) await progress(`the start command exited (${proc?.exitCode ?? proc?.signal ?? '?'}) before the template was taken: it is cold`);
    }
    await m.pause(build.id);
    const snap = (await m.timeline(build.id)).at(-1);
    if (!snap) throw new ForkdError('INTERNAL', 'the build snapshot is missing');
    const images = warm ? await m.snapshotImages(snap.id) : undefined;
    await templates.publish(plan.name, { rootfsKey: m.snapshotRootfsKey(snap.id), imagesDir: images?.dir, from: plan.from, idmap: images?.idmap, image: plan.image });
    await progress(`template ${plan.name} built${warm ? ' (warm)' : ''}`);
    return await infoOf(templates, plan.name);
  } finally {
    await m.delete(build.id).catch((err) => m.logger.warn('build sandbox cleanup failed', { sandbox: build.id, error: String(err) }));
  }
}

export async function infoOf(templates: TemplateRegistry, name: string): Promise<TemplateInfo> {
  const info = (await templates.list()).find((t) => t.name === name);
  if (!info) throw new ForkdError('INTERNAL', `template ${name} vanished after build`);
  return info;
}

export async function runSetup(m: TemplateBuildHost, id: string, cmd: string, progress: BuildProgress): Promise<void> {
  await progress(`$ ${cmd}`);
  const { exitCode, tail } = await runLogged(m, id, { argv: loginShell(cmd) }, progress);
  if (exitCode !== 0) throw new ForkdError('FAILED_PRECONDITION', `setup command failed (exit ${exitCode ?? 'none'}): ${cmd}`, { outputTail: tail });
}

/**
 * Runs a build's command, its output streamed to `progress`. Only a bounded
 * tail is kept (for the error); the rest streams with back-pressure:
 * awaiting `progress` stops reading the guest, whose ring then holds or
 * drops output, so `yes` cannot grow the daemon's memory.
 */
export async function runLogged(m: TemplateBuildHost, id: string, opts: SpawnOptions, progress: BuildProgress): Promise<{ exitCode: number | undefined; tail: string }> {
  const tail = new OutputTail(OUTPUT_TAIL_BYTES);
  const collect = (d: Buffer) => {
    tail.push(d);
    return progress(d.toString().trimEnd());
  };
  const { exit } = await m.spawn(id, opts, { onStdout: collect, onStderr: collect });
  const e = await exit;
  return { exitCode: e?.exitCode, tail: tail.text().slice(-4000) };
}

/**
 * Runs the ready command until it exits 0 (at most 120 s): the start
 * command's CPU may go quiet before it is ready (waiting on a child), and a
 * template taken then starts every sandbox before its server listens.
 */
async function untilReady(m: TemplateBuildHost, id: string, argv: string[], progress: (line: string) => void | Promise<void>): Promise<void> {
  await progress(`ready: ${argv.at(-1)}`);
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    const e = await (await m.spawn(id, { argv })).exit;
    if (e?.exitCode === 0) return;
    if (Date.now() > deadline) throw new ForkdError('FAILED_PRECONDITION', `the ready command did not succeed within ${READY_TIMEOUT_MS / 1000} s (last exit ${e?.exitCode ?? 'none'})`);
    // Polled: readiness of a server in the sandbox has no event forkd can wait on.
    await sleep(200);
  }
}

/**
 * Waits until a sandbox's CPU use settles (its start command finished
 * warming up), at most 60 s. A measurement over time, so it samples every
 * 200 ms: there is no event to block on for "the CPU went quiet".
 */
async function settle(m: TemplateBuildHost, id: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  let prev = (await m.usage(id)).cpuNanos;
  await sleep(300);
  while (Date.now() < deadline) {
    await sleep(200);
    const cur = (await m.usage(id)).cpuNanos;
    if ((cur - prev) / 200e6 < 0.05) return;
    prev = cur;
  }
}
