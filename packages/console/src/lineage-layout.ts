/** A tree as the layout reads it (the API's ForkTree fits). */
export interface TreeLike<T> {
  sandbox: T;
  children: readonly TreeLike<T>[];
}

export interface PlacedNode<T> {
  sandbox: T;
  /** Column (0, 1, …; a parent sits midway over its children) and row (its depth). */
  x: number;
  y: number;
}

export interface PlacedEdge<T> {
  from: PlacedNode<T>;
  to: PlacedNode<T>;
}

export interface TreeLayout<T> {
  nodes: PlacedNode<T>[];
  edges: PlacedEdge<T>[];
  /** Columns and rows used (the drawing's size in cells). */
  width: number;
  height: number;
}

/**
 * Lays a fork tree out on a grid: leaves take the next free column left to
 * right in depth-first order, a parent is centred over its first and last
 * child, each level is one row down. Subtrees never overlap, and siblings
 * keep the API's order. Iterative, so a deep tree cannot overflow the stack.
 */
export function layoutTree<T>(root: TreeLike<T>): TreeLayout<T> {
  const nodes: PlacedNode<T>[] = [];
  const edges: PlacedEdge<T>[] = [];
  let nextLeaf = 0;
  let height = 0;
  type Frame = { tree: TreeLike<T>; depth: number; placed: PlacedNode<T>[]; next: number; out: PlacedNode<T>[] };
  const stack: Frame[] = [{ tree: root, depth: 0, placed: [], next: 0, out: [] }];
  while (stack.length) {
    const f = stack[stack.length - 1]!;
    const child = f.tree.children[f.next];
    if (child) {
      f.next++;
      stack.push({ tree: child, depth: f.depth + 1, placed: [], next: 0, out: f.placed });
      continue;
    }
    stack.pop();
    const first = f.placed[0];
    const last = f.placed[f.placed.length - 1];
    const x = first && last ? (first.x + last.x) / 2 : nextLeaf++;
    const node: PlacedNode<T> = { sandbox: f.tree.sandbox, x, y: f.depth };
    nodes.push(node);
    for (const c of f.placed) edges.push({ from: node, to: c });
    f.out.push(node);
    height = Math.max(height, f.depth + 1);
  }
  nodes.reverse();
  return { nodes, edges, width: nextLeaf, height };
}

/** The SVG path of an edge from a parent's bottom to a child's top (cells of `cw`×`ch`, boxes `bh` high): a smooth S. */
export function edgePath(from: { x: number; y: number }, to: { x: number; y: number }, cw: number, ch: number, bh: number): string {
  const x1 = from.x * cw + cw / 2;
  const y1 = from.y * ch + bh;
  const x2 = to.x * cw + cw / 2;
  const y2 = to.y * ch;
  const mid = (y1 + y2) / 2;
  return `M${x1},${y1} C${x1},${mid} ${x2},${mid} ${x2},${y2}`;
}
