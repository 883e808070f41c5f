import {
  detectFormat, extensionOf, TensorportError, toFinding, withProgress,
  type Checkpoint, type Context, type DType, type Finding, type Format, type OutputTarget, type TensorDescriptor, type ValidationReport,
} from '@tensorport/core';
import { directoryHasNpz, npzOfDirectory } from './directory.ts';
import { fflateCodec } from './fflate-codec.ts';
import { startsWithNpyMagic } from './npy-header.ts';
import { openNpy } from './open-npy.ts';
import { openNpz } from './open-npz.ts';
import { writeNpy, writeNpz } from './write.ts';

export interface NpzOpenOptions {
  /** The dtype a `<V1` array holds (ml_dtypes writes float8 variants that way). */
  void1?: DType;
  /**
   * false skips each member's CRC-32 (`--no-crc`), with a ZipCrcNotChecked warning: for an input
   * checked another way (a known sha-256). It is a member's only integrity check, so on by default.
   */
  verifyCrc?: boolean;
}

export interface NpyOpenOptions extends NpzOpenOptions {
  /** The tensor name (default: the file stem). */
  name?: string;
}

export interface NpzFormatWriteOptions {
  /** Deflate members (np.savez_compressed); stored by default. */
  compress?: boolean;
}

/** A .npz and a .npy are single files: a directory output is refused. */
function fileOnly(target: OutputTarget, format: string): void {
  if (target.directory) throw new TensorportError('InvalidOption', `${format} output is one file: give a file path, not the directory ${target.name}`, { path: target.name });
}

/**
 * Reads every tensor's bytes once, so truncations, CRCs and inflation errors all surface; never
 * throws on bad input.
 */
async function validateWith(ctx: Context, open: () => Promise<Checkpoint & { warnings: readonly Finding[] }>, path = ctx.name): Promise<ValidationReport> {
  let c: (Checkpoint & { warnings: readonly Finding[] }) | null = null;
  try {
    c = await open();
    for (const t of c.tensors) for await (const chunk of t.chunks()) void chunk;
    return { valid: true, errors: [], warnings: c.warnings.map((f) => ({ path, ...f })), files: [path] };
  } catch (e) {
    if (!(e instanceof TensorportError)) throw e;
    return { valid: false, errors: [{ path, ...toFinding(e) }], warnings: c ? c.warnings.map((f) => ({ path, ...f })) : [], files: [path] };
  } finally {
    await c?.close();
  }
}

/** NumPy has no float8 descr: one-byte floats other than E5M2 go out as `<V1`; read back as the one such dtype written. */
function void1Back(tensors: readonly TensorDescriptor[]): NpzOpenOptions {
  const void1 = new Set(tensors.filter((t) => t.dtype.startsWith('F8_') && t.dtype !== 'F8_E5M2').map((t) => t.dtype));
  return void1.size === 1 ? { void1: [...void1][0]! } : {};
}

/** `resolved`: the npz to read, when the caller has already resolved a directory input to it. */
async function openNpzContext(ctx: Context, options: NpzOpenOptions = {}, resolved?: string) {
  const codec = ctx.codec ?? fflateCodec;
  const file = resolved ?? ctx.entry ?? (await npzOfDirectory(ctx));
  const archive = await ctx.zip(file).catch(() => undefined);
  // A damaged directory is parsed again by openNpz, which gives the precise error.
  return openNpz(await ctx.source(file), { codec, ...(archive ? { archive } : {}), ...(options.void1 ? { void1: options.void1 } : {}), ...(options.verifyCrc === false ? { verifyCrc: false } : {}) });
}

async function openNpyContext(ctx: Context, options: NpyOpenOptions = {}) {
  return openNpy(await ctx.source(), { ...(options.void1 ? { void1: options.void1 } : {}), ...(options.name === undefined ? {} : { name: options.name }) });
}

/**
 * NumPy .npz: a ZIP whose members are all `*.npy` (an empty archive too, as np.savez() writes
 * it). A damaged ZIP named .npz is still read as npz, to get the reader's precise error. A
 * directory holding a `.npz` (mlx examples' `weights.npz` beside config.json) is that file when
 * it is the directory's only weight file (directory.ts), else the open says which files compete.
 */
export const npzFormat: Format<NpzOpenOptions, NpzFormatWriteOptions> = {
  name: 'npz',
  extensions: ['.npz'],

  async sniff(ctx) {
    if (ctx.entry === null) return directoryHasNpz(ctx);
    if (detectFormat(await ctx.head(), await ctx.size()) !== 'zip') return false;
    let names: string[];
    try {
      names = (await ctx.zip()).entries.map((e) => e.name);
    } catch (e) {
      if (!(e instanceof TensorportError)) throw e;
      return extensionOf(ctx.entry) === '.npz';
    }
    return names.every((n) => n.endsWith('.npy'));
  },

  open: openNpzContext,

  async write(tensors, _metadata, target, options = {}) {
    fileOnly(target, 'npz');
    await target.prepare([target.name]);
    const sink = await target.create(target.name);
    const r = await writeNpz(withProgress(tensors, options.onProgress), sink, { compress: options.compress === true, codec: target.codec ?? fflateCodec });
    return { files: [target.name], bytes: r.bytesWritten, warnings: oncePerCode(r.warnings) };
  },

  async validate(ctx, options) {
    let file;
    try {
      file = ctx.entry ?? (await npzOfDirectory(ctx));
    } catch (e) {
      if (!(e instanceof TensorportError)) throw e;
      return { valid: false, errors: [{ path: ctx.name, ...toFinding(e) }], warnings: [], files: [ctx.name] };
    }
    return validateWith(ctx, () => openNpzContext(ctx, options, file), ctx.path(file));
  },
  readBack: void1Back,
};

/** The writer's per-tensor warnings as one per code (a BF16 model would otherwise warn once per tensor). */
function oncePerCode(warnings: readonly Finding[]): Finding[] {
  const byCode = new Map<string, Finding[]>();
  for (const w of warnings) byCode.set(w.code, [...(byCode.get(w.code) ?? []), w]);
  return [...byCode.values()].map((ws) => (ws.length === 1 ? ws[0]! : { code: ws[0]!.code, message: `${ws[0]!.message} (and ${ws.length - 1} more tensor${ws.length === 2 ? '' : 's'} like it)` }));
}

/** NumPy .npy: exactly one array, named after the file stem (or `name`). */
export const npyFormat: Format<NpyOpenOptions, object> = {
  name: 'npy',
  extensions: ['.npy'],

  async sniff(ctx) {
    return ctx.entry !== null && startsWithNpyMagic(await ctx.head());
  },

  open: openNpyContext,

  async write(tensors, _metadata, target, options = {}) {
    if (tensors.length !== 1) {
      throw new TensorportError('InvalidOption', `a .npy holds one array; the input has ${tensors.length} tensors (write an .npz instead)`, { path: target.name });
    }
    fileOnly(target, 'npy');
    await target.prepare([target.name]);
    const r = await writeNpy(withProgress(tensors, options.onProgress)[0]!, await target.create(target.name));
    return { files: [target.name], bytes: r.bytesWritten, warnings: oncePerCode(r.warnings) };
  },

  validate: (ctx, options) => validateWith(ctx, () => openNpyContext(ctx, options)),
  readBack: (tensors) => ({ ...void1Back(tensors), ...(tensors.length === 1 ? { name: tensors[0]!.name } : {}) }),
};
