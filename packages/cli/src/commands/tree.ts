import type { ForkTree } from '@forkd/sdk';
import { expectPositionals, parseOptions } from '../args.js';
import type { CliCommand } from '../command.js';
import { openSandbox } from '../connect.js';
import { printJson } from '../format.js';

const USAGE = `Usage: forkd tree ID [--json]

Shows a sandbox and, under it, the sandboxes forked from its snapshots
(and theirs, recursively): id, state, and the snapshot each came from.

Options:
      --json   print the tree as JSON: {sandbox, children: [...]}
`;

export function parseTreeArgs(argv: string[]): { id: string; json: boolean } {
  const { values, positionals } = parseOptions({ args: argv, allowPositionals: true, options: { json: { type: 'boolean' } } });
  const [id] = expectPositionals(positionals, ['ID']);
  return { id: id!, json: !!values.json };
}

function label(t: ForkTree, root: boolean): string {
  const s = t.sandbox;
  const state = s.error ? `${s.state} (${s.error})` : s.state;
  return [s.id, state, !root && s.forkedFrom ? `from ${s.forkedFrom}` : ''].filter(Boolean).join('  ');
}

/** One line per sandbox, forks indented under their parent like tree(1). */
export function renderTree(tree: ForkTree): string {
  const lines = [label(tree, true)];
  const walk = (children: readonly ForkTree[], prefix: string) => {
    children.forEach((child, i) => {
      const last = i === children.length - 1;
      lines.push(`${prefix}${last ? '└── ' : '├── '}${label(child, false)}`);
      walk(child.children, prefix + (last ? '    ' : '│   '));
    });
  };
  walk(tree.children, '');
  return lines.join('\n') + '\n';
}

export const treeCommand: CliCommand = {
  name: 'tree',
  usage: USAGE,
  async run(argv) {
    const args = parseTreeArgs(argv);
    const tree = await (await openSandbox(args.id)).tree();
    if (args.json) printJson(tree);
    else process.stdout.write(renderTree(tree));
    return 0;
  },
};
