import { elementCount } from '../dtype.ts';
import { TensorportError, type Finding } from '../errors.ts';
import type { ByteSink } from '../io/sink.ts';
import type { ByteSource } from '../io/source.ts';
import type { Checkpoint, TensorDescriptor } from '../tensor.ts';
import {
  formatShardIndex,
  parseShardIndex,
  SHARD_INDEX_FILE,
  shardFileName,
  SINGLE_CHECKPOINT_FILE,
  type ShardIndex,
  type ShardIndexLimits,
} from './index-file.ts';
import { writeOrder } from './order.ts';
import { openSafetensors, SafetensorsFile, type SafetensorsTensor } from './reader.ts';
import type { SafetensorsHeader } from './header.ts';
import { abortQuietly, checkTensorLayouts, planSafetensors, streamSafetensors, type MetadataInput, type TensorLayout, type WriteOptions } from './writer.ts';

export interface ShardedOpenOptions {
  limits?: Partial<ShardIndexLimits>;
  /** Shard headers read at once (default 8). */
  concurrency?: number;
  /** A shard's header when the caller keeps parsed ones (a Context validates, then opens). */
  readHeader?: (fileName: string, source: ByteSource) => Promise<SafetensorsHeader>;
}

/**
 * Several safetensors files read as one checkpoint. Tensors come shard by shard (shards sorted by
 * file name), each shard's in data order. `metadata` is the first shard's `__metadata__`.
 */
export class ShardedCheckpoint implements Checkpoint {
  readonly format = 'safetensors-sharded' as const;
  readonly metadata: Map<string, string> | null;
  readonly tensors: readonly SafetensorsTensor[];

  constructor(
    readonly index: ShardIndex,
    readonly shards: ReadonlyArray<{ readonly file: string; readonly checkpoint: SafetensorsFile }>,
    /** Index and shard oddities that did not stop reading; see openShardedCheckpoint. */
    readonly warnings: Finding[],
  ) {
    this.metadata = shards[0]?.checkpoint.metadata ?? null;
    this.tensors = shards.flatMap((s) => s.checkpoint.tensors);
  }

  async close(): Promise<void> {
    await closeAll(this.shards.map((s) => s.checkpoint));
  }
}

/**
 * Opens the shards an index names (through `openShard`, which resolves a plain file name in the
 * index's directory) and checks that index and shards agree exactly: every weight_map entry is in
 * the shard it names, every shard tensor is in the weight_map under that shard (so no name is in two
 * shards), else ShardMismatch. `openShard` throws ShardMissing for a missing file (a raw error with
 * code ENOENT is taken to mean the same).
 *
 * `metadata.total_size` that differs from the sum of tensor bytes is only a warning: nothing is read
 * by it, convert.py copies it unchanged from the .bin index it converts, and older transformers
 * computed it differently (e.g. bool as 1/8 byte), so real checkpoints disagree with it.
 */
export async function openShardedCheckpoint(
  indexBytes: Uint8Array,
  openShard: (fileName: string) => Promise<ByteSource>,
  opts: ShardedOpenOptions = {},
): Promise<ShardedCheckpoint> {
  const index = parseShardIndex(indexBytes, opts.limits);
  const warnings = [...index.warnings];
  const opened: Array<{ file: string; checkpoint: SafetensorsFile } | undefined> = new Array(index.shardFiles.length);
  try {
    let next = 0;
    let failed = false;
    const worker = async (): Promise<void> => {
      while (!failed && next < index.shardFiles.length) {
        const i = next++;
        try {
          opened[i] = { file: index.shardFiles[i]!, checkpoint: await openOneShard(index.shardFiles[i]!, openShard, opts.readHeader) };
        } catch (e) {
          failed = true;
          throw e;
        }
      }
    };
    // allSettled: on failure, every open still in flight must finish before we close them all.
    const results = await Promise.allSettled(Array.from({ length: Math.max(1, opts.concurrency ?? 8) }, worker));
    const rejected = results.find((r) => r.status === 'rejected');
    if (rejected) throw rejected.reason;
    const shards = opened as Array<{ file: string; checkpoint: SafetensorsFile }>;
    checkAgreement(index, shards, warnings);
    return new ShardedCheckpoint(index, shards, warnings);
  } catch (e) {
    await closeAll(opened.filter((s) => s !== undefined).map((s) => s.checkpoint));
    throw e;
  }
}

