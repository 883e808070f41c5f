import type { Finding } from '@tensorport/core';
import type { Report } from '../inspect/report.ts';
import { h } from './dom.ts';
import { formatBytes, formatCompact, formatCount, formatMs, formatShape } from './format.ts';

/** The parts of the report above and beside the tensor table. Untrusted text goes in as text nodes only. */

const FORMAT_NAMES: Record<string, string> = {
  safetensors: 'safetensors',
  'safetensors-sharded': 'safetensors, sharded',
  npz: 'NumPy .npz',
  npy: 'NumPy .npy',
  'torch-zip': 'PyTorch (zip)',
  'torch-legacy': 'PyTorch (legacy)',
  pickle: 'Python pickle',
};

export function formatName(format: string): string {
  return FORMAT_NAMES[format] ?? format;
}

function card(title: string, id: string, ...body: Array<Node | string | null>): HTMLElement {
  return h('section', { class: 'card', id, 'aria-labelledby': `${id}-title` }, h('h2', { id: `${id}-title` }, title), ...body);
}

export function summary(report: Report, elapsedMs: number): HTMLElement {
  const main = report.files.filter((f) => f.role !== 'ignored');
  const title = report.files.find((f) => f.role === 'index')?.name ?? main[0]?.name ?? 'files';
  const params = report.tensors.reduce((n, t) => n + t.params, 0);
  const bytes = report.tensors.reduce((n, t) => n + t.bytes, 0);
  const unsafe = report.pickle !== null && !report.pickle.safe;
  const verdict = report.valid ? 'valid' : unsafe ? 'unsafe' : 'invalid';
  // A refused file (unsafe pickle, broken header) was never opened: say so rather than "0 tensors".
  const opened = report.valid || report.tensors.length > 0;
  const verdictText = report.valid ? 'Valid' : unsafe ? 'Unsafe: do not load' : 'Invalid';
  return h(
    'section',
    { class: 'summary', id: 'summary', 'aria-label': 'Summary' },
    h(
      'div',
      { class: 'summary-head' },
      h('h2', { class: 'file-title', title }, title),
      h('span', { class: 'badge format', id: 'format', 'data-format': report.format }, formatName(report.format)),
      h('span', { class: `badge verdict ${verdict}`, id: 'verdict', 'data-verdict': verdict, role: 'status' }, verdictText),
    ),
    h(
      'dl',
      { class: 'stats' },
      stat('Tensors', opened ? formatCount(report.tensors.length) : '—'),
      stat('Parameters', opened ? formatCompact(params) : '—', formatCount(params)),
      stat('Tensor bytes', opened ? formatBytes(bytes) : '—', `${formatCount(bytes)} bytes`),
      stat(main.length === 1 ? 'File size' : 'Files', main.length === 1 ? formatBytes(main[0]!.size) : `${formatCount(main.length)} · ${formatBytes(report.totalBytes)}`),
    ),
    h(
      'p',
      { class: 'readline', title: readDetail(report) },
      h('span', { id: 'read' }, `read ${formatBytes(report.bytesRead)} of ${formatBytes(report.totalBytes)}`),
      ' in ',
      h('span', { id: 'elapsed' }, formatMs(elapsedMs)),
      ' · nothing left this tab',
    ),
  );
}

function readDetail(report: Report): string {
  const base = `${formatCount(report.bytesRead)} distinct bytes of ${formatCount(report.totalBytes)}`;
  return report.bytesRequested > report.bytesRead ? `${base} (${formatCount(report.bytesRequested)} requested: some ranges were read twice)` : base;
}

function stat(label: string, value: Node | string, title?: string): HTMLElement {
  return h('div', { class: 'stat', title }, h('dt', {}, label), h('dd', {}, value));
}

export function findings(report: Report): HTMLElement | null {
  if (report.errors.length === 0 && report.warnings.length === 0) return null;
  const list = h('ul', { class: 'findings', id: 'findings' });
  for (const f of report.errors) list.append(finding(f, 'error'));
  for (const f of report.warnings) list.append(finding(f, 'warning'));
  const title = report.valid ? 'Warnings' : 'Why it failed';
  return card(title, 'findings-card', list);
}

function finding(f: Finding, level: 'error' | 'warning'): HTMLElement {
  const where: string[] = [];
  if (f.tensor !== undefined) where.push(`tensor ${JSON.stringify(f.tensor)}`);
  if (f.offset !== undefined) where.push(`offset ${typeof f.offset === 'number' ? formatCount(f.offset) : f.offset}`);
  if (f.path !== undefined) where.push(f.path);
  return h(
    'li',
    { class: `finding ${level}`, 'data-code': f.code },
    h('span', { class: 'level' }, level === 'error' ? 'error' : 'warning'),
    h('code', { class: 'code' }, f.code),
    h('span', { class: 'message' }, f.message),
    where.length > 0 ? h('span', { class: 'where' }, where.join(' · ')) : null,
  );
}

