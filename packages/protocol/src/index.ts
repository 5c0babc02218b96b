export * from './errors.js';
export * from './ids.js';
export * from './sandbox-state.js';
export * from './sandbox.js';
export * from './exec.js';
export * from './files.js';
export * from './snapshot.js';
export * from './auth.js';