async function openOneShard(file: string, openShard: (fileName: string) => Promise<ByteSource>, parsed?: ShardedOpenOptions['readHeader']): Promise<SafetensorsFile> {
  let source: ByteSource;
  try {
    source = await openShard(file);
  } catch (e) {
    if (e instanceof TensorportError) throw e;
    const missing = (e as { code?: unknown } | null)?.code === 'ENOENT';
    throw new TensorportError(missing ? 'ShardMissing' : 'IoError', `shard ${file}${missing ? ' named in the index does not exist' : `: ${String(e)}`}`, { path: file, cause: e });
  }
  try {
    return parsed ? new SafetensorsFile(source, await parsed(file, source)) : await openSafetensors(source);
  } catch (e) {
    await source.close().catch(() => {});
    if (e instanceof TensorportError && e.path === undefined) {
      throw new TensorportError(e.code, `shard ${file}: ${e.message}`, { ...detailsOf(e), path: file, cause: e });
    }
    throw e;
  }
}

function checkAgreement(index: ShardIndex, shards: ReadonlyArray<{ file: string; checkpoint: SafetensorsFile }>, warnings: Finding[]): void {
  checkShardAgreement(index, shards.map((s) => ({ file: s.file, tensors: s.checkpoint.tensors })), warnings, SHARD_INDEX_FILE);
  const firstMeta = JSON.stringify([...(shards[0]?.checkpoint.metadata ?? [])]);
  const differing = shards.filter((s) => JSON.stringify([...(s.checkpoint.metadata ?? [])]) !== firstMeta);
  if (differing.length > 0) {
    warnings.push({ code: 'ShardMetadataDiffers', message: `${differing.length} shard(s) have different __metadata__ than ${shards[0]!.file}; the first shard's is used`, path: differing[0]!.file });
  }
}

/**
 * An index and the shards it names agree: every shard tensor is in the weight_map under its own
 * shard, every weight_map entry is in the shard it names (or is one of that shard's `aliases`, as
 * torch checkpoints record tied weights), and total_size matches the tensor bytes (a warning only:
 * nothing reads it, and convert.py copies it unchanged). Shared by every sharded format.
 */
export function checkShardAgreement(
  index: ShardIndex,
  shards: ReadonlyArray<{ readonly file: string; readonly tensors: ReadonlyArray<{ readonly name: string; readonly byteLength: number }>; readonly aliases?: Iterable<string> }>,
  warnings: Finding[],
  indexFile: string,
): void {
  const names = new Map(shards.map((s) => [s.file, new Set([...s.tensors.map((t) => t.name), ...(s.aliases ?? [])])]));
  let total = 0;
  for (const { file, tensors } of shards) {
    for (const t of tensors) {
      total += t.byteLength;
      const listed = index.weightMap.get(t.name);
      if (listed === undefined) throw mismatch(`tensor ${JSON.stringify(t.name)} in ${file} is not in the index's weight_map`, t.name, file);
      if (listed !== file) {
        const twice = names.get(listed)?.has(t.name) === true;
        throw mismatch(`tensor ${JSON.stringify(t.name)} is in ${file}${twice ? ` and in ${listed}` : ''}, but the weight_map says ${listed}`, t.name, file);
      }
    }
  }
  for (const [name, file] of index.weightMap) {
    if (!names.get(file)?.has(name)) throw mismatch(`weight_map puts ${JSON.stringify(name)} in ${file}, which has no such tensor`, name, file);
  }
  if (index.totalSize !== null && index.totalSize !== total) {
    warnings.push({ code: 'IndexTotalSizeMismatch', message: `index metadata.total_size is ${index.totalSize}, the shards hold ${total} tensor bytes`, path: indexFile });
  }
}

// ---- writing ----

export interface ShardPlan {
  readonly fileName: string;
  /** Indices into the input tensors, in write order. */
  readonly indices: number[];
  /** Tensor bytes in this shard (header not included, as in HF's shard size). */
  readonly dataLength: number;
}

