import { startsWithMagic, type KindIdentifier, type KindInfo } from '@tensorport/core';
import { GGUF_MAGIC } from './constants.ts';

export const GGUF_KINDS = {
  gguf: { what: 'a GGUF file (llama.cpp)', can: 'convert, inspect, validate, diff', extensions: ['.gguf'] },
} as const satisfies Record<string, KindInfo>;

/** GGUF's part of `identify`: the magic, then the header's u32 version, u64 tensor_count and u64 metadata_kv_count (little-endian). */
export const ggufIdentifier: KindIdentifier = {
  name: 'gguf',
  kinds: GGUF_KINDS,
  async identify(probe) {
    if (!startsWithMagic(probe.head, GGUF_MAGIC)) return null;
    const head = probe.head;
    if (head.length >= 24) {
      const v = new DataView(head.buffer, head.byteOffset, head.byteLength);
      probe.details.version = v.getUint32(4, true);
      probe.details.tensorCount = v.getBigUint64(8, true).toString();
      probe.details.kvCount = v.getBigUint64(16, true).toString();
    }
    return { kind: 'gguf' };
  },
};
