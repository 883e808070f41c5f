import type { Finding } from '../errors.ts';
import type { ByteSink } from '../io/sink.ts';
import type { ByteSource } from '../io/source.ts';
import type { Checkpoint, TensorDescriptor } from '../tensor.ts';
import type { DeflateCodec } from '../zip/codec.ts';
import type { SafetensorsHeader } from '../safetensors/header.ts';
import type { ZipArchive } from '../zip/reader.ts';

/**
 * The files an input lives among: a directory on disk, or the files a person dropped on a page.
 * Names are plain file names (no separators); `path(name)` is how a file is named in messages.
 */
export interface Folder {
  /** The folder in messages: a directory path, or a label for dropped files. */
  readonly name: string;
  /** Names of the regular files in it, sorted by code unit. */
  list(): Promise<readonly string[]>;
  /** Size of the regular file called `name`; null when there is none. */
  size(name: string): Promise<number | null>;
  /** Opens the file called `name` (the caller closes it); ShardMissing-worthy absence is an IoError here. */
  open(name: string): Promise<ByteSource>;
  /** How the file called `name` is named in messages and reports (a path in Node). */
  path(name: string): string;
}

/**
 * One input as every format sees it: a file (`entry`) among its siblings, or a whole folder
 * (`entry` null). Peeks are cached, so all sniffers and the chosen reader share one open per file,
 * one read of the head, one parse of a ZIP directory and of a small JSON file.
 *
 * Sources handed out are shared: their `close()` does nothing; `Context.close()` closes them all,
 * after every checkpoint opened from the context is done with.
 */
export interface Context {
  readonly folder: Folder;
  /** The input file's name in `folder`, or null when the input is the folder itself. */
  readonly entry: string | null;
  /** The input as its user named it (a path as typed, or the folder label). */
  readonly name: string;
  /** Inflates deflated ZIP members and computes CRCs (node:zlib in Node, fflate in a browser). */
  readonly codec: DeflateCodec | undefined;
  has(name: string): Promise<boolean>;
  size(name?: string): Promise<number>;
  /** The message name of `name` (default: the entry). */
  path(name?: string): string;
  /** The shared source of `name` (default: the entry). */
  source(name?: string): Promise<ByteSource>;
  /** The first HEAD_BYTES bytes (fewer for a smaller file). */
  head(name?: string): Promise<Uint8Array>;
  /** The ZIP directory of `name`, parsed once; a failure is remembered and rethrown. */
  zip(name?: string): Promise<ZipArchive>;
  /** The safetensors header of `name`, parsed and validated once (validate and open share it); a failure is remembered and rethrown. */
  safetensorsHeader(name?: string): Promise<SafetensorsHeader>;
  /** A small file read whole, refused above `maxBytes` (an index, config.json). */
  bytes(name: string, maxBytes: number, code?: 'InvalidIndex' | 'MlxInvalidConfig'): Promise<Uint8Array>;
  /** Message names of the files opened so far (what a conversion reads, so outputs must differ). */
  opened(): string[];
  /**
   * Lets go of what was parsed (ZIP directories, safetensors headers, heads, small files) while the
   * sources stay open: a caller done with the checkpoints it opened (convert, before reading its
   * output back) stops holding a 100,000-entry directory. A later call parses again.
   */
  forget?(): void;
  close(): Promise<void>;
}

export interface ValidationReport {
  valid: boolean;
  errors: Finding[];
  warnings: Finding[];
  /** The files that were checked (message names). */
  files: string[];
}

export interface WriteResult {
  /** The file names written, in the target (a file target: its one name). */
  files: string[];
  /** Bytes written, all files together. */
  bytes: number;
  /** What the output cannot say as the input did (npz: BF16/float8 that numpy reads back as void). */
  warnings?: Finding[];
}

/**
 * Where a writer's files go, with the output policy applied by the target (not by each writer):
 * never an input, existing outputs refused without force, nothing left behind on failure, fsync.
 * A file target receives exactly one file whatever it is called; a directory target receives the
 * format's own file names.
 */
export interface OutputTarget {
  /** The output as its user named it. */
  readonly name: string;
  readonly directory: boolean;
  /** CRCs and DEFLATE for ZIP writers (node:zlib in Node; writers fall back to their own). */
  readonly codec?: DeflateCodec;
  /**
   * Before any byte is written: may these files be written? `shadows` are other entries of a
   * directory that would make it open as something else; refused too without force, removed
   * after the commit with it. Creates the directory when needed.
   */
  prepare(files: readonly string[], shadows?: readonly string[]): Promise<void>;
  /** An all-or-nothing sink for one planned file. */
  create(file: string): Promise<ByteSink>;
  /** After the commit: removes shadowing entries named in `prepare` (best effort). */
  settle(): Promise<void>;
  /** Where a written file is, as reported (an absolute path in Node, the name in memory). */
  locate(file: string): string;
  /** Removes what was committed (a later check failed) and the directory if this target made it. */
  rollback(files: readonly string[]): Promise<void>;
  /** The written output as a context, to read it back. */
  reopen(files: readonly string[]): Promise<Context>;
  /** Paths being read: an output replacing one of them is SameInputOutput. */
  protect(inputs: readonly string[]): void;
}

export interface WriteCommon {
  onProgress?: (done: number, total: number) => void;
}

/**
 * One checkpoint format: everything the library knows about it. `Open` and `Write` are its own
 * reader and writer options (e.g. torch's `select`, npz's `compress`); nothing is shared but the
 * progress callback.
 */
export interface Format<Open = unknown, Write = unknown> {
  /** Short name used in messages and for `convert({ to })`. */
  readonly name: string;
  /** Extensions that usually hold it: another extension gets a warning; a file whose bytes fit no format is tried by its extension. */
  readonly extensions: readonly string[];
  /** True when the context's input holds this format, by content or folder layout, never by name alone. */
  sniff(ctx: Context): Promise<boolean>;
  /** Opens without reading tensor data. */
  open(ctx: Context, options?: Open): Promise<Checkpoint>;
  write?(tensors: readonly TensorDescriptor[], metadata: ReadonlyMap<string, string> | null, target: OutputTarget, options?: Write & WriteCommon): Promise<WriteResult>;
  /** Checks the input completely; never throws on bad input. */
  validate?(ctx: Context, options?: Open): Promise<ValidationReport>;
  /** Reader options that read back exactly what was written from `tensors` (e.g. a .npy's name). */
  readBack?(tensors: readonly TensorDescriptor[]): Open;
}
