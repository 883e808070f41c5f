/**
 * `identify` by path: a file's format named from its bytes (never its extension), a directory by
 * the checkpoint layout it holds, a URL or hf:// address by the bytes the probe reads from it.
 * Never throws for an unreadable path: that is a report with `kind: null` and the error.
 */
import { stat } from 'node:fs/promises';
import { TensorportError, isRemoteInput, type Finding, type Identification } from '@tensorport/core';
import { FileSource, nodeZlibCodec } from '@tensorport/core/node';
import { identify } from '../identify.ts';
import { defaultRegistry } from '../registry.ts';
import { withPath } from './folder.ts';

export interface IdentifyReport {
  path: string;
  /** identify's kind, 'directory' for a checkpoint directory, null when the path could not be read. */
  kind: string | null;
  what: string;
  can: string;
  container?: string;
  details: Record<string, string | number>;
  warnings: Finding[];
  error?: Record<string, unknown>;
}

/** Names one path's format from its bytes (a directory: the checkpoint layout it holds). */
export async function identifyPath(path: string): Promise<IdentifyReport> {
  if (isRemoteInput(path)) {
    // a URL or hf:// address: the probe's bytes (a bare repo: the weights file it resolves to)
    return withPath(path, async (ctx) => {
      const r: Identification = await identify(await ctx.source(), { codec: nodeZlibCodec });
      return { path: ctx.name, kind: r.kind, what: r.what, can: r.can, ...(r.container ? { container: r.container } : {}), details: r.details, warnings: r.warnings };
    }).catch((e: unknown) => {
      if (!(e instanceof TensorportError)) throw e;
      return { path, kind: null, what: 'unreadable', can: 'nothing', details: {}, warnings: [], error: e.toJSON() };
    });
  }
  const info = await stat(path).catch(() => null);
  if (info?.isDirectory()) {
    return withPath(path, async (ctx) => {
      const format = await defaultRegistry.sniff(ctx);
      const entries = (await ctx.folder.list()).length;
      return format
        ? { path, kind: 'directory', what: `a ${format.name} checkpoint directory`, can: 'convert, inspect, validate', details: { entries }, warnings: [] }
        : { path, kind: 'directory', what: 'a directory without a checkpoint tensorport can read', can: 'not supported', details: { entries }, warnings: [] };
    });
  }
  let source: FileSource;
  try {
    source = await FileSource.open(path);
  } catch (e) {
    const err = e instanceof TensorportError ? e : new TensorportError('IoError', `cannot read ${path}: ${(e as Error).message}`, { path, cause: e });
    return { path, kind: null, what: 'unreadable', can: 'nothing', details: {}, warnings: [], error: err.toJSON() };
  }
  try {
    const r: Identification = await identify(source, { codec: nodeZlibCodec });
    return { path, kind: r.kind, what: r.what, can: r.can, ...(r.container ? { container: r.container } : {}), details: r.details, warnings: r.warnings };
  } finally {
    await source.close();
  }
}
