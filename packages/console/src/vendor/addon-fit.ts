// The browser loads the fit addon's ES module build at this URL (assets.json).
export { FitAddon } from '@xterm/addon-fit';
