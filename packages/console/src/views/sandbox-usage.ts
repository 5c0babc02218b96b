import type { SandboxMetrics } from '@forkd/protocol';
import { sandboxMetrics } from '../api/sandboxes.js';
import { formatBytes, formatPercent } from '../format.js';
import { Sparkline } from '../ui/chart.js';
import { h } from '../ui/dom.js';
import { poll } from '../ui/poll.js';
import { usageSample } from '../usage.js';
import type { ViewContext } from '../view.js';

const EVERY_MS = 5000;

/** CPU, memory and disk charts from the metrics API, read every five seconds while the page is open and visible. */
export function usagePanel(ctx: ViewContext, id: string, cpus: number): { el: HTMLElement; dispose(): void } {
  const cpu = new Sparkline('CPU');
  const memory = new Sparkline('Memory');
  const disk = new Sparkline('Disk');
  let before: { metrics: SandboxMetrics; at: number } | undefined;
  const read = async () => {
    try {
      const metrics = await sandboxMetrics(ctx.api, id, ctx.signal);
      const at = performance.now();
      const u = usageSample(metrics, before, at, cpus);
      before = { metrics, at };
      if (u.cpuPercent !== undefined) cpu.push(u.cpuPercent, 100, `${formatPercent(u.cpuPercent)} of ${cpus} CPU`);
      memory.push(u.memoryBytes, u.memoryLimitBytes, `${formatBytes(u.memoryBytes)} of ${formatBytes(u.memoryLimitBytes)}`);
      disk.push(u.diskBytes, u.diskLimitBytes ?? u.diskBytes, u.diskLimitBytes ? `${formatBytes(u.diskBytes)} of ${formatBytes(u.diskLimitBytes)}` : formatBytes(u.diskBytes));
    } catch (err) {
      if (ctx.signal.aborted) return;
      // Paused or gone: no sample; the charts say why and keep their line.
      const why = (err as { code?: string }).code ?? 'unavailable';
      for (const c of [cpu, memory, disk]) c.idle(why === 'FAILED_PRECONDITION' || why === 'CONFLICT' ? 'not running' : why);
      before = undefined;
    }
  };
  const stop = poll(read, EVERY_MS);
  const el = h('section', { class: 'panel', 'aria-labelledby': 'usage-title' }, h('h2', { id: 'usage-title' }, 'Usage'), h('div', { class: 'charts' }, cpu.el, memory.el, disk.el));
  return { el, dispose: stop };
}
