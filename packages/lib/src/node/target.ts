import { lstat, mkdir, readdir, rm, rmdir, stat, unlink } from 'node:fs/promises';
import { dirname, join, resolve, sep } from 'node:path';
import { FolderContext, TensorportError, type ByteSink, type Context, type OutputTarget } from '@tensorport/core';
import { CommitGroup, FileSink, nodeZlibCodec, sameFile } from '@tensorport/core/node';
import { leftoversExist, leftoverWeightFiles } from '../model-files.ts';
import { NodeFolder, pathContext } from './folder.ts';

export interface FileTargetOptions {
  /** Replace existing outputs (never an input). */
  force?: boolean;
  /** fsync each output before it is renamed into place (default true). */
  fsync?: boolean;
}

/**
 * The output policy on disk, one for every writer: a path ending in a separator or naming an
 * existing directory receives the format's file names, anything else is exactly one file; inputs
 * are never replaced (SameInputOutput, also through links and other spellings), existing outputs
 * are refused without force (OutputExists), and so are weight files of an older write that this one
 * would not replace (removed with force, after the commit); files appear only on commit (FileSink:
 * temp file, fsync, rename), a directory's files as one journaled commit group (core's
 * commit-group.ts), and `rollback` removes what a later check refused, with the directory if this
 * target created it.
 */
export class FileTarget implements OutputTarget {
  readonly codec = nodeZlibCodec;
  /** Absolute path of the output. */
  readonly path: string;
  private inputs: readonly string[] = [];
  private readonly planned = new Set<string>();
  private readonly shadows = new Set<string>();
  private group: CommitGroup | null = null;
  private createdDir = false;

  private constructor(
    readonly name: string,
    readonly directory: boolean,
    private readonly options: FileTargetOptions,
  ) {
    this.path = resolve(name);
  }

  static async at(output: string, options: FileTargetOptions = {}): Promise<FileTarget> {
    const info = await stat(output).catch(() => null);
    const directory = output.endsWith('/') || output.endsWith(sep) || info?.isDirectory() === true;
    return new FileTarget(output, directory, options);
  }

  protect(inputs: readonly string[]): void {
    this.inputs = [...inputs];
  }

  locate(file: string): string {
    return this.directory ? join(this.path, file) : this.path;
  }

  async prepare(files: readonly string[], shadows: readonly string[] = []): Promise<void> {
    const outs = files.map((f) => this.locate(f));
    const outDir = this.directory ? this.path : dirname(this.path);
    for (const input of this.inputs) {
      const st = await stat(input).catch(() => null);
      if (!st) continue;
      for (const out of outs) {
        // A directory is read through the checkpoint files in it: replacing one of them is replacing an input.
        const clash = st.isDirectory() ? (await sameFile(input, outDir)) && (await exists(out)) : await sameFile(input, out);
        if (clash) throw new TensorportError('SameInputOutput', `output ${out} would replace the input ${input}`, { path: out });
      }
    }
    if (!this.directory) return;
    for (const f of files) this.planned.add(f);
    const present = await readdir(this.path).catch(() => [] as string[]);
    // Entries this write leaves but a loader would read with it: the other layout's entry file, old shards.
    const leftovers = leftoverWeightFiles(present, [...this.planned], shadows);
    for (const s of leftovers) {
      for (const input of this.inputs) {
        if (await sameFile(input, join(this.path, s))) throw new TensorportError('SameInputOutput', `writing into ${this.path} would remove the input ${input}`, { path: input });
      }
    }
    if (this.options.force !== true) {
      for (const p of outs) {
        if (await exists(p)) throw new TensorportError('OutputExists', `${p} already exists (use --force to replace it)`, { path: p });
      }
      if (leftovers.length > 0) throw leftoversExist(join(this.path, leftovers[0]!), leftovers);
    }
    for (const s of leftovers) this.shadows.add(s);
    if (!(await exists(this.path))) {
      await mkdir(this.path, { recursive: true }).catch((e: unknown) => {
        throw new TensorportError('IoError', `cannot create directory ${this.path}: ${(e as Error).message}`, { path: this.path, cause: e });
      });
      this.createdDir = true;
    }
  }

  create(file: string): Promise<ByteSink> {
    // One journaled group per directory: a crash in the middle of its renames is rolled back by the next run.
    if (this.directory) this.group ??= new CommitGroup();
    return FileSink.create(this.locate(file), { force: this.options.force === true, fsync: this.options.fsync !== false, ...(this.group ? { group: this.group } : {}) });
  }

  /** Removes the shadowing entries and stale weight files named in `prepare`. */
  async settle(): Promise<void> {
    for (const s of this.shadows) await unlink(join(this.path, s)).catch(() => undefined);
    this.shadows.clear();
  }

  async rollback(files: readonly string[]): Promise<void> {
    await Promise.all(files.map((f) => rm(this.locate(f), { force: true }).catch(() => undefined)));
    if (this.createdDir) await rmdir(this.path).catch(() => undefined);
  }

  /** The written files alone (a directory's other entries, stale ones included, are not read back). */
  async reopen(files: readonly string[]): Promise<Context> {
    if (!this.directory) return pathContext(this.path);
    return new FolderContext(new NodeFolder(this.path, new Map(), new Set(files)), null, { codec: nodeZlibCodec, name: this.path });
  }
}

async function exists(path: string): Promise<boolean> {
  return (await lstat(path).catch(() => null)) !== null;
}
