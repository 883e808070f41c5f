import { constants } from 'node:fs';
import { open as openFile, readdir, realpath, stat } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, relative, sep } from 'node:path';
import { FolderContext, isRemoteInput, openRemote, remoteOptionsFromEnv, TensorportError, type ByteSource, type Checkpoint, type Context, type Finding, type Folder, type RemoteOptions } from '@tensorport/core';
import { FileSource, nodeFetch, nodeZlibCodec } from '@tensorport/core/node';
import { openInput, type PipelineOptions } from '../pipeline/open.ts';
import type { AnyFormat } from '../registry.ts';
import { tooBig, type CarryingFolder, type CarryRead } from '../model-files.ts';

/**
 * A directory on disk. `typed` keeps the input file's name as the user spelled it (messages, source
 * names); `only`, when given, is every name the folder shows (a written output read back without
 * the other files of its directory).
 */
export class NodeFolder implements CarryingFolder {
  constructor(
    readonly name: string,
    private readonly typed: ReadonlyMap<string, string> = new Map(),
    private readonly only: ReadonlySet<string> | null = null,
  ) {}

  async list(): Promise<readonly string[]> {
    const entries = await readdir(this.name, { withFileTypes: true });
    return entries.filter((e) => (e.isFile() || e.isSymbolicLink()) && (this.only === null || this.only.has(e.name))).map((e) => e.name).sort();
  }

  async entries(): Promise<readonly string[]> {
    return (await readdir(this.name)).filter((n) => this.only === null || this.only.has(n)).sort();
  }

  /**
   * A side file of a model directory, read only when it is a regular file whose real path stays
   * inside this directory (or, for a Hugging Face cache snapshot, inside that repository's `blobs/`,
   * where the snapshot's links point): a link to a token, `/proc/self/environ`, a device or a FIFO
   * is skipped and named. Opened without following links and without blocking, and checked again
   * through the handle, so a swap after the check reads nothing.
   */
  async carry(name: string, maxBytes: number): Promise<CarryRead> {
    const root = await realpath(this.name);
    // <cache>/models--org--name/snapshots/<revision>/file -> ../../blobs/<hash>
    const blobs = basename(dirname(root)) === 'snapshots' ? join(dirname(dirname(root)), 'blobs') : null;
    const real = await realpath(this.path(name)).catch(() => null);
    if (real === null) return { skipped: 'it is a dangling link' };
    if (!within(root, real) && !(blobs !== null && dirname(real) === blobs)) return { skipped: `it resolves to ${real}, outside the input directory` };
    const fh = await openFile(real, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK).catch(() => null);
    if (fh === null) return { skipped: `cannot open ${real}` };
    try {
      const st = await fh.stat();
      if (!st.isFile()) return { skipped: 'it is not a regular file' };
      if (st.size > maxBytes) return { skipped: tooBig(st.size, maxBytes) };
      return { bytes: await fh.readFile() };
    } finally {
      await fh.close();
    }
  }

  async size(name: string): Promise<number | null> {
    const st = await stat(this.path(name)).catch(() => null);
    return st?.isFile() ? st.size : null;
  }

  open(name: string): Promise<ByteSource> {
    return FileSource.open(this.path(name));
  }

  path(name: string): string {
    return this.typed.get(name) ?? join(this.name, name);
  }
}

function within(root: string, real: string): boolean {
  const rel = relative(root, real);
  return rel !== '' && rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel);
}

let remoteSettings: RemoteOptions = {};

/** Options for every URL and hf:// input opened by path (the CLI reports each one's transfer through `onTransfer`). */
export function configureRemote(options: RemoteOptions): void {
  remoteSettings = { ...options };
}

/**
 * The Context of a path: a directory is the input itself (entry null); a file is the entry of the
 * directory holding it, whose other files (shards, config.json) are its siblings.
 */
export async function pathContext(path: string): Promise<Context> {
  // http(s):// and hf:// are remote files read by Range (core/remote); HF_ENDPOINT, HF_TOKEN from the
  // environment; node:http instead of the global fetch (less CPU per byte; docs/benchmarks.md)
  if (isRemoteInput(path)) return openRemote(path, { ...remoteOptionsFromEnv(process.env), codec: nodeZlibCodec, fetch: nodeFetch, ...remoteSettings });
  let info;
  try {
    info = await stat(path);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'no such file or directory' : code === 'EACCES' ? 'permission denied' : (code ?? (e as Error).message);
    throw new TensorportError('IoError', `cannot read ${path || "''"}: ${why}`, { path, cause: e });
  }
  if (info.isDirectory()) return new FolderContext(new NodeFolder(path), null, { codec: nodeZlibCodec, name: path });
  const entry = basename(path);
  return new FolderContext(new NodeFolder(dirname(path), new Map([[entry, path]])), entry, { codec: nodeZlibCodec, name: path });
}

/** Runs `body` on the path's context and closes it afterwards. */
export async function withPath<T>(path: string, body: (ctx: Context) => Promise<T>): Promise<T> {
  const ctx = await pathContext(path);
  try {
    return await body(ctx);
  } finally {
    await ctx.close();
  }
}

export interface OpenedPath {
  format: AnyFormat;
  /** Closing it also closes the context it was read through. */
  checkpoint: Checkpoint;
  /** ExtensionMismatch and the like, from detection. */
  warnings: Finding[];
  ctx: Context;
}

/** Detects and opens a path; the returned checkpoint's `close()` closes everything. */
export async function openPath(path: string, options: PipelineOptions = {}): Promise<OpenedPath> {
  const ctx = await pathContext(path);
  try {
    const { format, checkpoint, warnings } = await openInput(ctx, options);
    const close = async () => {
      await checkpoint.close();
      await ctx.close();
    };
    // The checkpoint's own fields (warnings, aliases…) stay visible through the prototype.
    return { format, warnings, ctx, checkpoint: Object.assign(Object.create(checkpoint) as Checkpoint, { close }) };
  } catch (e) {
    await ctx.close();
    throw e;
  }
}
