import { tensorsInOrder, TensorportError, ZipWriter, type ByteSink, type DeflateCodec, type TensorDescriptor } from '@tensorport/core';
import { dtypeInfo, torchDtypeFor, type TorchDtype } from './dtypes.ts';
import { PickleWriter } from './pickle-writer.ts';

/**
 * safetensors → `.pt`: the ZIP layout `torch.save` writes (`<name>/data.pkl`, `byteorder`,
 * `data/<key>`, `version` = 3; every member stored, its data 64-byte aligned so `mmap=True` works),
 * with a protocol-2 pickle that `torch.load(weights_only=True)` accepts in torch 1.13 and 2.x.
 * Dtypes with a legacy storage class use `_rebuild_tensor_v2`; float8 and uint16/32/64 need
 * `_rebuild_tensor_v3` + `UntypedStorage`, which loads on torch >= 2.1 only.
 */
export interface WriteTorchOptions {
  /** The archive's top-level directory (torch uses the file stem; `archive` when saving to a buffer). */
  archiveName?: string;
  /**
   * Re-tie aliases recorded in metadata (`metadata[removed] = kept`, as convert.py writes them): the
   * removed name becomes a second tensor on the kept one's storage. Default true.
   */
  retieAliases?: boolean;
  /** Only its `crc32` is used (members are stored): `nodeZlibCodec` in Node is several times faster. */
  zipCodec?: DeflateCodec;
}

export interface WriteTorchReport {
  /** Names written, aliases included. */
  tensors: string[];
  /** Re-tied names → the tensor whose storage they share. */
  aliases: Record<string, string>;
  /** Metadata entries with no place in a state dict (not aliases). */
  droppedMetadata: string[];
}

/** torch's `kFieldAlignment` (inline_container.h): record data starts on 64-byte boundaries. */
const ALIGN = 64;

interface Planned {
  readonly name: string;
  readonly key: number;
  readonly dtype: TorchDtype;
  /** torch's shape: a packed float4 tensor counts bytes, safetensors counts values. */
  readonly shape: number[];
}

export async function writeTorchCheckpoint(
  input: { readonly tensors: readonly TensorDescriptor[]; readonly metadata: ReadonlyMap<string, string> | null },
  sink: ByteSink,
  opts: WriteTorchOptions = {},
): Promise<WriteTorchReport> {
  try {
    const report = await write(input, sink, opts);
    await sink.commit();
    return report;
  } catch (e) {
    await sink.abort();
    throw e;
  }
}

async function write(
  input: { readonly tensors: readonly TensorDescriptor[]; readonly metadata: ReadonlyMap<string, string> | null },
  sink: ByteSink,
  opts: WriteTorchOptions,
): Promise<WriteTorchReport> {
  const prefix = opts.archiveName ?? 'archive';
  if (!/^[A-Za-z0-9_.-]+$/.test(prefix) || prefix === '.' || prefix === '..') {
    throw new TensorportError('InvalidMetadata', `archive name ${JSON.stringify(prefix)} must be one plain path segment`);
  }
  const planned = input.tensors.map((t, key) => plan(t, key));
  const byName = new Map<string, Planned>();
  for (const p of planned) {
    if (byName.has(p.name)) throw new TensorportError('DuplicateTensorName', `two tensors are named ${JSON.stringify(p.name)}`, { tensor: p.name });
    byName.set(p.name, p);
  }
  const aliases: Record<string, string> = Object.create(null) as Record<string, string>;
  const droppedMetadata: string[] = [];
  for (const [k, v] of input.metadata ?? []) {
    if (k === 'format') continue;
    const kept = byName.get(v);
    if (opts.retieAliases !== false && kept && !byName.has(k)) aliases[k] = v;
    else droppedMetadata.push(k);
  }
  const entries: Array<[string, Planned]> = [...planned.map((p) => [p.name, p] as [string, Planned]), ...Object.entries(aliases).map(([a, k]) => [a, byName.get(k)!] as [string, Planned])];

  const zip = new ZipWriter(sink, opts.zipCodec ? { codec: opts.zipCodec } : {});
  // Padded inside each local header ("FB" extra), as torch's own writer does: members stay back to back.
  const member = async (name: string, data: AsyncIterable<Uint8Array>): Promise<void> => {
    await zip.add(`${prefix}/${name}`, data, { align: ALIGN });
  };
  await member('data.pkl', once(statePickle(entries)));
  await member('byteorder', once(new TextEncoder().encode('little')));
  let i = 0;
  for await (const [, chunks] of tensorsInOrder(planned.map((p) => input.tensors[p.key]!))) await member(`data/${planned[i++]!.key}`, chunks);
  await member('version', once(new TextEncoder().encode('3\n')));
  await zip.finish();
  return { tensors: entries.map(([n]) => n), aliases, droppedMetadata };
}

function plan(t: TensorDescriptor, key: number): Planned {
  const dtype = torchDtypeFor(t.dtype);
  if (dtype === null) throw new TensorportError('TorchUnsupportedDtype', `${JSON.stringify(t.name)} is ${t.dtype}, which torch has no dtype for`, { tensor: t.name });
  const shape = [...t.shape];
  if (dtypeInfo(dtype).packed) {
    const last = shape.length - 1;
    if (last < 0 || shape[last]! % 2 !== 0) throw new TensorportError('TorchUnsupportedDtype', `${JSON.stringify(t.name)}: F4 needs an even last dimension to pack into torch.float4_e2m1fn_x2`, { tensor: t.name });
    shape[last] = shape[last]! / 2;
  }
  return { name: t.name, key, dtype, shape };
}

async function* once(b: Uint8Array): AsyncGenerator<Uint8Array> {
  yield b;
}


/** `OrderedDict` of name → `_rebuild_tensor_v2/_v3(storage, 0, shape, C strides, False, OrderedDict())`. */
function statePickle(entries: ReadonlyArray<[string, Planned]>): Uint8Array {
  const w = new PickleWriter().proto().global('collections', 'OrderedDict').emptyTuple().reduce();
  for (let i = 0; i < entries.length; i += 1000) {
    w.mark();
    for (const [name, p] of entries.slice(i, i + 1000)) {
      w.str(name);
      tensor(w, p);
    }
    w.setitems();
  }
  return w.stop().finish();
}

function tensor(w: PickleWriter, p: Planned): void {
  const info = dtypeInfo(p.dtype);
  const numel = p.shape.reduce((a, b) => a * b, 1);
  const typed = info.storage !== null;
  w.global('torch._utils', typed ? '_rebuild_tensor_v2' : '_rebuild_tensor_v3').mark();
  // persistent id ('storage', type, key, 'cpu', numel): numel counts elements, or bytes when untyped
  w.mark().str('storage');
  if (typed) w.global('torch', info.storage!);
  else w.global('torch.storage', 'UntypedStorage'); // torch 2.x allows it under its real module only
  w.str(String(p.key)).str('cpu').int(typed ? numel : numel * info.bytes).tuple().binpersid();
  w.int(0).intTuple(p.shape).intTuple(contiguousStrides(p.shape)).newFalse();
  w.global('collections', 'OrderedDict').emptyTuple().reduce();
  if (!typed) w.global('torch', p.dtype);
  w.tuple().reduce();
}

function contiguousStrides(shape: readonly number[]): number[] {
  const s = new Array<number>(shape.length);
  let acc = 1;
  for (let k = shape.length - 1; k >= 0; k--) {
    s[k] = acc;
    acc *= Math.max(shape[k]!, 1);
  }
  return s;
}
