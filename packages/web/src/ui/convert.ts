import type { Report } from '../inspect/report.ts';
import { cliCommand, GGUF_TYPES, suggestedName, type ConvertChoice, type MlxChoice, type ConvertRequest, type ConvertResponse, type Converted, type Destination, type OutputKind } from '../convert/protocol.ts';
import { clear, h } from './dom.ts';
import { formatBytes, formatMs } from './format.ts';

/**
 * The Convert panel: output format, cast, shard size; a picker for the destination (or the
 * origin-private file system and a download where the browser has no pickers); progress, speed,
 * Cancel; then the validation of what was written. The worker does all reading and writing.
 */

const QUANT_MODES: Array<[string, string]> = [
  ['', 'no'],
  ['affine', 'affine'],
  ['mxfp4', 'mxfp4'],
  ['mxfp8', 'mxfp8'],
  ['nvfp4', 'nvfp4'],
];

type Picker = (options?: { suggestedName?: string; mode?: 'readwrite' }) => Promise<FileSystemFileHandle | FileSystemDirectoryHandle>;
const pickers = window as unknown as { showSaveFilePicker?: Picker; showDirectoryPicker?: Picker };

const KINDS: Array<[OutputKind, string]> = [
  ['safetensors', 'safetensors (one file)'],
  ['safetensors-sharded', 'safetensors, sharded (a folder: shards + index)'],
  ['npz', 'NumPy .npz'],
  ['torch', 'PyTorch .pt'],
  ['gguf', 'GGUF (llama.cpp; a Llama, Mistral, Qwen2, Qwen3 or Phi-3 model with its config and tokenizer runs)'],
];

export interface ConvertPanel {
  element: HTMLElement;
  /** A worker message about a conversion; false when it is not one. */
  handle(m: { type: string }): boolean;
}

