import { startsWithMagic, TensorportError, toFinding, withProgress, type CastTarget, type Context, type Format, type TensorDescriptor, type ValidationReport } from '@tensorport/core';
import { GGUF_MAGIC } from './constants.ts';
import { redescribe } from './descriptor.ts';
import { ggmlTypeByName } from './ggml-types.ts';
import { canQuantize } from './quant/quantize.ts';
import { llamaCppFindings } from './llama/loadable.ts';
import { openGguf, type GgufFile, type GgufReadOptions } from './read.ts';
import { dequantizedDescriptor, quantizeDescriptor } from './transform.ts';
import { gguf, type GgufValue } from './values.ts';
import { writeGguf } from './write.ts';

export interface GgufOpenOptions extends Omit<GgufReadOptions, 'onWarning'> {
  /** Give the tensors dequantized to this dtype instead of as raw ggml blocks (U8). */
  dequantize?: CastTarget;
}

export interface GgufFormatWriteOptions {
  /** Quantize every float tensor of 2+ dimensions whose rows are whole blocks to this type (F16, Q8_0…). */
  type?: string;
  alignment?: number;
  /** Typed keys written first (llamaMetadata's UINT32/FLOAT32 keys); string metadata keys they name are left out. */
  kv?: ReadonlyArray<readonly [string, GgufValue]>;
}

async function openContext(ctx: Context, options: GgufOpenOptions = {}): Promise<GgufFile> {
  const file = await openGguf(await ctx.source(), options);
  if (!options.dequantize) return file;
  const to = options.dequantize;
  const tensors = file.tensors.map((t) => ({ ...dequantizedDescriptor(t, to), ggmlType: t.ggmlType, dims: t.dims, logicalShape: t.logicalShape, elements: t.elements, fileOffset: t.fileOffset, range: t.range }));
  // Replaced in place: spreading the file would compute its lazy metadata.
  return Object.defineProperty(file, 'tensors', { value: tensors, enumerable: true });
}

/**
 * GGUF (llama.cpp). Opening reads the header pages only; tensors are raw ggml blocks unless
 * `dequantize` is given. Writing takes plain float/int tensors (or block tensors from
 * quantizeDescriptor) and string metadata, written as STRING keys; model-specific names and keys
 * (llamaToGguf) are the caller's.
 */
export const ggufFormat: Format<GgufOpenOptions, GgufFormatWriteOptions> = {
  name: 'gguf',
  extensions: ['.gguf'],

  async sniff(ctx) {
    return ctx.entry !== null && startsWithMagic(await ctx.head(), GGUF_MAGIC);
  },

  open: openContext,

  async write(tensors, metadata, target, options = {}) {
    if (target.directory) throw new TensorportError('InvalidOption', `gguf output is one file: give a file path, not the directory ${target.name}`, { path: target.name });
    const type = options.type;
    if (type !== undefined && !canQuantize(type)) throw new TensorportError('InvalidOption', `cannot quantize to ${JSON.stringify(type)}`, { path: target.name });
    const out: TensorDescriptor[] = withProgress(tensors, options.onProgress).map((t, i) => {
      const src = tensors[i] as TensorDescriptor & { ggmlType?: unknown };
      if (src.ggmlType !== undefined) return redescribe(src, src.name, (c?: number) => t.chunks(c));
      const floating = t.dtype === 'F32' || t.dtype === 'F16' || t.dtype === 'BF16' || t.dtype === 'F64';
      const last = t.shape[t.shape.length - 1] ?? 1;
      const q = type === undefined ? undefined : ggmlTypeByName(type);
      return q && floating && t.shape.length >= 2 && last % q.blockSize === 0 ? quantizeDescriptor(t, q) : t;
    });
    const kv: Array<[string, GgufValue]> = (options.kv ?? []).map(([k, v]) => [k, v]);
    const typed = new Set(kv.map(([k]) => k));
    for (const [k, v] of metadata ?? []) if (!typed.has(k)) kv.push([k, gguf.str(v)]);
    await target.prepare([target.name]);
    const r = await writeGguf(out, kv, await target.create(target.name), options.alignment === undefined ? {} : { alignment: options.alignment });
    return { files: [target.name], bytes: r.bytes };
  },

  /** Reads every tensor's bytes once; never throws on bad input. */
  async validate(ctx, options): Promise<ValidationReport> {
    const path = ctx.name;
    let file: GgufFile | null = null;
    try {
      file = await openGguf(await ctx.source(), options);
      for (const t of file.tensors) for await (const chunk of t.chunks()) void chunk;
      // A valid GGUF that llama.cpp would still refuse as a model says why, as warnings.
      return { valid: true, errors: [], warnings: [...file.warnings, ...llamaCppFindings(file)].map((f) => ({ path, ...f })), files: [path] };
    } catch (e) {
      if (!(e instanceof TensorportError)) throw e;
      return { valid: false, errors: [{ path, ...toFinding(e) }], warnings: file ? file.warnings.map((f) => ({ path, ...f })) : [], files: [path] };
    }
  },
};
