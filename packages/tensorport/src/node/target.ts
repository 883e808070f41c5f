import { lstat, mkdir, rm, rmdir, stat, unlink } from 'node:fs/promises';
import { dirname, join, resolve, sep } from 'node:path';
import { TensorportError, type ByteSink, type Context } from '@tensorport/core';
import { FileSink, nodeZlibCodec, sameFile } from '@tensorport/core/node';
import { pathContext } from './folder.ts';

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
 * are refused without force (OutputExists), files appear only on commit (FileSink: temp file,
 * fsync, rename), and `rollback` removes what a later check refused, with the directory if this
 * target created it.
 */
export class FileTarget {
  readonly codec = nodeZlibCodec;
  /** Absolute path of the output. */
  readonly path: string;
  private inputs: readonly string[] = [];
  private shadows: readonly string[] = [];
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
    this.shadows = shadows;
    if (this.options.force !== true) {
      for (const p of [...outs, ...shadows.map((s) => join(this.path, s))]) {
        if (await exists(p)) throw new TensorportError('OutputExists', `${p} already exists (use --force to replace it)`, { path: p });
      }
    }
    if (!(await exists(this.path))) {
      await mkdir(this.path, { recursive: true }).catch((e: unknown) => {
        throw new TensorportError('IoError', `cannot create directory ${this.path}: ${(e as Error).message}`, { path: this.path, cause: e });
      });
      this.createdDir = true;
    }
  }

  create(file: string): Promise<ByteSink> {
    return FileSink.create(this.locate(file), { force: this.options.force === true, fsync: this.options.fsync !== false });
  }

  async settle(): Promise<void> {
    for (const s of this.shadows) await unlink(join(this.path, s)).catch(() => undefined);
  }

  async rollback(files: readonly string[]): Promise<void> {
    await Promise.all(files.map((f) => rm(this.locate(f), { force: true }).catch(() => undefined)));
    if (this.createdDir) await rmdir(this.path).catch(() => undefined);
  }

  reopen(): Promise<Context> {
    return pathContext(this.directory ? this.path : this.path);
  }
}

async function exists(path: string): Promise<boolean> {
  return (await lstat(path).catch(() => null)) !== null;
}
