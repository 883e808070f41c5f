/// <reference lib="webworker" />
import { fflateCodec } from '@tensorport/npz';
import { convert, dequantizeStep, HandleTarget, isAbort, MemoryFolder, memoryContext, quantizeStep, TensorportError, validate, type DirectoryHandleLike, type FileHandleLike, type MlxStep } from '@tensorport/lib';
import { checkpointEntry } from '../inspect/files.ts';
import { OPFS_DIR, type ConvertChoice, type ConvertRequest, type ConvertResponse, type Converted } from './protocol.ts';

/** How often progress is posted: the page redraws at most this often, however small the chunks. */
const PROGRESS_MS = 100;

const running = new Map<number, AbortController>();

export function cancelConversion(id: number): void {
  running.get(id)?.abort();
}

/**
 * One conversion in the worker: the library's `convert` from the dropped files to a handle
 * target, streaming (each chunk written before the next is read), then `validate` of what was
 * written, re-read from the destination. Every failure leaves nothing behind.
 */
export async function runConversion(req: ConvertRequest, post: (m: ConvertResponse) => void): Promise<void> {
  const { id, files, choice, destination } = req;
  const controller = new AbortController();
  running.set(id, controller);
  const started = performance.now();
  let opfs: FileSystemDirectoryHandle | null = null;
  try {
    const { entry } = checkpointEntry(files);
    if (entry === undefined) throw new TensorportError('UnknownFormat', 'no checkpoint among the files given');
    const input = memoryContext(MemoryFolder.fromFiles(files), entry, fflateCodec);
    const directory = choice.to === 'safetensors-sharded';
    let handle: FileSystemFileHandle | FileSystemDirectoryHandle;
    if (destination.where === 'handle') {
      handle = destination.handle;
    } else {
      opfs = await freshOpfsDir();
      handle = destination.directory ? await opfs.getDirectoryHandle(destination.name, { create: true }) : await opfs.getFileHandle(destination.name, { create: true });
    }
    if ((handle.kind === 'directory') !== directory) throw new TensorportError('InvalidOption', directory ? 'a sharded output needs a folder' : 'this output is one file, not a folder');
    const options = { codec: fflateCodec, signal: controller.signal };
    const target = handle.kind === 'directory' ? HandleTarget.directory(handle as unknown as DirectoryHandleLike, options) : HandleTarget.file(handle as unknown as FileHandleLike, options);
    let last = 0;
    let report;
    const step = mlxStep(choice);
    try {
      report = await convert({
        input,
        target,
        to: directory ? 'safetensors' : choice.to,
        // dequantize's dtype is its output dtype, as `tensorport dequantize --dtype`
        ...(choice.dtype && choice.mlx?.op !== 'dequantize' ? { dtype: choice.dtype } : {}),
        ...(step ? { transform: step.transform } : {}),
        ...(directory && choice.maxShardSize !== undefined ? { write: { safetensors: { maxShardSize: choice.maxShardSize } } } : {}),
        ...(choice.to === 'gguf' && choice.ggufType ? { gguf: { type: choice.ggufType } } : {}),
        onProgress: (done, total) => {
          const now = performance.now();
          if (now - last < PROGRESS_MS && done < total) return;
          last = now;
          post({ type: 'progress', id, done, total });
        },
      });
    } finally {
      await input.close();
    }
    const mlx = step ? step.report(report) : null;
    const names = report.files.map((f) => (directory ? f.slice(target.name.length + 1) : f));
    const back = await target.reopen(names);
    let validation;
    try {
      const v = await validate(back);
      validation = { format: v.format, valid: v.valid, errors: v.errors.map(({ code, message }) => ({ code, message })), files: v.files };
    } finally {
      await back.close();
    }
    const sizes = await Promise.all(names.map(async (n) => ({ name: n, size: await sizeOf(handle, n) })));
    const result: Converted = {
      from: report.from,
      to: report.to,
      files: sizes,
      tensors: report.tensors,
      bytes: report.bytes,
      cast: report.cast,
      quantized: mlx ? mlx.quantization.length : null,
      warnings: (mlx ?? report).warnings.map(({ code, message }) => ({ code, message })),
      validation,
      opfsDir: opfs ? OPFS_DIR : null,
      ms: performance.now() - started,
    };
    post({ type: 'converted', id, result });
  } catch (e) {
    if (opfs) await clearOpfs();
    // The save picker made an empty file before the conversion began; a refusal must not leave it.
    else if (destination.where === 'handle' && destination.handle.kind === 'file') await removeIfEmpty(destination.handle);
    if (isAbort(e)) post({ type: 'cancelled', id });
    else if (e instanceof TensorportError) post({ type: 'convert-failed', id, code: e.code, message: e.message });
    else post({ type: 'convert-failed', id, code: 'IoError', message: e instanceof Error ? `${e.name}: ${e.message}` : String(e) });
  } finally {
    running.delete(id);
  }
}

/** The library's MLX step for the panel's choice (the same settings `tensorport quantize|dequantize` takes). */
function mlxStep(c: ConvertChoice): MlxStep | null {
  if (c.mlx?.op === 'dequantize') return dequantizeStep(c.dtype ? { dtype: c.dtype.toUpperCase() as 'F16' | 'BF16' | 'F32' } : {});
  if (c.mlx?.op === 'quantize') return quantizeStep({ mode: c.mlx.mode, ...(c.mlx.bits === undefined ? {} : { bits: c.mlx.bits }), ...(c.mlx.groupSize === undefined ? {} : { groupSize: c.mlx.groupSize }) });
  return null;
}

async function removeIfEmpty(handle: FileSystemFileHandle): Promise<void> {
  const h = handle as FileSystemFileHandle & { remove?: () => Promise<void> };
  if ((await handle.getFile().catch(() => null))?.size === 0) await h.remove?.().catch(() => undefined);
}

async function sizeOf(handle: FileSystemFileHandle | FileSystemDirectoryHandle, name: string): Promise<number> {
  const file = handle.kind === 'directory' ? await (await handle.getFileHandle(name)).getFile() : await handle.getFile();
  return file.size;
}

/** The fallback's directory, emptied: only the latest output is kept in the origin's storage. */
async function freshOpfsDir(): Promise<FileSystemDirectoryHandle> {
  if (!navigator.storage?.getDirectory) throw new TensorportError('UnsupportedFormat', 'this browser has neither file pickers nor an origin-private file system: the page cannot write here');
  await clearOpfs();
  return (await navigator.storage.getDirectory()).getDirectoryHandle(OPFS_DIR, { create: true });
}

export async function clearOpfs(): Promise<void> {
  const root = await navigator.storage.getDirectory();
  await root.removeEntry(OPFS_DIR, { recursive: true }).catch(() => undefined);
}
