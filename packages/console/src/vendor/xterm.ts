// The browser loads xterm.js's ES module build at this URL (assets.json).
export { Terminal } from '@xterm/xterm';
export type { ITerminalOptions } from '@xterm/xterm';
