import { ForkdError } from '@forkd/protocol/errors';
import type { ProcessSelector } from './types.js';

/** The `{sel}` URL segment: a pid or `tag:<tag>`. */
export function selectorSegment(sel: ProcessSelector): string {
  const o = selectorObject(sel);
  return 'pid' in o ? String(o.pid) : `tag:${encodeURIComponent(o.tag)}`;
}

export function selectorObject(sel: ProcessSelector): { pid: number } | { tag: string } {
  if (typeof sel === 'number') return { pid: sel };
  if (typeof sel === 'object') return 'pid' in sel ? { pid: sel.pid } : { tag: sel.tag };
  if (/^[0-9]+$/.test(sel)) return { pid: Number(sel) };
  const tag = sel.startsWith('tag:') ? sel.slice(4) : sel;
  if (!tag) throw new ForkdError('INVALID_ARGUMENT', 'empty process tag');
  return { tag };
}