/** HF's default `max_shard_size="5GB"`: decimal, 5·10^9 bytes. */
export const DEFAULT_MAX_SHARD_SIZE = 5_000_000_000;

/**
 * Splits tensors into shards of at most `maxShardSize` tensor bytes, in the writer's order (dtype
 * rank descending, then name by UTF-8 bytes), filling each shard greedily. A tensor bigger than the
 * maximum gets a shard of its own, as huggingface_hub does. One shard is `model.safetensors`.
 */
export function planShards(tensors: readonly TensorLayout[], maxShardSize: number = DEFAULT_MAX_SHARD_SIZE): ShardPlan[] {
  if (!Number.isSafeInteger(maxShardSize) || maxShardSize <= 0) throw new RangeError(`maxShardSize must be a positive integer, got ${maxShardSize}`);
  const groups: Array<{ indices: number[]; dataLength: number }> = [];
  let current: { indices: number[]; dataLength: number } | null = null;
  for (const i of writeOrder(tensors)) {
    const size = tensors[i]!.byteLength;
    if (size > maxShardSize) {
      groups.push({ indices: [i], dataLength: size });
      current = null;
      continue;
    }
    if (!current || current.dataLength + size > maxShardSize) {
      current = { indices: [], dataLength: 0 };
      groups.push(current);
    }
    current.indices.push(i);
    current.dataLength += size;
  }
  if (groups.length === 0) groups.push({ indices: [], dataLength: 0 });
  return groups.map((g, k) => ({ ...g, fileName: groups.length === 1 ? SINGLE_CHECKPOINT_FILE : shardFileName(k, groups.length) }));
}

export interface WriteShardedOptions extends WriteOptions {
  maxShardSize?: number;
  /**
   * Shards written at the same time (default 1). Each shard's bytes depend only on the plan, so the
   * output is byte-identical whatever the value; memory grows by a few chunks per extra job.
   */
  jobs?: number;
}

export interface WriteShardedResult {
  /** File names written (shards, then the index when there is one). */
  files: string[];
  /** The index as written (`{metadata: {total_parameters, total_size}, weight_map}`), or null for a single file. */
  index: { metadata: { total_parameters: number; total_size: number }; weight_map: Record<string, string> } | null;
  /** Bytes written over all files. */
  bytes: number;
}

/**
 * Writes a checkpoint as one `model.safetensors` or as shards plus `model.safetensors.index.json`.
 * `metadata` goes into every shard. Every header is computed before any byte is written; sinks are
 * committed only after all files were written completely (shards first, the index last), and all
 * are aborted on any failure.
 */
export async function writeSharded(
  tensors: readonly TensorDescriptor[],
  metadata: MetadataInput,
  openSink: (fileName: string) => Promise<ByteSink>,
  opts: WriteShardedOptions = {},
): Promise<WriteShardedResult> {
  checkTensorLayouts(tensors);
  const plans = planShards(tensors, opts.maxShardSize);
  const shardTensors = plans.map((p) => p.indices.map((i) => tensors[i]!));
  const headerBytes = shardTensors.map((ts) => planSafetensors(ts, metadata).header.byteLength);
  const sharded = plans.length > 1;
  const totalData = plans.reduce((n, p) => n + p.dataLength, 0);
  let indexText: Uint8Array | null = null;
  let index: WriteShardedResult['index'] = null;
  if (sharded) {
    const weightMap = plans.flatMap((p) => p.indices.map((i) => [tensors[i]!.name, p.fileName] as const));
    // every written tensor's elements, as transformers' num_parameters() (tied names written once count once)
    const totalParameters = tensors.reduce((n, t) => n + elementCount(t.shape), 0);
    indexText = new TextEncoder().encode(formatShardIndex(totalData, weightMap, totalParameters));
    index = { metadata: { total_parameters: totalParameters, total_size: totalData }, weight_map: Object.fromEntries(weightMap) };
  }
  const total = headerBytes.reduce((n, h) => n + h, 0) + totalData + (indexText?.byteLength ?? 0);
  // Bytes done per shard: shards may be written concurrently, so progress is their sum.
  const done = plans.map(() => 0);
  let sum = 0;
  const files: Array<{ name: string; write(sink: ByteSink): Promise<unknown> }> = plans.map((plan, k) => ({
    name: plan.fileName,
    write: async (sink) => {
      await streamSafetensors(shardTensors[k]!, metadata, sink, {
        ...(opts.chunkSize === undefined ? {} : { chunkSize: opts.chunkSize }),
        onProgress: (n) => {
          sum += n - done[k]!;
          done[k] = n;
          opts.onProgress?.(sum, total);
        },
      });
    },
  }));
  if (indexText) {
    const text = indexText;
    files.push({
      name: SHARD_INDEX_FILE,
      write: (sink) =>
        sink.write(text).then(() => {
          sum += text.byteLength;
          opts.onProgress?.(sum, total);
        }),
    });
  }
  await writeAllOrNothing(files, openSink, opts.jobs);
  return { files: files.map((f) => f.name), index, bytes: total };
}

