import { setTimeout as sleep } from 'node:timers/promises';
import { BuildTemplateRequest, ForkdError, type TemplateInfo } from '@forkd/protocol';
import type { CreateSandboxRequest, SandboxInfo, SnapshotInfo } from '@forkd/protocol';
import type { ClaimSandbox, OutputHandlers, ProcessStream, SpawnOptions } from '../../node-contract/node-types.js';
import type { Logger } from '../../shared/logger.js';
import type { SandboxMaxima } from '../manager/sandbox-maxima.js';
import type { TemplateRegistry } from './template-registry.js';
import { OutputTail } from './output-tail.js';
import { clampToMaxima } from '../manager/sandbox-maxima.js';

/** What is kept of a setup command's output, for the error when it fails. */
const OUTPUT_TAIL_BYTES = 64 * 1024;

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
}

/**
 * Builds a template from another: runs the setup commands in a build sandbox,
 * optionally leaves a start command running until its CPU use settles, then
 * pauses it — which captures memory and files at one instant — and publishes
 * that snapshot's root filesystem, plus its memory when there is a start
 * command (a warm template: sandboxes from it start by restore).
 */
export async function buildTemplate(m: TemplateBuildHost, templates: TemplateRegistry, input: BuildTemplateRequest, progress: (line: string) => void | Promise<void>, claim?: ClaimSandbox): Promise<TemplateInfo> {
  const parsed = BuildTemplateRequest.parse(input);
  const req = { ...parsed, from: parsed.from ?? 'base' };
  if (req.name === req.from) throw new ForkdError('INVALID_ARGUMENT', 'a template cannot be built from itself');
  if (req.name === 'base') throw new ForkdError('FAILED_PRECONDITION', 'the base template is built by forkd setup and cannot be replaced');
  if (!(await templates.has(req.from))) throw new ForkdError('NOT_FOUND', `template ${req.from} not found`);
  // The build sandbox belongs to the building tenant from its first instant: the tenant's keys reach it, no other tenant's do.
  // Shrunk to the server's maxima on a small host (a 1-CPU machine still builds).
  const build = await m.create({ template: req.from, ...clampToMaxima({ memoryMb: 2048, cpus: 2 }, m.maxima), snapshotIntervalSeconds: 0, idleTimeoutSeconds: 0 }, claim);
  try {
    for (const cmd of req.setup) {
      await progress(`$ ${cmd}`);
      // Only a bounded tail is kept (for the error); the rest streams with
      // back-pressure: awaiting `progress` stops reading the guest, whose ring
      // then holds or drops output, so `yes` cannot grow the daemon's memory.
      const tail = new OutputTail(OUTPUT_TAIL_BYTES);
      const collect = (d: Buffer) => {
        tail.push(d);
        return progress(d.toString().trimEnd());
      };
      const { exit } = await m.spawn(build.id, { argv: ['/bin/bash', '-lc', cmd] }, { onStdout: collect, onStderr: collect });
      const e = await exit;
      if (!e || e.exitCode !== 0) {
        throw new ForkdError('FAILED_PRECONDITION', `setup command failed (exit ${e?.exitCode ?? 'none'}): ${cmd}`, { outputTail: tail.text().slice(-4000) });
      }
    }
    if (req.start) {
      await progress(`start: ${req.start}`);
      (await m.spawn(build.id, { argv: ['/bin/bash', '-lc', req.start], tag: 'start' })).process.detach();
      await settle(m, build.id);
    }
    await m.pause(build.id);
    const snap = (await m.timeline(build.id)).at(-1);
    if (!snap) throw new ForkdError('INTERNAL', 'the build snapshot is missing');
    const images = req.start ? await m.snapshotImages(snap.id) : undefined;
    await templates.publish(req.name, m.snapshotRootfsKey(snap.id), images?.dir, req.from, images?.idmap);
    await progress(`template ${req.name} built${req.start ? ' (warm)' : ''}`);
    const info = (await templates.list()).find((t) => t.name === req.name);
    if (!info) throw new ForkdError('INTERNAL', `template ${req.name} vanished after build`);
    return info;
  } finally {
    await m.delete(build.id).catch((err) => m.logger.warn('build sandbox cleanup failed', { sandbox: build.id, error: String(err) }));
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
