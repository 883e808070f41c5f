import { readdir, realpath, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { TensorportError } from '@tensorport/core';
import type { ScanResult } from '../pipeline/scan.ts';
import { scanPath } from './paths.ts';

/**
 * `tensorport scan <dir>`: every regular file below the directory, each scanned once by content
 * (the scanner itself decides whether it holds a pickle: a ZIP of pickles named `.txt`, a
 * `.npy` with objects, a bare pickle named anything), so nothing is skipped for its extension.
 * Symlinks are followed to files, each real file is reported once, and a directory reached twice
 * (a symlink loop) is walked once.
 */
export interface TreeEntry {
  /** As given, joined with the path inside the directory. */
  readonly path: string;
  readonly result?: ScanResult;
  /** Could not be read (permissions, vanished, an I/O error): no verdict. */
  readonly error?: { code: string; message: string };
}

export interface TreeScan {
  readonly root: string;
  readonly files: TreeEntry[];
  readonly summary: { files: number; safe: number; unsafe: number; noPickle: number; notAPickle: number; unreadable: number };
}

/** Every file below `root` in sorted order, following symlinks, each real file and directory once. */
async function filesUnder(root: string): Promise<string[]> {
  const out: string[] = [];
  const seenFiles = new Set<string>();
  const seenDirs = new Set<string>();
  const todo = [root];
  while (todo.length > 0) {
    const dir = todo.pop()!;
    const real = await realpath(dir).catch(() => dir);
    if (seenDirs.has(real)) continue;
    seenDirs.add(real);
    const names = (await readdir(dir)).sort();
    const subdirs: string[] = [];
    for (const name of names) {
      const p = join(dir, name);
      const s = await stat(p).catch(() => null);
      if (s === null) {
        out.push(p); // a dangling link or a vanished file: reported as unreadable
        continue;
      }
      if (s.isDirectory()) subdirs.push(p);
      else if (s.isFile()) {
        const r = await realpath(p).catch(() => p);
        if (seenFiles.has(r)) continue;
        seenFiles.add(r);
        out.push(p);
      }
    }
    for (let i = subdirs.length - 1; i >= 0; i--) todo.push(subdirs[i]!);
  }
  return out;
}

export async function scanTree(root: string): Promise<TreeScan> {
  const files: TreeEntry[] = [];
  const summary = { files: 0, safe: 0, unsafe: 0, noPickle: 0, notAPickle: 0, unreadable: 0 };
  for (const path of await filesUnder(root)) {
    summary.files++;
    try {
      const result = await scanPath(path);
      files.push({ path, result });
      if (result.verdict === 'safe') summary.safe++;
      else if (result.verdict === 'unsafe') summary.unsafe++;
      else if (result.verdict === 'no-pickle') summary.noPickle++;
      else summary.notAPickle++;
    } catch (e) {
      if (!(e instanceof TensorportError) && !(e instanceof Error && 'code' in e)) throw e;
      const code = e instanceof TensorportError ? e.code : String((e as { code: unknown }).code);
      files.push({ path, error: { code, message: (e as Error).message } });
      summary.unreadable++;
    }
  }
  return { root, files, summary };
}

/** One file as a tree of one (what `scan --format sarif` reports for a file): an unreadable file is an entry, not an exception. */
export async function scanFileAsTree(file: string): Promise<TreeScan> {
  try {
    const result = await scanPath(file);
    const unsafe = result.verdict === 'unsafe' ? 1 : 0;
    return { root: '.', files: [{ path: file, result }], summary: { files: 1, safe: result.verdict === 'safe' ? 1 : 0, unsafe, noPickle: result.verdict === 'no-pickle' ? 1 : 0, notAPickle: result.verdict === 'not-a-pickle' ? 1 : 0, unreadable: 0 } };
  } catch (e) {
    if (!(e instanceof TensorportError)) throw e;
    return { root: '.', files: [{ path: file, error: { code: e.code, message: e.message } }], summary: { files: 1, safe: 0, unsafe: 0, noPickle: 0, notAPickle: 0, unreadable: 1 } };
  }
}

/** True when `path` is a directory (after links); false for a file, a URL or a path that does not exist. */
export async function isDirectoryPath(path: string): Promise<boolean> {
  return (await stat(path).catch(() => null))?.isDirectory() === true;
}
