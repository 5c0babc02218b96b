import { h } from './dom.js';

const SVG = 'http://www.w3.org/2000/svg';

/** The `points` of a polyline drawing `values` left to right in a W×H box, 0 at the bottom and `max` at the top. */
export function polylinePoints(values: readonly number[], max: number, width: number, height: number): string {
  if (!values.length) return '';
  const top = max > 0 ? max : 1;
  const step = values.length > 1 ? width / (values.length - 1) : 0;
  return values
    .map((v, i) => {
      const y = height - (Math.min(Math.max(v, 0), top) / top) * height;
      return `${+(i * step).toFixed(2)},${+y.toFixed(2)}`;
    })
    .join(' ');
}

function svg<K extends keyof SVGElementTagNameMap>(tag: K, attrs: Record<string, string | number>): SVGElementTagNameMap[K] {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  return el;
}

/** A small line chart with its current value in words (the SVG itself is hidden from screen readers). */
export class Sparkline {
  readonly el: HTMLElement;
  readonly #line = svg('polyline', { points: '' });
  readonly #value = h('span', { class: 'value' }, '–');
  readonly #values: number[] = [];
  readonly #keep: number;

  constructor(title: string, keep = 60) {
    this.#keep = keep;
    const box = svg('svg', { viewBox: '0 0 100 40', preserveAspectRatio: 'none', 'aria-hidden': 'true', focusable: 'false' });
    box.append(svg('rect', { class: 'frame', x: 0, y: 0, width: 100, height: 40 }), this.#line);
    this.el = h('figure', { class: 'chart' }, h('figcaption', {}, `${title}: `, this.#value), box);
  }

  /** Adds a sample; `max` is the chart's top (a limit), `label` the value as shown. */
  push(value: number, max: number, label: string): void {
    this.#values.push(value);
    if (this.#values.length > this.#keep) this.#values.shift();
    this.#line.setAttribute('points', polylinePoints(this.#values, max, 100, 40));
    this.#value.textContent = label;
  }

  /** No sample now (paused, unreachable): the line stays, the value says why. */
  idle(label: string): void {
    this.#value.textContent = label;
  }
}
