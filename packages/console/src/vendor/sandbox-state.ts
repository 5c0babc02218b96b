// The browser loads @forkd/protocol's own module at this URL (assets.json); Node (the unit tests) follows this re-export.
export { SANDBOX_STATES } from '@forkd/protocol/sandbox-state';
export type { SandboxState } from '@forkd/protocol/sandbox-state';
