import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { BytesSource } from '@tensorport/core';
import type { GgufArray, GgufValue } from '../src/index.ts';

export const FIX = new URL('../../../fixtures/gguf/', import.meta.url);
export const fixture = async (rel: string): Promise<Uint8Array> => new Uint8Array(await readFile(new URL(rel, FIX)));
export const fixtureSource = async (rel: string): Promise<BytesSource> => new BytesSource(await fixture(rel), rel);

export interface ManifestKv {
  key: string;
  type: string;
  elementType?: string | null;
  value: unknown;
}
export interface ManifestTensor {
  name: string;
  type: string;
  dims: number[];
  dataOffset: number;
  nBytes: number;
  sha256: string;
}
export interface Manifest {
  kv: ManifestKv[];
  tensors: ManifestTensor[];
  sha256: string;
}
export const manifest = async (rel: string): Promise<Manifest> => JSON.parse(new TextDecoder().decode(await fixture(rel + '.json'))) as Manifest;

export { bytesOf } from '../../npz/test/helpers.ts';

export const sha256 = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');

function scalar(v: unknown): unknown {
  if (typeof v === 'bigint') return v.toString();
  if (typeof v === 'number' && !Number.isFinite(v)) return Number.isNaN(v) ? 'nan' : v > 0 ? 'inf' : '-inf';
  return v;
}

function flatten(a: GgufArray): unknown[] {
  const out: unknown[] = [];
  for (const v of Array.from(a.values as ArrayLike<unknown>)) {
    if (a.elementType === 'ARRAY') out.push(...flatten(v as GgufArray));
    else out.push(scalar(v));
  }
  return out;
}

/** A value as GGUFReader's `contents()` gives it (nested arrays flattened), in the manifest's JSON form. */
export function asManifestValue(v: GgufValue): unknown {
  return v.type === 'ARRAY' ? flatten(v.value) : scalar(v.value);
}
