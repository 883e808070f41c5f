import { readdir, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { FolderContext, isRemoteInput, openRemote, remoteOptionsFromEnv, TensorportError, type ByteSource, type Checkpoint, type Context, type Finding, type Folder, type RemoteOptions } from '@tensorport/core';
import { FileSource, nodeZlibCodec } from '@tensorport/core/node';
import { openInput, type PipelineOptions } from '../pipeline/open.ts';
import type { AnyFormat } from '../registry.ts';

/** A directory on disk. `typed` keeps the input file's name as the user spelled it (messages, source names). */
export class NodeFolder implements Folder {
  constructor(
    readonly name: string,
    private readonly typed: ReadonlyMap<string, string> = new Map(),
  ) {}

  async list(): Promise<readonly string[]> {
    const entries = await readdir(this.name, { withFileTypes: true });
    return entries.filter((e) => e.isFile() || e.isSymbolicLink()).map((e) => e.name).sort();
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
  // http(s):// and hf:// are remote files read by Range (core/remote); HF_ENDPOINT, HF_TOKEN from the environment
  if (isRemoteInput(path)) return openRemote(path, { ...remoteOptionsFromEnv(process.env), codec: nodeZlibCodec, ...remoteSettings });
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
