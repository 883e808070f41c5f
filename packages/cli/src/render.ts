import { basename } from 'node:path';
import type { InspectReport } from '@tensorport/lib';
import { renderQuantization } from './quantization-table.ts';
import { describeFinding, escapeTerminal as esc } from './report.ts';
import { formatBytes, formatCount } from './size.ts';
import { table, tableOf } from './table.ts';

/** The human `inspect` output: a summary, metadata, one row per tensor, totals per dtype. */
export function renderInspect(r: InspectReport, options: { fullMetadata?: boolean } = {}): string {
  const lines: string[] = [];
  const totalFileBytes = r.files.reduce((s, f) => s + f.bytes, 0);
  lines.push(`${esc(r.path)}: ${r.format}, ${r.files.length} file${r.files.length === 1 ? '' : 's'}, ${formatBytes(totalFileBytes)}`);
  for (const w of r.warnings) lines.push(`warning ${describeFinding(w)}`);
  const meta = r.metadata ? Object.entries(r.metadata) : [];
  lines.push('', r.metadata === null ? 'metadata: none' : meta.length === 0 ? 'metadata: {} (empty)' : 'metadata:');
  if (meta.length > 0) lines.push(table(meta.map(([k, v]) => ['  ' + esc(k), esc(v.length > 100 && !options.fullMetadata ? `${v.slice(0, 97)}...` : v)])));

  if (r.gguf) lines.push('', ...renderGguf(r.gguf));
  if (r.hfQuantization) lines.push('', renderHfQuantization(r.hfQuantization));

  const sharded = r.files.length > 1;
  const header = ['name', 'dtype', 'shape', 'size', 'offsets', ...(sharded ? ['file'] : [])];
  const row = (t: InspectReport['tensors'][number]): string[] => [
    esc(t.name),
    t.dtype,
    `[${t.shape.join(', ')}]`,
    formatBytes(t.bytes),
    t.offsets ? `${t.offsets[0]}..${t.offsets[1]}` : '-',
    ...(sharded ? [t.file ? esc(basename(t.file)) : '-'] : []),
  ];
  const tied = Object.keys(r.aliases ?? {}).length;
  lines.push('', `tensors: ${r.tensors.length}${tied > 0 ? ` (and ${tied} tied name${tied === 1 ? '' : 's'} stored once, in metadata)` : ''}`);
  if (r.tensors.length > 0) {
    lines.push(tableOf(function* () {
      yield header;
      for (const t of r.tensors) yield row(t);
    }, new Set([3])));
  }

  const quantized = renderQuantization(r.quantization?.map((l) => ({ ...l, layer: esc(l.layer) })));
  if (quantized) lines.push(quantized.trimEnd());
  if (r.quantizedParameters !== undefined) lines.push(`parameters as mlx-lm counts them (logical weights, no scales/biases): ${formatCount(r.quantizedParameters)}`);
  const bits = (b: number | undefined): string[] => (r.gguf ? [b === undefined ? '-' : b.toFixed(2)] : []);
  const totals = Object.entries(r.totals.byDtype).map(([dtype, d]) => [dtype, String(d.tensors), formatCount(d.parameters), formatBytes(d.bytes), ...bits(r.gguf?.types[dtype]?.bitsPerWeight)]);
  totals.push(['total', String(r.totals.tensors), formatCount(r.totals.parameters), formatBytes(r.totals.bytes), ...bits(r.gguf?.bitsPerWeight)]);
  lines.push('', table([[r.gguf ? 'ggml type' : 'dtype', 'tensors', 'parameters', 'size', ...(r.gguf ? ['bits/weight'] : [])], ...totals], new Set([1, 2, 3, 4])));
  return `${lines.join('\n')}\n`;
}

/** The Hub quantization config.json names: "quantization: fp8 (e4m3, 128×128 blocks, dynamic activations), 14 layers; --dtype bf16 dequantizes". */
function renderHfQuantization(q: NonNullable<InspectReport['hfQuantization']>): string {
  if (!q.dequantizable) return `quantization: ${esc(q.method)} (config.json); tensorport does not dequantize it yet`;
  const details = [q.format, q.blockSize ? `${q.blockSize[0]}×${q.blockSize[1]} blocks` : null, q.activationScheme ? `${esc(q.activationScheme)} activations` : null].filter(Boolean).join(', ');
  return `quantization: ${esc(q.method)} (${details})${q.layers === undefined ? '' : `, ${q.layers} layer${q.layers === 1 ? '' : 's'}`}; convert --dtype bf16|f16|f32 dequantizes`;
}

/** GGUF: the model in a few lines (the vocabulary only as its size). */
function renderGguf(g: NonNullable<InspectReport['gguf']>): string[] {
  const model = [`version ${g.version}`, `architecture ${g.architecture === null ? '-' : esc(g.architecture)}`];
  if (g.name !== null) model.push(`name ${esc(g.name)}`);
  if (g.contextLength !== null) model.push(`context length ${g.contextLength}`);
  model.push(`alignment ${g.alignment}`);
  const tok = g.tokenizer ? `tokenizer: ${g.tokenizer.model === null ? '-' : esc(g.tokenizer.model)}, ${formatCount(g.tokenizer.tokens)} tokens, ${formatCount(g.tokenizer.merges)} merges` : 'tokenizer: none';
  const lines = [`gguf: ${model.join(', ')}`, tok, `parameters: ${formatCount(g.parameters)} at ${g.bitsPerWeight.toFixed(2)} bits per weight`];
  if (g.llamaCpp === 'loads') lines.push('llama.cpp: loads as a model (keys, tokenizer and tensor shapes checked)');
  if (g.llamaCpp === 'refused') lines.push('llama.cpp: would refuse it as a model (warnings say why)');
  return lines;
}