export function convertPanel(report: Report, files: File[], worker: Worker, nextId: () => number): ConvertPanel {
  const input = report.files.find((f) => f.role === 'index')?.name ?? report.files.find((f) => f.role === 'data')?.name ?? 'model';
  const to = h('select', { id: 'convert-to' }, ...KINDS.map(([k, label]) => h('option', { value: k }, label)));
  const dtype = h('select', { id: 'convert-dtype' }, h('option', { value: '' }, 'keep dtypes'), h('option', { value: 'f16' }, 'F16'), h('option', { value: 'bf16' }, 'BF16'), h('option', { value: 'f32' }, 'F32'));
  const shard = h('input', { id: 'convert-shard', type: 'number', min: '1', step: 'any', value: '5000', inputmode: 'decimal' });
  const shardRow = h('label', { class: 'field', id: 'convert-shard-field', hidden: true }, 'Max shard size (MB, 10⁶ bytes) ', shard);
  const ggufType = h('select', { id: 'convert-gguf-type' }, h('option', { value: '' }, 'keep the float type'), ...GGUF_TYPES.map((t) => h('option', { value: t }, t)));
  const ggufRow = h('label', { class: 'field', id: 'convert-gguf-field', hidden: true }, 'ggml type of the matrices ', ggufType);
  const start = h('button', { type: 'button', id: 'convert-start', class: 'primary' }, 'Convert and save…');
  const cancel = h('button', { type: 'button', id: 'convert-cancel', hidden: true }, 'Cancel');
  const bar = h('progress', { id: 'convert-progress', max: 1, value: 0, hidden: true });
  const line = h('p', { id: 'convert-line', class: 'muted', 'aria-live': 'polite' });
  const cli = h('code', { id: 'convert-cli' });
  const result = h('div', { id: 'convert-result' });
  const quantized = (report.quantization?.layers.length ?? 0) > 0;
  const dequantize = h('input', { id: 'convert-dequantize', type: 'checkbox', checked: quantized });
  // A float checkpoint can be quantized as mlx_lm.convert does (the library's quantizeStep).
  const quantize = h('select', { id: 'convert-quantize' }, ...QUANT_MODES.map(([v, label]) => h('option', { value: v }, label)));
  const qbits = h('select', { id: 'convert-quant-bits' }, ...[2, 3, 4, 5, 6, 8].map((b) => h('option', { value: String(b), selected: b === 4 }, `${b} bits`)));
  const qgroup = h('select', { id: 'convert-quant-group' }, ...[32, 64, 128].map((g) => h('option', { value: String(g), selected: g === 64 }, `group ${g}`)));
  const affineRow = h('span', { id: 'convert-quant-affine', hidden: true }, ' ', qbits, ' ', qgroup);

  const mlx = (): MlxChoice | undefined => {
    if (quantized) return dequantize.checked ? { op: 'dequantize' } : undefined;
    if (quantize.value === '') return undefined;
    const mode = quantize.value as Extract<MlxChoice, { op: 'quantize' }>['mode'];
    // bits and group size are affine's; the fp modes have their own fixed ones
    return mode === 'affine' ? { op: 'quantize', mode, bits: Number(qbits.value), groupSize: Number(qgroup.value) } : { op: 'quantize', mode };
  };
  const choice = (): ConvertChoice => {
    const kind = to.value as OutputKind;
    const c: ConvertChoice = { to: kind };
    const step = mlx();
    if (step) c.mlx = step;
    // quantize writes U32 codes and the scales' dtype: no cast beside it
    if (dtype.value && step?.op !== 'quantize') c.dtype = dtype.value as ConvertChoice['dtype'] & string;
    if (kind === 'safetensors-sharded') c.maxShardSize = Math.round(Number(shard.value) * 1e6);
    if (kind === 'gguf') {
      delete c.dtype; // the ggml type says it (as convert, which casts nothing into a GGUF)
      if (ggufType.value) c.ggufType = ggufType.value as (typeof GGUF_TYPES)[number];
    }
    return c;
  };
  const refresh = () => {
    shardRow.hidden = to.value !== 'safetensors-sharded';
    ggufRow.hidden = to.value !== 'gguf';
    affineRow.hidden = quantize.value !== 'affine';
    dtype.disabled = mlx()?.op === 'quantize' || to.value === 'gguf';
    cli.textContent = cliCommand(input, suggestedName(input, choice().to), choice());
  };
  for (const el of [to, dtype, dequantize, quantize, qbits, qgroup, ggufType]) el.addEventListener('change', refresh);
  shard.addEventListener('input', refresh);
  refresh();

  let running: { id: number; started: number; samples: Array<[number, number]> } | null = null;

  start.addEventListener('click', () => void begin());

  async function begin(): Promise<void> {
    if (running) return;
    const c = choice();
    if (c.maxShardSize !== undefined && !(c.maxShardSize > 0)) return showError('InvalidOption', 'the max shard size must be a positive number of MB');
    const name = suggestedName(input, c.to);
    const directory = c.to === 'safetensors-sharded';
    const pick = directory ? pickers.showDirectoryPicker : pickers.showSaveFilePicker;
    let destination: Destination;
    if (typeof pick === 'function') {
      try {
        destination = { where: 'handle', handle: await pick.call(window, directory ? { mode: 'readwrite' } : { suggestedName: name }) };
      } catch (e) {
        if (e instanceof Error && e.name === 'AbortError') return; // the picker was closed
        throw e;
      }
    } else {
      destination = { where: 'opfs', name, directory };
    }
    running = { id: nextId(), started: performance.now(), samples: [] };
    document.body.dataset.convert = 'running';
    clear(result);
    start.disabled = true;
    cancel.hidden = false;
    bar.hidden = false;
    bar.value = 0;
    line.textContent = destination.where === 'opfs' ? 'Writing to this browser’s private storage…' : `Writing ${destination.handle.name}…`;
    worker.postMessage({ kind: 'convert', id: running.id, files, choice: c, destination } satisfies ConvertRequest);
  }

  cancel.addEventListener('click', () => {
    if (running) worker.postMessage({ kind: 'cancel', id: running.id });
  });

  function finish(state: 'done' | 'failed' | 'cancelled'): void {
    running = null;
    start.disabled = false;
    cancel.hidden = true;
    bar.hidden = state !== 'done';
    document.body.dataset.convert = state;
  }

  function showError(code: string, message: string): void {
    result.append(h('div', { class: 'finding error', id: 'convert-error', 'data-code': code, role: 'alert' }, h('span', { class: 'code' }, code), ' ', message, h('p', { class: 'muted' }, 'Nothing was left under the chosen name.')));
  }

  function progress(done: number, total: number): void {
    if (!running) return;
    const now = performance.now();
    const s = running.samples;
    s.push([now, done]);
    while (s.length > 2 && now - s[0]![0] > 3000) s.shift(); // speed over the last 3 s
    const [t0, d0] = s[0]!;
    const speed = now > t0 ? (done - d0) / ((now - t0) / 1000) : 0;
    bar.max = Math.max(1, total);
    bar.value = done;
    line.textContent = `${formatBytes(done)} of ${formatBytes(total)} · ${formatBytes(Math.round(speed))}/s`;
    line.dataset.done = String(done);
    line.dataset.total = String(total);
  }

  function converted(r: Converted): void {
    const rate = r.bytes / Math.max(0.001, r.ms / 1000);
    line.textContent = `${formatBytes(r.bytes)} written in ${formatMs(r.ms)} · ${formatBytes(Math.round(rate))}/s`;
    const v = r.validation;
    result.append(
      h('p', {}, h('span', { class: `badge verdict ${v.valid ? 'valid' : 'invalid'}`, id: 'convert-valid', 'data-valid': String(v.valid) }, v.valid ? 'Output valid' : 'Output invalid'), ` re-read and checked by tensorport validate (${v.format ?? 'unknown format'}); ${r.tensors} tensors, ${r.cast} cast${r.quantized === null ? '' : `, ${r.quantized} MLX layers`}`),
      ...v.errors.map((e) => h('div', { class: 'finding error', 'data-code': e.code }, h('span', { class: 'code' }, e.code), ' ', e.message)),
      ...r.warnings.map((w) => h('div', { class: 'finding warning', 'data-code': w.code }, h('span', { class: 'code' }, w.code), ' ', w.message)),
      h('ul', { id: 'convert-files', class: 'plain' }, ...r.files.map((f, i) => h('li', { 'data-name': f.name, 'data-size': f.size }, f.name, ` · ${formatBytes(f.size)} `, r.opfsDir ? downloadButton(f.name, i, r.opfsDir, r.files.length > 1 ? r.files.length : 0) : ''))),
    );
    if (r.opfsDir) result.append(h('p', { class: 'muted' }, 'Saved in this browser’s private storage (no file picker here). Download each file; the copy is removed when you convert again.'));
  }

  return {
    element: h(
      'section',
      { class: 'card convert', id: 'convert', 'aria-labelledby': 'convert-title' },
      h('h2', { id: 'convert-title' }, 'Convert'),
      h('div', { class: 'convert-form' }, h('label', { class: 'field' }, 'Output ', to), h('label', { class: 'field' }, 'Cast ', dtype), shardRow, ggufRow),
      quantized
        ? h('p', { id: 'convert-mlx' }, h('label', { class: 'field' }, dequantize, ' Dequantize the MLX layers (to the scales’ dtype, or the cast’s; bits and group size from config.json when dropped with the model). Unticked: packed weights, scales and biases are written as they are.'))
        : h('p', { id: 'convert-mlx' }, h('label', { class: 'field' }, 'MLX quantize ', quantize), affineRow, h('span', { class: 'muted' }, ' as mlx_lm.convert does (Linear and Embedding weights; config.json from the drop). A folder output is an mlx-lm model directory.')),
      h('div', { class: 'convert-actions' }, start, cancel, bar),
      line,
      result,
      h('p', { class: 'muted small' }, 'Same bytes as ', cli, '. ', support()),
    ),
    handle(m) {
      const r = m as ConvertResponse;
      if (!['progress', 'converted', 'convert-failed', 'cancelled'].includes(r.type)) return false;
      if (!running || r.id !== running.id) return true;
      if (r.type === 'progress') progress(r.done, r.total);
      else if (r.type === 'converted') {
        finish('done');
        converted(r.result);
      } else if (r.type === 'cancelled') {
        finish('cancelled');
        line.textContent = 'Cancelled: nothing was left under the chosen name.';
      } else {
        finish('failed');
        line.textContent = 'The conversion failed.';
        showError(r.code, r.message);
      }
      return true;
    },
  };
}

