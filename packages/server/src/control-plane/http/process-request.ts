import { constants as osConstants } from 'node:os';
import { ForkdError } from '@forkd/protocol';

export function signalNumber(s: number | string): number {
  if (typeof s === 'number') return s;
  const n = (osConstants.signals as Record<string, number>)[s];
  if (!n) throw new ForkdError('INVALID_ARGUMENT', `unknown signal ${s}`);
  return n;
}
