import './style.css';
import type { Report } from './inspect/report.ts';
import type { Request, Response } from './worker.ts';
import { filesFromDrop } from './drop.ts';
import { clear, h } from './ui/dom.ts';
import { formatMs } from './ui/format.ts';
import { filesAndNotes, findings, metadata, pickle, quantization, summary, totals } from './ui/sections.ts';
import { TensorTable } from './ui/table.ts';
import { convertPanel, type ConvertPanel } from './ui/convert.ts';

const body = document.body;
const input = document.getElementById('file') as HTMLInputElement;
const dropzone = document.getElementById('drop') as HTMLButtonElement;
const results = document.getElementById('results') as HTMLElement;
const status = document.getElementById('status') as HTMLElement;

// Created at start-up, not on the first file: after load the page makes no request at all.
const worker = new Worker(new URL('./worker.ts', import.meta.url), { type: 'module' });
let nextId = 0;
let pending: { id: number; started: number; files: File[] } | null = null;
let panel: ConvertPanel | null = null;

worker.onmessage = (ev: MessageEvent<Response>) => {
  const m = ev.data;
  if (m.type === 'ready') {
    body.dataset.ready = '1';
    return;
  }
  if (panel?.handle(m)) return;
  if (!pending || m.id !== pending.id || (m.type !== 'failed' && m.type !== 'report')) return;
  const { started, files } = pending;
  pending = null;
  if (m.type === 'failed') showFailure(m.message);
  else show(m.report, started, files);
};
worker.onerror = (ev) => showFailure(`the worker failed to start: ${ev.message || 'unknown error'}`);

function inspect(files: File[], started: number): void {
  if (files.length === 0) return;
  pending = { id: ++nextId, started, files };
  body.dataset.state = 'busy';
  status.textContent = `Reading ${files.length === 1 ? files[0]!.name : `${files.length} files`}…`;
  worker.postMessage({ id: pending.id, files } satisfies Request);
}

function show(report: Report, started: number, files: File[]): void {
  clear(results);
  // Any checkpoint the page can read can be converted; a refused one (unsafe pickle) is refused again, by the converter.
  panel = report.format === 'unknown' ? null : convertPanel(report, files, worker, () => ++nextId);
  status.textContent = '';
  const elapsed = performance.now() - started;
  const table = report.tensors.length > 0 ? new TensorTable(report.tensors) : null;
  const side = [metadata(report), totals(report)].filter((x) => x !== null);
  results.append(
    summary(report, elapsed),
    ...[findings(report), pickle(report)].filter((x) => x !== null),
    side.length > 0 ? h('div', { class: 'columns' }, ...side) : '',
    quantization(report) ?? '',
    panel?.element ?? '',
    table ? h('section', { class: 'card tensors', id: 'tensors-card', 'aria-labelledby': 'tensors-title' }, h('h2', { id: 'tensors-title' }, 'Tensors'), table.element) : '',
    filesAndNotes(report),
  );
  dropzone.classList.add('compact');
  // Measured once the result has been laid out and painted: two frames after the DOM update.
  requestAnimationFrame(() =>
    requestAnimationFrame(() => {
      const ms = performance.now() - started;
      body.dataset.renderMs = String(Math.round(ms));
      const el = document.getElementById('elapsed');
      if (el) el.textContent = formatMs(ms);
      body.dataset.state = 'done';
    }),
  );
}

function showFailure(message: string): void {
  pending = null;
  clear(results);
  status.textContent = '';
  results.append(h('section', { class: 'card', id: 'failure', role: 'alert' }, h('h2', {}, 'Something went wrong'), h('p', {}, 'This is a bug in tensorport, not a verdict on the file: '), h('pre', {}, message)));
  body.dataset.state = 'done';
}

input.addEventListener('change', () => {
  const started = performance.now();
  inspect([...(input.files ?? [])], started);
  // Choosing the same file again must fire `change` again.
  input.value = '';
});

dropzone.addEventListener('click', () => input.click());

let depth = 0;
document.addEventListener('dragenter', (e) => {
  if (!e.dataTransfer?.types.includes('Files')) return;
  depth++;
  body.classList.add('dragging');
});
document.addEventListener('dragleave', () => {
  depth = Math.max(0, depth - 1);
  if (depth === 0) body.classList.remove('dragging');
});
document.addEventListener('dragover', (e) => {
  e.preventDefault();
  if (e.dataTransfer) e.dataTransfer.dropEffect = 'copy';
});
document.addEventListener('drop', (e) => {
  e.preventDefault();
  depth = 0;
  body.classList.remove('dragging');
  const started = performance.now();
  if (e.dataTransfer) void filesFromDrop(e.dataTransfer).then((files) => inspect(files, started));
});

// "/" jumps to the tensor filter, as in many code browsers.
document.addEventListener('keydown', (e) => {
  const target = e.target as HTMLElement | null;
  if (e.key !== '/' || e.ctrlKey || e.metaKey || e.altKey || target?.closest('input, textarea')) return;
  const filter = document.getElementById('filter');
  if (filter) {
    e.preventDefault();
    filter.focus();
  }
});
