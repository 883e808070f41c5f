import { f16BitsToF32 } from '@tensorport/core';

let table: Float32Array | null = null;

/** All 65536 f16 values as f32 (exact; core's conversion), built on first use. */
export function halfTable(): Float32Array {
  if (!table) {
    const bits = new Uint32Array(65536);
    for (let h = 0; h < 65536; h++) bits[h] = f16BitsToF32(h);
    table = new Float32Array(bits.buffer);
  }
  return table;
}

/** The f16 at b[o], b[o+1] (little-endian) as a number. */
export const half = (t: Float32Array, b: Uint8Array, o: number): number => t[b[o]! | (b[o + 1]! << 8)]!;

export const u16at = (b: Uint8Array, o: number): number => b[o]! | (b[o + 1]! << 8);
export const u32at = (b: Uint8Array, o: number): number => (b[o]! | (b[o + 1]! << 8) | (b[o + 2]! << 16) | (b[o + 3]! << 24)) >>> 0;
