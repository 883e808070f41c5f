import { extensionOf, safetensorsFormat, TensorportError, type Context, type Finding, type Format } from '@tensorport/core';
import { ggufFormat } from '@tensorport/gguf';
import { npyFormat, npzFormat } from '@tensorport/npz';
import { torchFormat } from '@tensorport/torch-zip';
import { identify as identifyAll, type Identify } from './identify.ts';

/** Any format, whatever its own option types. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyFormat = Format<any, any>;

export interface Detected {
  format: AnyFormat;
  /** ExtensionMismatch when the input's name disagrees with its content. */
  warnings: Finding[];
}

/** The formats one program knows, in sniffing order. Tests build their own instead of changing a global. */
export interface Registry {
  readonly formats: readonly AnyFormat[];
  byName(name: string): AnyFormat | undefined;
  /** The format of an input by content (first sniffer that says yes); UnknownFormat/UnsupportedFormat otherwise. */
  detect(ctx: Context): Promise<Detected>;
  /** The first format whose sniffer recognises the input, without the extension fallback; never throws for unknown content. */
  sniff(ctx: Context): Promise<AnyFormat | undefined>;
  /** Names a file in words (what detect's refusals say): assembled from the format packages' identifiers. */
  readonly identify: Identify;
}

export interface RegistryOptions {
  /** How files no format reads are named in errors (default: every package's identifiers). */
  identify?: Identify;
}

export function createRegistry(formats: readonly AnyFormat[], options: RegistryOptions = {}): Registry {
  const list = [...formats];
  const identify = options.identify ?? identifyAll;
  return {
    formats: list,
    identify,
    byName: (name) => list.find((f) => f.name === name),
    detect: (ctx) => detect(list, identify, ctx),
    sniff: (ctx) => sniff(list, ctx),
  };
}

/** Kinds of identify that mean "no content tensorport recognises": the extension may then decide. */
const UNRECOGNISED = new Set(['unknown', 'empty']);

async function sniff(formats: readonly AnyFormat[], ctx: Context): Promise<AnyFormat | undefined> {
  for (const f of formats) if (await f.sniff(ctx)) return f;
  return undefined;
}

async function detect(formats: readonly AnyFormat[], identify: Identify, ctx: Context): Promise<Detected> {
  let format = await sniff(formats, ctx);
  if (ctx.entry === null) {
    if (format) return { format, warnings: [] };
    throw new TensorportError('UnknownFormat', `${ctx.name} is a directory without a checkpoint tensorport can read (expected a *.safetensors.index.json, one *.safetensors file, pytorch_model.bin.index.json, pytorch_model.bin or one *.npz)`, { path: ctx.name });
  }
  const ext = extensionOf(ctx.entry);
  if (!format) {
    // Only now is the file named in words; a file whose bytes fit nothing but whose extension names a
    // format is read as that format, so a damaged model.safetensors gets the reader's precise error.
    const identified = await identify(await ctx.source(), ctx.codec ? { codec: ctx.codec } : {});
    const unrecognised = UNRECOGNISED.has(identified.kind);
    format = unrecognised ? formats.find((f) => f.extensions.includes(ext)) : undefined;
    if (!format) {
      throw new TensorportError(unrecognised ? 'UnknownFormat' : 'UnsupportedFormat', `${ctx.name} holds ${identified.what} (${identified.can}); tensorport reads ${names(formats)} checkpoints`, { path: ctx.name });
    }
  }
  const warnings: Finding[] = [];
  if (!format.extensions.includes(ext)) {
    warnings.push({
      code: 'ExtensionMismatch',
      message: `${ctx.name} has the extension '${ext || '(none)'}' but its content is ${format.name}; reading it as ${format.name}`,
      path: ctx.name,
    });
  }
  return { format, warnings };
}

function names(formats: readonly AnyFormat[]): string {
  const n = formats.map((f) => f.name);
  return n.length <= 1 ? n.join('') : `${n.slice(0, -1).join(', ')} and ${n[n.length - 1]}`;
}

/** Every format this package knows. Torch before npz: both are ZIPs, torch's is recognised by its member names. */
export const FORMATS: readonly AnyFormat[] = [safetensorsFormat, torchFormat, npzFormat, npyFormat, ggufFormat];

export const defaultRegistry: Registry = createRegistry(FORMATS);
