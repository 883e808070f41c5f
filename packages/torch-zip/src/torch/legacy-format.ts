import { SliceSource, TensorportError, type ByteSource } from '@tensorport/core';
import type { PickleLimits } from '../pickle/limits.ts';
import { runPickleAt } from '../pickle/stream.ts';
import { isContainer, type PyValue } from '../pickle/values.ts';
import { type AssembleOptions, type TorchCheckpoint } from './assemble.ts';
import type { CapturedPickles } from './captured.ts';
import { assembleObjects, objectMode } from './extract-objects.ts';
import { dtypeInfo } from './dtypes.ts';
import { StorageTable } from './persistent.ts';

/**
 * The pre-1.6 `torch.save` stream (`_use_new_zipfile_serialization=False`): five pickles, then the
 * raw storages. Pickle 1 is this magic number, 2 the protocol version, 3 `sys_info`, 4 the object,
 * 5 the storage keys in the order their bytes follow. Each storage is an int64 little-endian
 * element count, then its elements, always little-endian (torch swaps on big-endian hosts).
 */
export const LEGACY_MAGIC = 0x1950a86a20f9469cfc6cn;
export const LEGACY_PROTOCOL_VERSION = 1001;

export interface PickleReadOptions {
  limits?: Partial<PickleLimits>;
  maxPickleBytes?: number;
  /** The pickles as a scan already ran them (format/single.ts): assembled without running them again. */
  captured?: CapturedPickles;
}

export async function openLegacyCheckpoint(source: ByteSource, opts: AssembleOptions & PickleReadOptions): Promise<TorchCheckpoint> {
  const invalid = (message: string, offset?: number): TensorportError =>
    new TensorportError('TorchInvalidCheckpoint', `${source.name}: ${message}`, { path: source.name, ...(offset === undefined ? {} : { offset }) });
  // a capture holds all five runs, or the scan stopped early and found something to refuse
  const captured = opts.captured?.runs.length === 5 ? opts.captured : undefined;
  const table = captured?.storages ?? new StorageTable('legacy');
  const globals = new Set<string>();
  let pos = 0;
  let index = 0;
  const next = async (persistent: boolean): Promise<PyValue> => {
    const r = captured ? captured.runs[index++]! : await runPickleAt(source, pos, {
      mode: 'load', path: source.name,
      ...(opts.limits ? { limits: opts.limits } : {}),
      ...(opts.maxPickleBytes ? { maxPickleBytes: opts.maxPickleBytes } : {}),
      ...(persistent ? { persistentLoad: table.load, ...objectMode(opts) } : {}),
    });
    // The header pickles are plain constants: a global there is a magic-number forgery.
    if (!persistent && r.globals.length > 0) throw invalid(`header pickle at ${pos} references ${r.globals.join(', ')}`, pos);
    for (const g of r.globals) globals.add(g);
    pos = r.end;
    return r.value!;
  };

  if ((await next(false)) !== LEGACY_MAGIC) throw invalid('invalid magic number; not a torch checkpoint', 0);
  const version = await next(false);
  if (version !== LEGACY_PROTOCOL_VERSION) throw invalid(`protocol version ${String(version)}, expected ${LEGACY_PROTOCOL_VERSION}`);
  const sysInfo = await next(false);
  if (!isContainer(sysInfo) || sysInfo.kind !== 'dict') throw invalid('sys_info is not a dict');
  const root = await next(true);
  if (table.deferred) throw table.deferred;
  const keys = await next(false);
  if (!isContainer(keys) || keys.kind !== 'list' || !keys.items.every((k) => typeof k === 'string')) throw invalid('the storage key list is not a list of str');

  const windows = new Map<string, SliceSource>();
  for (const key of keys.items as string[]) {
    const ref = table.storages.get(key);
    if (ref === undefined) throw invalid(`storage ${key} has data but the object never references it`, pos);
    if (windows.has(key)) throw invalid(`storage ${key} is listed twice`, pos);
    if (pos + 8 > source.size) throw invalid(`storage ${key} is truncated`, pos);
    const head = await source.read(pos, 8);
    const numel = new DataView(head.buffer, head.byteOffset, 8).getBigUint64(0, true);
    if (numel !== BigInt(ref.numel)) {
      throw new TensorportError('TorchStorageMismatch', `${source.name}: storage ${key} holds ${numel} elements, the object declares ${ref.numel}`, { offset: pos, path: source.name });
    }
    const bytes = ref.numel * (ref.dtype === null ? 1 : dtypeInfo(ref.dtype).bytes);
    if (pos + 8 + bytes > source.size) throw invalid(`storage ${key} (${bytes} bytes) runs past the end of the file`, pos);
    windows.set(key, new SliceSource(source, pos + 8, bytes, `${source.name}:storage ${key}`));
    pos += 8 + bytes;
  }
  // torch.load stops here; a ZIP or pickle appended is read by other tools (zipfile finds a ZIP anywhere)
  if (pos !== source.size) throw invalid(`${source.size - pos} bytes after the last storage`, pos);

  return assembleObjects(root, [...globals], (ref, tensor) => {
    const w = windows.get(ref.key);
    if (w === undefined) throw new TensorportError('TorchInvalidCheckpoint', `${JSON.stringify(tensor)} uses storage ${ref.key}, which has no data in the file`, { tensor, path: source.name });
    if (ref.view === null) return { source: w, bigEndian: false };
    const es = ref.dtype === null ? 1 : dtypeInfo(ref.dtype).bytes;
    return { source: new SliceSource(w, ref.view.offset * es, ref.view.size * es), bigEndian: false };
  }, opts, { format: 'torch-legacy', globals: [...globals], warnings: [], close: () => source.close() });
}
