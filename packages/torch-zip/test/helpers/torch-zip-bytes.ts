import { MemorySink, ZipWriter, type DeflateCodec } from '@tensorport/core';
import { binunicode, global } from './pickle-bytes.ts';

/** A torch-style ZIP (prefix `t/`) from raw members, for hostile layouts the writer never makes. */
export async function torchZip(members: Record<string, Uint8Array | string>, deflate?: { codec: DeflateCodec; names: string[] }): Promise<Uint8Array> {
  const sink = new MemorySink();
  const zip = new ZipWriter(sink, deflate ? { codec: deflate.codec } : {});
  for (const [name, data] of Object.entries(members)) {
    const bytes = typeof data === 'string' ? new TextEncoder().encode(data) : data;
    await zip.add(name, (async function* () { yield bytes; })(), { deflate: deflate?.names.includes(name) ?? false });
  }
  await zip.finish();
  await sink.commit();
  return sink.bytes();
}

const latin1 = (s: string): number[] => Array.from(s, (c) => c.charCodeAt(0));
const int = (n: number): number[] => (n < 256 ? [0x4b, n] : [0x4d, n & 0xff, n >> 8]);
const tuple = (xs: number[]): number[] => [0x28, ...xs.flatMap(int), 0x74];

/** `{name: _rebuild_tensor_v2(('storage', <cls>, key, 'cpu', numel), offset, shape, stride, False, OrderedDict())}` */
export function statePickle(tensors: Array<{ name: string; cls?: string; key: string; numel: number; offset?: number; shape: number[]; stride: number[] }>): Uint8Array {
  const out: number[] = [0x80, 2, ...latin1(global('collections', 'OrderedDict')), 0x29, 0x52, 0x28];
  for (const t of tensors) {
    out.push(...binunicode(t.name), ...latin1(global('torch._utils', '_rebuild_tensor_v2')), 0x28);
    out.push(0x28, ...binunicode('storage'), ...latin1(global('torch', t.cls ?? 'FloatStorage')), ...binunicode(t.key), ...binunicode('cpu'), ...int(t.numel), 0x74, 0x51);
    out.push(...int(t.offset ?? 0), ...tuple(t.shape), ...tuple(t.stride), 0x89, ...latin1(global('collections', 'OrderedDict')), 0x29, 0x52, 0x74, 0x52);
  }
  out.push(0x75, 0x2e);
  return Uint8Array.from(out);
}
