/**
 * A model directory as mlx-lm's save_model writes it: shards filled greedily in tensor (module)
 * order up to 5 GiB (`5 << 30`), named `model.safetensors` when there is one and
 * `model-00001-of-0000N.safetensors` otherwise; `model.safetensors.index.json` always, with
 * `total_size`, `total_parameters` (a quantized layer counts weight elements × 32 / bits) and the
 * sorted `weight_map`; config.json with the quantization sections.
 */
import { compareUtf8, elementCount, planSafetensors, shardFileName, streamSafetensors, writeAllOrNothing, type ByteSink, type TensorDescriptor, type WriteOptions } from '@tensorport/core';
import { formatConfigJson } from './config.ts';
import type { ConversionResult } from './dequantize.ts';
import type { QuantizedLayer, TensorInfo } from './layers.ts';
import { pythonJson } from './pyjson.ts';

export const MLX_MAX_SHARD_BYTES = 5 * 2 ** 30;
export const MLX_INDEX_FILE = 'model.safetensors.index.json';
export const MLX_CONFIG_FILE = 'config.json';

export interface MlxShardPlan {
  fileName: string;
  tensors: TensorDescriptor[];
  dataLength: number;
}

/** mlx-lm's make_shards, except that a tensor larger than the limit never leaves an empty shard. */
export function planMlxShards(tensors: readonly TensorDescriptor[], maxShardBytes = MLX_MAX_SHARD_BYTES): MlxShardPlan[] {
  if (!Number.isSafeInteger(maxShardBytes) || maxShardBytes <= 0) throw new RangeError(`maxShardBytes must be a positive integer, got ${maxShardBytes}`);
  const groups: { tensors: TensorDescriptor[]; dataLength: number }[] = [{ tensors: [], dataLength: 0 }];
  for (const t of tensors) {
    let current = groups[groups.length - 1]!;
    if (current.tensors.length > 0 && current.dataLength + t.byteLength > maxShardBytes) {
      current = { tensors: [], dataLength: 0 };
      groups.push(current);
    }
    current.tensors.push(t);
    current.dataLength += t.byteLength;
  }
  return groups.map((g, i) => ({ ...g, fileName: groups.length === 1 ? 'model.safetensors' : shardFileName(i, groups.length) }));
}

/**
 * mlx-lm's get_total_parameters over a flat checkpoint: a quantized layer counts its packed
 * weight's elements × 32 / bits (the logical weights) plus its own bias, never its scales or
 * biases; every other tensor its elements. A layer counts as quantized only while its U32 weight
 * and scales are among `tensors` (a dequantized result lists the layers it undid).
 */
export function totalParameters(tensors: readonly TensorInfo[], layers: readonly QuantizedLayer[]): number {
  const names = new Set(tensors.map((t) => t.name));
  const live = layers.filter((l) => names.has(l.scales));
  const quantized = new Map(live.map((l) => [l.weight, l]));
  const side = new Set(live.flatMap((l) => (l.biases ? [l.scales, l.biases] : [l.scales])));
  let n = 0;
  for (const t of tensors) {
    if (side.has(t.name)) continue;
    const layer = t.dtype === 'U32' ? quantized.get(t.name) : undefined;
    n += layer ? Math.floor((elementCount(t.shape) * 32) / layer.bits) : elementCount(t.shape);
  }
  return n;
}

export function formatMlxIndex(plans: readonly MlxShardPlan[], totalParams: number): string {
  const entries = plans.flatMap((p) => p.tensors.map((t) => [t.name, p.fileName] as const)).sort((a, b) => compareUtf8(a[0], b[0]));
  const totalSize = plans.reduce((n, p) => n + p.dataLength, 0);
  return pythonJson({ metadata: { total_size: totalSize, total_parameters: totalParams }, weight_map: Object.fromEntries(entries) });
}

export interface WriteMlxModelOptions extends WriteOptions {
  maxShardBytes?: number;
  /** Shards written at the same time (default 1); the bytes do not depend on it. */
  jobs?: number;
  /** Files written unchanged beside the model (tokenizer, chat template) and committed with it. */
  extraFiles?: ReadonlyArray<{ readonly name: string; readonly bytes: Uint8Array }>;
}

/**
 * Writes shards, index and (when the result has one) config.json through `openSink(fileName)`.
 * All sinks are committed only after every file was written completely; on any failure all are
 * aborted, so no partial model is left behind.
 */
export async function writeMlxModel(
  result: Pick<ConversionResult, 'tensors' | 'metadata' | 'layers' | 'config'>,
  openSink: (fileName: string) => Promise<ByteSink>,
  options: WriteMlxModelOptions = {},
): Promise<{ files: string[]; bytes: number }> {
  const plans = planMlxShards(result.tensors, options.maxShardBytes);
  const encoder = new TextEncoder();
  const extra: [string, Uint8Array][] = [[MLX_INDEX_FILE, encoder.encode(formatMlxIndex(plans, totalParameters(result.tensors, result.layers)))]];
  if (result.config) extra.push([MLX_CONFIG_FILE, encoder.encode(formatConfigJson(result.config))]);
  for (const f of options.extraFiles ?? []) extra.push([f.name, f.bytes]);
  // Every header is planned (and checked) before the first byte is written.
  const headers = plans.map((p) => planSafetensors(p.tensors, result.metadata).header.byteLength);
  const total = plans.reduce((n, p, i) => n + headers[i]! + p.dataLength, 0) + extra.reduce((n, [, t]) => n + t.byteLength, 0);
  const chunkOpts = options.chunkSize === undefined ? {} : { chunkSize: options.chunkSize };
  // Shards may be written concurrently (jobs): progress is the sum of each file's bytes so far.
  const done = plans.map(() => 0);
  let bytes = 0;
  const files = [
    ...plans.map((plan, k) => ({
      name: plan.fileName,
      async write(sink: ByteSink): Promise<void> {
        await streamSafetensors(plan.tensors, result.metadata, sink, {
          ...chunkOpts,
          onProgress: (n) => {
            bytes += n - done[k]!;
            done[k] = n;
            options.onProgress?.(bytes, total);
          },
        });
      },
    })),
    ...extra.map(([name, text]) => ({
      name,
      async write(sink: ByteSink): Promise<void> {
        await sink.write(text);
        bytes += text.byteLength;
        options.onProgress?.(bytes, total);
      },
    })),
  ];
  await writeAllOrNothing(files, openSink, options.jobs);
  return { files: [...plans.map((p) => p.fileName), ...extra.map(([n]) => n)], bytes: total };
}