export function pickle(report: Report): HTMLElement | null {
  const p = report.pickle;
  if (!p) return null;
  const bad = p.globals.filter((g) => !g.allowed);
  const verdict = p.safe
    ? h('p', { class: 'pickle-verdict safe', id: 'pickle-verdict' }, `Safe: ${p.pickles} pickle${p.pickles === 1 ? '' : 's'} reference only allowlisted globals (tensor rebuilders, storages, OrderedDict). Nothing was executed.`)
    : h(
        'p',
        { class: 'pickle-verdict unsafe', id: 'pickle-verdict' },
        h('strong', {}, 'Unsafe. '),
        bad.length > 0 ? `Loading this file with pickle (torch.load without weights_only) would import ${bad.map((g) => g.name).join(', ')}.` : 'The pickle is malformed or exceeds the scanner\'s limits (see the findings).',
        ' Nothing was executed here.',
      );
  const list = h('ul', { class: 'globals', id: 'globals' });
  for (const g of p.globals) list.append(h('li', { class: g.allowed ? 'allowed' : 'disallowed', 'data-global': g.name }, h('code', {}, g.name), h('span', { class: 'tag' }, g.allowed ? 'allowed' : 'not allowed')));
  return card('Pickle', 'pickle-card', verdict, p.globals.length > 0 ? list : h('p', { class: 'muted' }, 'No globals.'));
}

export function metadata(report: Report): HTMLElement | null {
  if (!report.metadata) return null;
  if (report.metadata.length === 0) return card('Metadata', 'metadata-card', h('p', { class: 'muted' }, 'Empty __metadata__.'));
  const dl = h('dl', { class: 'kv', id: 'metadata' });
  for (const [k, v] of report.metadata) dl.append(h('dt', {}, k), h('dd', {}, longText(v)));
  return card('Metadata', 'metadata-card', dl);
}

/** Metadata values can be megabytes (a whole config as JSON): show the start, the rest on request. */
const SHORT = 240;

function longText(v: string): Node | string {
  if (v.length <= SHORT) return v;
  return h('details', {}, h('summary', {}, `${v.slice(0, SHORT)}… (${formatCount(v.length)} characters)`), h('pre', { class: 'full' }, v));
}

export function totals(report: Report): HTMLElement | null {
  if (report.totals.length === 0) return null;
  const all = report.tensors.reduce((n, t) => n + t.bytes, 0) || 1;
  const body = h('tbody');
  for (const t of report.totals) {
    const bar = h('span', { class: 'bar' });
    bar.style.width = `${Math.max(1, Math.round((t.bytes / all) * 100))}%`;
    body.append(
      h('tr', { 'data-dtype': t.dtype },
        h('th', { scope: 'row' }, h('span', { class: `dtype dt-${t.dtype.toLowerCase()}` }, t.dtype)),
        h('td', { class: 'num' }, formatCount(t.tensors)),
        h('td', { class: 'num', title: formatCount(t.params) }, formatCompact(t.params)),
        h('td', { class: 'num', title: `${formatCount(t.bytes)} bytes` }, formatBytes(t.bytes)),
        h('td', { class: 'share' }, bar),
      ),
    );
  }
  const table = h('table', { class: 'plain', id: 'totals' },
    h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'DType'), h('th', { scope: 'col', class: 'num' }, 'Tensors'), h('th', { scope: 'col', class: 'num' }, 'Parameters'), h('th', { scope: 'col', class: 'num' }, 'Size'), h('th', { scope: 'col' }, h('span', { class: 'visually-hidden' }, 'Share of bytes')))),
    body);
  return card('By dtype', 'totals-card', table);
}

export function quantization(report: Report): HTMLElement | null {
  const q = report.quantization;
  if (!q) return null;
  if (q.error) return card('MLX quantization', 'quant-card', h('p', { class: 'finding error' }, h('code', { class: 'code' }, q.error.code), ' ', q.error.message));
  const counts = new Map<string, number>();
  for (const l of q.layers) counts.set(`${l.mode} ${l.bits}-bit / ${l.groupSize}`, (counts.get(`${l.mode} ${l.bits}-bit / ${l.groupSize}`) ?? 0) + 1);
  const chips = h('p', { class: 'chips' });
  for (const [k, n] of counts) chips.append(h('span', { class: 'chip' }, `${k} × ${n}`));
  const body = h('tbody');
  for (const l of q.layers) {
    body.append(h('tr', { 'data-layer': l.path },
      h('td', { class: 'mono name', title: l.path }, l.path),
      h('td', { class: 'num' }, l.bits),
      h('td', { class: 'num' }, l.groupSize),
      h('td', {}, l.mode),
      h('td', { class: 'mono' }, formatShape(l.shape)),
      h('td', { class: 'muted' }, l.source === 'config' ? 'config.json' : l.source === 'metadata' ? '__metadata__' : l.source === 'shape' ? 'from shapes' : l.source),
    ));
  }
  const table = h('table', { class: 'plain', id: 'quantization' },
    h('thead', {}, h('tr', {}, ...['Layer', 'Bits', 'Group', 'Mode', 'Dequantized shape', 'From'].map((t, i) => h('th', { scope: 'col', class: i === 1 || i === 2 ? 'num' : undefined }, t)))),
    body);
  return card(`MLX quantization · ${q.layers.length} layer${q.layers.length === 1 ? '' : 's'}`, 'quant-card', chips, h('div', { class: 'scroll-y' }, table));
}

export function filesAndNotes(report: Report): HTMLElement {
  const list = h('ul', { class: 'files', id: 'files' });
  for (const f of report.files) list.append(h('li', { class: f.role }, h('code', {}, f.name), h('span', { class: 'muted' }, ` ${formatBytes(f.size)} · ${f.role}`)));
  const notes = h('ul', { class: 'notes' });
  for (const n of report.notes) notes.append(h('li', {}, n));
  return card('Files', 'files-card', list, report.notes.length > 0 ? notes : null);
}