/**
 * Writes several files as one unit: each sink is opened and filled in turn; then every sink is
 * prepared (flushed and fsynced: a full disk fails here, before anything is visible), then all are
 * committed in the given order (put an index last). If a commit fails, the ones before it are
 * reverted and the rest aborted, so the outputs appear all together or not at all (file sinks also
 * roll back on signals and after kill -9: node/commit-group.ts).
 */
export async function writeAllOrNothing(
  files: ReadonlyArray<{ readonly name: string; write(sink: ByteSink): Promise<unknown> }>,
  openSink: (fileName: string) => Promise<ByteSink>,
  jobs = 1,
): Promise<void> {
  if (!Number.isSafeInteger(jobs) || jobs < 1) throw new TensorportError('InvalidOption', `jobs must be a positive integer, got ${jobs}`);
  const sinks: ByteSink[] = [];
  let committed = 0;
  try {
    // `jobs` workers take files in order; every opened sink is in `sinks`, so the rollback below sees them all.
    const order = new Map<ByteSink, number>();
    let next = 0;
    let failed = false;
    const worker = async (): Promise<void> => {
      while (!failed && next < files.length) {
        const f = files[next++]!;
        const k = next - 1;
        const sink = await openSink(f.name);
        order.set(sink, k);
        sinks.push(sink);
        await f.write(sink);
      }
    };
    const workers = Array.from({ length: Math.min(jobs, Math.max(1, files.length)) }, () =>
      worker().catch((e: unknown) => {
        failed = true;
        throw e;
      }),
    );
    const settled = await Promise.allSettled(workers);
    const rejected = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (rejected) throw rejected.reason;
    // Prepare and commit in file order (the index last), whatever order the writes finished in.
    sinks.sort((a, b) => order.get(a)! - order.get(b)!);
    for (const sink of sinks) await sink.prepare?.();
    for (const sink of sinks) {
      await sink.commit();
      committed++;
    }
  } catch (e) {
    let reverted = true;
    for (const sink of sinks.slice(0, committed).reverse()) {
      await sink.revert?.().catch(() => {
        reverted = false;
      });
    }
    await Promise.all(sinks.slice(committed).map(abortQuietly));
    // A failed revert keeps the group's journal, so exit handlers or the next run finish the rollback.
    if (reverted) await finishAll(sinks);
    throw e;
  }
  await finishAll(sinks);
}

async function finishAll(sinks: readonly ByteSink[]): Promise<void> {
  for (const sink of sinks) await sink.finish?.().catch(() => {});
}

async function closeAll(checkpoints: readonly Checkpoint[]): Promise<void> {
  await Promise.all(checkpoints.map((c) => c.close().catch(() => {})));
}

function mismatch(message: string, tensor: string, path: string): TensorportError {
  return new TensorportError('ShardMismatch', message, { tensor, path });
}

function detailsOf(e: TensorportError): { offset?: number | bigint; tensor?: string; other?: string } {
  const d: { offset?: number | bigint; tensor?: string; other?: string } = {};
  if (e.offset !== undefined) d.offset = e.offset;
  if (e.tensor !== undefined) d.tensor = e.tensor;
  if (e.other !== undefined) d.other = e.other;
  return d;
}
