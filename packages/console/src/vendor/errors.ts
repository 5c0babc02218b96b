// The browser loads @forkd/protocol's own errors module at this URL (assets.json); Node (the unit tests) follows this re-export.
export { ERROR_CODES, ForkdError, fromErrorBody, isErrorCode } from '@forkd/protocol/errors';
export type { ErrorCode } from '@forkd/protocol/errors';
