import type { NodeService } from './node-service.js';

/**
 * Every call of `svc`, as is: the base a wrapper (a gate of the control
 * plane's caller chain) spreads and then overrides the calls it has
 * something to say about, so a method added to the contract passes through
 * each wrapper without being listed in each.
 */
export function forwardTo(svc: NodeService): NodeService {
  return {
    create: (req, claim) => svc.create(req, claim),
    get: (id) => svc.get(id),
    list: () => svc.list(),
    delete: (id) => svc.delete(id),
    setTimeout: (id, seconds) => svc.setTimeout(id, seconds),
    setNetwork: (id, rules) => svc.setNetwork(id, rules),
    setCredentials: (id, creds) => svc.setCredentials(id, creds),
    metrics: (id) => svc.metrics(id),
    spawn: (id, opts, handlers) => svc.spawn(id, opts, handlers),
    attach: (id, sel, handlers, resume) => svc.attach(id, sel, handlers, resume),
    listProcesses: (id) => svc.listProcesses(id),
    signal: (id, sel, signal) => svc.signal(id, sel, signal),
    writeStdin: (id, sel, data, eof) => svc.writeStdin(id, sel, data, eof),
    readFile: (id, path) => svc.readFile(id, path),
    writeFile: (id, path, data, opts) => svc.writeFile(id, path, data, opts),
    listDir: (id, path, depth) => svc.listDir(id, path, depth),
    stat: (id, path) => svc.stat(id, path),
    mkdir: (id, path, user) => svc.mkdir(id, path, user),
    move: (id, from, to) => svc.move(id, from, to),
    remove: (id, path, recursive) => svc.remove(id, path, recursive),
    watch: (id, path, recursive, onEvent) => svc.watch(id, path, recursive, onEvent),
    connectPort: (id, port) => svc.connectPort(id, port),
    snapshot: (id, opts) => svc.snapshot(id, opts),
    timeline: (id) => svc.timeline(id),
    getSnapshot: (snapId) => svc.getSnapshot(snapId),
    deleteSnapshot: (snapId) => svc.deleteSnapshot(snapId),
    pinSnapshot: (snapId, pinned) => svc.pinSnapshot(snapId, pinned),
    pause: (id, opts) => svc.pause(id, opts),
    resume: (id, opts) => svc.resume(id, opts),
    rewind: (id, snapId) => svc.rewind(id, snapId),
    fork: (source, count, claim, opts) => svc.fork(source, count, claim, opts),
    tree: (id) => svc.tree(id),
    exportSnapshot: (snapId) => svc.exportSnapshot(snapId),
    importSnapshot: (manifest, opts) => svc.importSnapshot(manifest, opts),
    templates: () => svc.templates(),
    buildTemplate: (req, progress, claim) => svc.buildTemplate(req, progress, claim),
    deleteTemplate: (name) => svc.deleteTemplate(name),
    exportTemplate: (name) => svc.exportTemplate(name),
    importTemplate: (manifest) => svc.importTemplate(manifest),
    stats: () => svc.stats(),
  };
}
