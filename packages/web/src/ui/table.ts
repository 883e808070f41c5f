import type { TensorRow } from '../inspect/report.ts';
import { clear, h } from './dom.ts';
import { formatBytes, formatCount, formatShape } from './format.ts';
import { view, visibleWindow, type SortKey, type SortState } from './sort.ts';

/** Must match `--row-h` in style.css: rows are positioned by index × height. */
export const ROW_HEIGHT = 30;

const COLUMNS: ReadonlyArray<{ key: SortKey; label: string; numeric?: boolean }> = [
  { key: 'name', label: 'Name' },
  { key: 'dtype', label: 'DType' },
  { key: 'shape', label: 'Shape' },
  { key: 'params', label: 'Parameters', numeric: true },
  { key: 'bytes', label: 'Size', numeric: true },
  { key: 'range', label: 'Byte range' },
];

/**
 * The tensor table: an ARIA table whose body only holds the rows in view (plus a few either side),
 * so 100 000 tensors cost as much DOM as 40. Headers are buttons: click, Enter or Space sorts,
 * again reverses.
 */
export class TensorTable {
  readonly element: HTMLElement;
  private readonly viewport: HTMLElement;
  private readonly canvas: HTMLElement;
  private readonly body: HTMLElement;
  private readonly status: HTMLElement;
  private readonly input: HTMLInputElement;
  private readonly headers = new Map<SortKey, HTMLElement>();
  private order: number[] = [];
  private sort: SortState = { key: 'order', dir: 1 };
  private frame = 0;
  private window: [number, number] = [-1, -1];

  private readonly showFile: boolean;

  constructor(private readonly rows: readonly TensorRow[]) {
    // Name the file (shard number, archive member) only when the data lives in more than one.
    this.showFile = new Set(rows.map((r) => r.file)).size > 1;
    this.input = h('input', { type: 'search', id: 'filter', placeholder: 'Filter by name or dtype', 'aria-label': 'Filter tensors by name or dtype', autocomplete: 'off', spellcheck: 'false' });
    this.status = h('span', { class: 'muted', id: 'table-status', role: 'status' });
    const headRow = h('div', { class: 'tr head', role: 'row' });
    for (const c of COLUMNS) {
      const button = h('button', { type: 'button', class: 'sort', 'data-key': c.key }, c.label, h('span', { class: 'arrow', 'aria-hidden': 'true' }));
      button.addEventListener('click', () => this.sortBy(c.key));
      const cell = h('div', { class: `th${c.numeric ? ' num' : ''}`, role: 'columnheader', 'aria-sort': 'none' }, button);
      this.headers.set(c.key, cell);
      headRow.append(cell);
    }
    this.body = h('div', { class: 'rows', role: 'rowgroup' });
    this.canvas = h('div', { class: 'canvas' }, this.body);
    this.viewport = h('div', { class: 'viewport', tabindex: 0, 'aria-label': 'Tensors (scroll with arrow keys)' }, this.canvas);
    const table = h('div', { class: 'grid', role: 'table', 'aria-label': 'Tensors', 'aria-rowcount': rows.length + 1, 'aria-describedby': 'table-status' }, h('div', { role: 'rowgroup' }, headRow), this.viewport);
    this.element = h('div', { class: 'table-wrap' }, h('div', { class: 'toolbar' }, this.input, this.status), table);
    this.input.addEventListener('input', () => this.refresh());
    this.viewport.addEventListener('scroll', () => this.schedule(), { passive: true });
    new ResizeObserver(() => this.schedule()).observe(this.viewport);
    this.refresh();
  }

  private sortBy(key: SortKey): void {
    this.sort = this.sort.key === key ? { key, dir: this.sort.dir === 1 ? -1 : 1 } : { key, dir: key === 'params' || key === 'bytes' ? -1 : 1 };
    for (const [k, cell] of this.headers) {
      cell.setAttribute('aria-sort', k !== this.sort.key ? 'none' : this.sort.dir === 1 ? 'ascending' : 'descending');
    }
    this.refresh();
  }

  /** Filter or sort changed: recompute the order, back to the top. */
  private refresh(): void {
    this.order = view(this.rows, this.input.value, this.sort);
    this.canvas.style.height = `${this.order.length * ROW_HEIGHT}px`;
    this.viewport.scrollTop = 0;
    const total = this.rows.length;
    this.status.textContent = this.order.length === total ? `${formatCount(total)} tensors` : `${formatCount(this.order.length)} of ${formatCount(total)} tensors`;
    this.window = [-1, -1];
    this.render();
  }

  private schedule(): void {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.render();
    });
  }

  /** Rebuilds the rows in view when the window moved; rows are positioned by one transform. */
  private render(): void {
    const height = this.viewport.clientHeight || ROW_HEIGHT * 20;
    const [first, last] = visibleWindow(this.viewport.scrollTop, height, ROW_HEIGHT, this.order.length);
    if (first === this.window[0] && last === this.window[1]) return;
    this.window = [first, last];
    clear(this.body);
    this.body.style.transform = `translateY(${first * ROW_HEIGHT}px)`;
    for (let i = first; i < last; i++) this.body.append(this.row(this.rows[this.order[i]!]!, i));
  }

  private row(r: TensorRow, position: number): HTMLElement {
    const range = r.begin === null || r.end === null ? '—' : `${formatCount(r.begin)} – ${formatCount(r.end)}`;
    const where = r.file === null ? 'not a plain byte range (deflated, strided or byte-swapped data)' : `${r.file}: bytes ${r.begin} to ${r.end}`;
    return h(
      'div',
      { class: 'tr', role: 'row', 'aria-rowindex': position + 2 },
      h('div', { class: 'td name', role: 'cell', title: r.name }, r.name),
      h('div', { class: 'td', role: 'cell' }, h('span', { class: `dtype dt-${r.dtype.toLowerCase()}` }, r.dtype)),
      h('div', { class: 'td mono', role: 'cell' }, formatShape(r.shape)),
      h('div', { class: 'td num', role: 'cell' }, formatCount(r.params)),
      h('div', { class: 'td num', role: 'cell', title: `${formatCount(r.bytes)} bytes` }, formatBytes(r.bytes)),
      h('div', { class: 'td mono range', role: 'cell', title: where }, this.showFile && r.file !== null ? h('span', { class: 'file' }, shortFile(r.file)) : null, range),
    );
  }
}

/** `model-00001-of-00004.safetensors` → `00001`; `x.pt:archive/data/3` → `data/3`. */
function shortFile(file: string): string {
  const member = /:(?:[^/]*\/)?(.+)$/.exec(file);
  if (member) return member[1]!;
  const shard = /-(\d{5})-of-\d{5}\./.exec(file);
  return shard ? shard[1]! : file;
}
