import { LiveRows } from './live-rows.js';
import { summarize } from './stats.js';
import { randomBytes } from 'node:crypto';
import { readFile, rm, statfs, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { run, waitFor, type TestNode } from '@forkd/server/testing';
import { pinnedMemory } from './host-measures.js';
import { Podman } from './podman.js';

/** One measurement, with forkd's samples and Podman's equivalent where one exists. */
/** One compared result as a line, printed when it is recorded. */
function comparisonLine(r: Comparison): string {
  const p50 = (xs: number[]) => summarize(xs).p50;
  const f = (x: number) => (Number.isFinite(x) ? x.toFixed(x < 10 ? 2 : 1) : '-');
  return `${r.name}: forkd p50 ${f(p50(r.forkd))} ${r.unit}${r.podman?.length ? `, Podman p50 ${f(p50(r.podman))}` : ''}`;
}

export interface Comparison {
  group: string;
  name: string;
  unit: string;
  forkd: number[];
  podman?: number[];
  /** What Podman did for it. */
  podmanOp?: string;
  /** Lower is better (latency, bytes); false for capacities. */
  lowerIsBetter?: boolean;
}

const MB = 2 ** 20;
const hog = (mb: number) =>
  `import os,time\nb=bytearray()\nfor i in range(${mb}): b+=os.urandom(1<<20)\nopen('/tmp/ready','w').write('1')\nwhile True: time.sleep(1)`;

async function timed<T>(fn: () => Promise<T>): Promise<[number, T]> {
  const t0 = performance.now();
  const v = await fn();
  return [performance.now() - t0, v];
}

async function repeat(n: number, fn: (i: number) => Promise<number>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push(await fn(i));
  return out;
}

/**
 * forkd against Podman (+ runc + CRIU) on the same machine and base root
 * filesystem, operation by operation. Every Podman container is removed at
 * the end, whatever happens.
 */
export async function compareWithPodman(node: TestNode, podman: Podman, opts: { quick: boolean; tmp: string }): Promise<Comparison[]> {
  const q = opts.quick;
  const m = node.manager;
  const rows = new LiveRows<Comparison>(comparisonLine);
  const containers = new Set<string>();
  let seq = 0;
  const name = (what: string) => {
    const n = `fb-${what}-${process.pid}-${seq++}`;
    containers.add(n);
    return n;
  };
  const waitReady = (id: string) => waitFor(async () => (await run(m, id, ['test', '-e', '/tmp/ready'])).exitCode === 0, 60_000, 'the memory hog');
  const podmanReady = (c: string) => waitFor(async () => (await podman.run(['exec', c, 'cat', '/tmp/ready']).catch(() => '')) === '1', 60_000, 'the Podman memory hog');

  try {
    // Create → first exec.
    await m.warmPool.settled();
    const warm = await repeat(q ? 2 : 20, async () => {
      await m.warmPool.settled();
      const [ms, s] = await timed(async () => {
        const s = await m.create({});
        await run(m, s.id, ['true']);
        return s;
      });
      await m.delete(s.id);
      return ms;
    });
    const podRun = await repeat(q ? 2 : 20, async () => {
      const n = name('run');
      const [ms] = await timed(() => podman.run(['run', '--rm', '--name', n, ...Podman.RUN_FLAGS, podman.image, 'true']));
      containers.delete(n);
      return ms;
    });
    rows.push({ group: 'create', name: 'create → first exec completed', unit: 'ms', forkd: warm, podman: podRun, podmanOp: 'podman run --rm IMAGE true' });
    const cold: number[] = [];
    const podStart: number[] = [];
    await m.close();
    for (let i = 0; i < (q ? 2 : 20); i++) {
      const [ms, s] = await timed(async () => {
        const s = await m.create({});
        await run(m, s.id, ['true']);
        return s;
      });
      cold.push(ms);
      await m.delete(s.id);
      const n = name('start');
      await podman.run(['create', '--name', n, ...Podman.RUN_FLAGS, podman.image, 'sleep', 'infinity']);
      const [pms] = await timed(async () => {
        await podman.run(['start', n]);
        await podman.run(['exec', n, 'true']);
      });
      podStart.push(pms);
      await podman.remove([n]);
      containers.delete(n);
    }
    rows.push({ group: 'create', name: 'create → first exec (forkd cold, no warm pool)', unit: 'ms', forkd: cold, podman: podStart, podmanOp: 'podman start (created) + podman exec true' });

    // Exec round trip.
    const s = await m.create({});
    const pc = name('exec');
    await podman.start(pc, ['sleep', 'infinity']);
    rows.push({
      group: 'exec',
      name: 'exec round trip of `true`',
      unit: 'ms',
      forkd: await repeat(q ? 3 : 100, async () => (await timed(() => run(m, s.id, ['true'])))[0]),
      podman: await repeat(q ? 3 : 30, async () => (await timed(() => podman.run(['exec', pc, 'true'])))[0]),
      podmanOp: 'podman exec CONTAINER true',
    });

    // Files in and out.
    for (const size of [1 * MB, 100 * MB]) {
      const data = randomBytes(size);
      const local = join(opts.tmp, 'file.bin');
      await writeFile(local, data);
      const label = size === MB ? '1 MB' : '100 MB';
      const n = q ? 1 : size === MB ? 20 : 5;
      const g = await m.guest(s.id);
      const fw = await repeat(n, async () => (await timed(() => g.writeFile('/tmp/f.bin', data)))[0]);
      const fr = await repeat(n, async () =>
        (
          await timed(async () => {
            const f = await (await m.guest(s.id)).readFile('/tmp/f.bin');
            for await (const c of f.chunks) void c;
          })
        )[0],
      );
      const pw = await repeat(n, async () => (await timed(() => podman.run(['cp', local, `${pc}:/tmp/f.bin`])))[0]);
      const pr = await repeat(n, async () => (await timed(() => podman.run(['cp', `${pc}:/tmp/f.bin`, join(opts.tmp, 'back.bin')])))[0]);
      rows.push({ group: 'files', name: `write ${label} into the sandbox`, unit: 'ms', forkd: fw, podman: pw, podmanOp: 'podman cp FILE CONTAINER:PATH' });
      rows.push({ group: 'files', name: `read ${label} out of the sandbox`, unit: 'ms', forkd: fr, podman: pr, podmanOp: 'podman cp CONTAINER:PATH FILE' });
      await rm(local, { force: true });
      await rm(join(opts.tmp, 'back.bin'), { force: true });
    }
    await m.delete(s.id);
    await podman.remove([pc]);
    containers.delete(pc);

    // Snapshots of a running sandbox at 10 MB, 100 MB and 1 GB of resident memory.
    let snapOf100: { sandbox: string; snap: string; container: string; archive: string } | undefined;
    for (const mb of q ? [10] : [10, 100, 1024]) {
      const n = q ? 1 : mb >= 1024 ? 3 : 5;
      const sb = await m.create({ memoryMb: mb + 512 });
      (await m.spawn(sb.id, { argv: ['python3', '-c', hog(mb)], tag: 'hog' })).process.detach();
      await waitReady(sb.id);
      const frozen: number[] = [];
      const total: number[] = [];
      const added: number[] = [];
      const snaps: string[] = [];
      for (let i = 0; i < n; i++) {
        const [ms, snap] = await timed(() => m.snapshot(sb.id));
        total.push(ms);
        frozen.push(snap.frozenMs);
        snaps.push(snap.id);
        // Memory-image bytes really written (pages shared with the previous snapshot are not).
        added.push(snap.sizeBytes / MB);
      }
      const c = name(`hog${mb}`);
      await podman.run(['run', '-d', '--name', c, ...Podman.RUN_FLAGS, '--memory', `${mb + 512}m`, podman.image, 'python3', '-c', hog(mb)]);
      await podmanReady(c);
      const pFrozen: number[] = [];
      const pTotal: number[] = [];
      const pBytes: number[] = [];
      const archive = join(opts.tmp, `${c}.tar`);
      for (let i = 0; i < n; i++) {
        await rm(archive, { force: true });
        const [ms, st] = await timed(() => podman.checkpoint(c, { leaveRunning: true, exportTo: archive }));
        pTotal.push(ms);
        pFrozen.push(st.frozenMs);
        pBytes.push(st.bytes / MB);
      }
      const label = mb >= 1024 ? '1 GB' : `${mb} MB`;
      rows.push({ group: 'snapshot', name: `snapshot freeze time, ${label} resident`, unit: 'ms', forkd: frozen, podman: pFrozen, podmanOp: 'podman container checkpoint --leave-running (CRIU frozen_time)' });
      rows.push({ group: 'snapshot', name: `snapshot total time, ${label} resident`, unit: 'ms', forkd: total, podman: pTotal, podmanOp: 'podman container checkpoint --leave-running -e FILE' });
      rows.push({ group: 'snapshot-bytes', name: `bytes written per snapshot, ${label} resident (first included)`, unit: 'MB', forkd: added, podman: pBytes, podmanOp: 'size of the exported checkpoint' });
      if (mb === 100 || (q && mb === 10)) snapOf100 = { sandbox: sb.id, snap: snaps[0]!, container: c, archive };
      else {
        await m.delete(sb.id);
        await podman.remove([c]);
        containers.delete(c);
        await rm(archive, { force: true });
      }
    }

    // Restore: resume after pause, fork of one and of ten, rewind (the 100 MB sandbox).
    const t = snapOf100!;
    const n = q ? 1 : 5;
    // forkd's pause is a snapshot whose frozen tree is kept for the hot window: Podman's equal is a checkpoint that leaves it running, then a freeze.
    const resumeHot = await repeat(n, async () => {
      await m.pause(t.sandbox);
      return (await timed(() => m.resume(t.sandbox)))[0];
    });
    const pResumeHot = await repeat(n, async () => {
      await podman.checkpoint(t.container, { leaveRunning: true });
      await podman.run(['pause', t.container]);
      return (await timed(() => podman.run(['unpause', t.container])))[0];
    });
    rows.push({ group: 'restore', name: 'resume after pause (forkd: within the hot window)', unit: 'ms', forkd: resumeHot, podman: pResumeHot, podmanOp: 'podman unpause (after checkpoint --leave-running + pause)' });
    // A hibernation (forkd's own pause, or a pause past its window) kept nothing running: a restore.
    const resume = await repeat(n, async () => {
      await m.hibernate(t.sandbox);
      return (await timed(() => m.resume(t.sandbox)))[0];
    });
    const pResume = await repeat(n, async () => {
      await podman.checkpoint(t.container, { leaveRunning: false });
      return (await timed(() => podman.restore(t.container)))[0];
    });
    rows.push({ group: 'restore', name: 'resume after hibernation (restore)', unit: 'ms', forkd: resume, podman: pResume, podmanOp: 'podman container restore (after checkpoint)' });
    const fork1 = await repeat(n, async () => {
      const [ms, [f]] = await timed(() => m.fork(t.snap));
      await m.delete(f!.id);
      return ms;
    });
    const pFork1 = await repeat(n, async () => {
      const c = name('fork');
      const [ms] = await timed(() => podman.restoreAs(t.archive, c));
      await podman.remove([c]);
      containers.delete(c);
      return ms;
    });
    rows.push({ group: 'restore', name: 'fork of one (from a snapshot)', unit: 'ms', forkd: fork1, podman: pFork1, podmanOp: 'podman container restore --import FILE --name NEW' });
    const fork10 = await repeat(q ? 1 : 3, async () => {
      const [ms, fs] = await timed(() => m.fork(t.snap, 10));
      await Promise.all(fs.map((f) => m.delete(f.id)));
      return ms;
    });
    const pFork10 = await repeat(q ? 1 : 3, async () => {
      const names = Array.from({ length: 10 }, () => name('fork10'));
      const [ms] = await timed(() => Promise.all(names.map((c) => podman.restoreAs(t.archive, c))));
      await podman.remove(names);
      for (const c of names) containers.delete(c);
      return ms;
    });
    rows.push({ group: 'restore', name: 'fork of ten, all running (total)', unit: 'ms', forkd: fork10, podman: pFork10, podmanOp: '10 × podman container restore --import, in parallel' });
    const rewind = await repeat(n, async () => {
      await m.settled();
      return (await timed(() => m.rewind(t.sandbox, t.snap)))[0];
    });
    const pRewind = await repeat(n, async () => (await timed(async () => {
      await podman.remove([t.container]);
      await podman.restoreAs(t.archive, t.container);
    }))[0]);
    rows.push({ group: 'restore', name: 'rewind to an earlier snapshot', unit: 'ms', forkd: rewind, podman: pRewind, podmanOp: 'podman rm -f + restore --import (the state left is lost)' });
    await m.delete(t.sandbox);
    await podman.remove([t.container]);
    containers.delete(t.container);
    await rm(t.archive, { force: true });

    // Density: host memory per idle sandbox, running and hibernated.
    const k = q ? 3 : 20;
    const avail = Number(/MemAvailable:\s+(\d+)/.exec(await readFile('/proc/meminfo', 'utf8'))?.[1] ?? 0) * 1024;
    const settle = () => new Promise((r) => setTimeout(r, 3000));
    await settle();
    const mem0 = await pinnedMemory();
    const idle = await Promise.all(Array.from({ length: k }, () => m.create({})));
    await new Promise((r) => setTimeout(r, 2000));
    const forkdRunning = ((await pinnedMemory()) - mem0) / k;
    // Hibernated, not paused: a pause keeps its frozen tree for the hot window (FORKD_HOT_PAUSE_S), a hibernation nothing.
    for (const sb of idle) await m.hibernate(sb.id);
    const forkdPausedMem = Math.max(0, ((await pinnedMemory()) - mem0) / k);
    // What hibernation wrote: the pause snapshots' memory images (the root filesystem is shared with the template).
    let pausedBytes = 0;
    for (const sb of idle) pausedBytes += (await m.timeline(sb.id)).reduce((a, x) => a + x.sizeBytes, 0);
    const forkdPausedDisk = pausedBytes / k;
    for (const sb of idle) await m.delete(sb.id);
    await settle();
    const pmem0 = await pinnedMemory();
    const idleC = Array.from({ length: k }, () => name('idle'));
    for (const c of idleC) await podman.start(c, ['sleep', 'infinity']);
    await new Promise((r) => setTimeout(r, 2000));
    const podRunning = ((await pinnedMemory()) - pmem0) / k;
    for (const c of idleC) await podman.checkpoint(c, { leaveRunning: false });
    const podPausedMem = Math.max(0, ((await pinnedMemory()) - pmem0) / k);
    let podDisk = 0;
    for (const c of idleC) podDisk += await podman.checkpointBytes(c);
    const podPausedDisk = podDisk / k;
    await podman.remove(idleC);
    for (const c of idleC) containers.delete(c);
    rows.push({ group: 'density', name: 'host memory per idle running sandbox', unit: 'MB', forkd: [forkdRunning / MB], podman: [podRunning / MB], podmanOp: 'podman run -d IMAGE sleep infinity (container + conmon)' });
    // Below ~50 KB the delta is noise (other activity on the host): counted as 50 KB.
    const fit = (bytes: number) => Math.floor(avail / Math.max(bytes, 50 * 1024));
    rows.push({ group: 'density', name: 'idle running sandboxes that fit in available memory', unit: 'count', forkd: [fit(forkdRunning)], podman: [fit(podRunning)], lowerIsBetter: false });
    rows.push({ group: 'density', name: 'host memory per hibernated sandbox', unit: 'MB', forkd: [forkdPausedMem / MB], podman: [podPausedMem / MB], podmanOp: 'podman container checkpoint (stopped)' });
    rows.push({ group: 'density', name: 'disk per hibernated idle sandbox', unit: 'MB', forkd: [forkdPausedDisk / MB], podman: [podPausedDisk / MB], podmanOp: 'checkpoint files under /var/lib/containers' });
    // Hibernated sandboxes use no memory: what bounds them is free disk (each side's own filesystem).
    const free = async (path: string) => {
      const st = await statfs(path);
      return st.bavail * st.bsize;
    };
    // A loop-image pool is a sparse file sized at will (the bench's is a small test pool): the disk under it is the bound.
    const poolFree = await free(node.config.pool.image ? dirname(node.config.pool.image) : node.config.pool.mountPoint);
    const fitDisk = (freeBytes: number, bytes: number) => Math.floor(freeBytes / Math.max(bytes, 4096));
    rows.push({ group: 'density', name: 'hibernated sandboxes that fit on free disk', unit: 'count', forkd: [fitDisk(poolFree, forkdPausedDisk)], podman: [fitDisk(await free('/var/lib/containers'), podPausedDisk)], lowerIsBetter: false });

    // Concurrency: 20 creates at once, each to a first exec.
    const c20 = q ? 4 : 20;
    const conc = await Promise.all(
      Array.from({ length: c20 }, async () => {
        const [ms, sb] = await timed(async () => {
          const sb = await m.create({});
          await run(m, sb.id, ['true']);
          return sb;
        });
        return { ms, id: sb.id };
      }),
    );
    await Promise.all(conc.map((x) => m.delete(x.id)));
    const pConc = await Promise.all(
      Array.from({ length: c20 }, async () => {
        const c = name('conc');
        const [ms] = await timed(() => podman.run(['run', '--rm', '--name', c, ...Podman.RUN_FLAGS, podman.image, 'true']));
        containers.delete(c);
        return ms;
      }),
    );
    rows.push({ group: 'concurrency', name: `${c20} creates at once, each to a first exec`, unit: 'ms', forkd: conc.map((x) => x.ms), podman: pConc, podmanOp: `${c20} × podman run --rm IMAGE true, in parallel` });
  } finally {
    await podman.remove([...containers]);
  }
  return [...rows];
}