/** What this browser can do, in words. */
function support(): string {
  if (typeof pickers.showSaveFilePicker === 'function') {
    return 'This browser writes straight to the file or folder you choose (File System Access API); the output appears under its name only when complete.';
  }
  return 'This browser has no save or folder picker (Firefox, Safari): the output is written to its private storage (OPFS), then offered as downloads. Chromium browsers (Chrome, Edge) write straight to disk.';
}

function downloadButton(name: string, i: number, dir: string, several: number): HTMLButtonElement {
  const b = h('button', { type: 'button', id: `convert-download-${i}`, class: 'link' }, several ? `Download (${i + 1}/${several})` : 'Download');
  b.addEventListener('click', () => void download(name, dir));
  return b;
}

/** A blob: URL of the OPFS file, clicked as a download: nothing is fetched, the file goes to the Downloads folder. */
async function download(name: string, dir: string): Promise<void> {
  const root = await (await navigator.storage.getDirectory()).getDirectoryHandle(dir);
  let file: File;
  try {
    file = await (await root.getFileHandle(name)).getFile();
  } catch {
    // A sharded output is a folder inside the fallback's directory.
    let found: File | null = null;
    for await (const [, entry] of (root as unknown as { entries(): AsyncIterable<[string, FileSystemHandle]> }).entries()) {
      if (entry.kind === 'directory') found = await (await (entry as FileSystemDirectoryHandle).getFileHandle(name)).getFile().catch(() => null);
      if (found) break;
    }
    if (!found) return;
    file = found;
  }
  const url = URL.createObjectURL(file);
  const a = h('a', { href: url, download: name, hidden: true });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}
