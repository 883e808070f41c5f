import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, open, readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openCheckpointPath } from '@tensorport/core/node';
import { afterAll } from 'vitest';

const here = dirname(fileURLToPath(import.meta.url));
export const REPO = resolve(here, '../../..');
export const FIXTURES = join(REPO, 'fixtures/safetensors');
/** The bin (it runs the built CLI: turbo's `test` task depends on `build`). */
export const CLI = resolve(here, '../bin/tensorport.cjs');

export interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `node bin/tensorport.cjs ...args` with stdout/stderr piped (so never a TTY). */
export function tensorport(...args: string[]): Promise<Run> {
  return new Promise((done) => {
    execFile(process.execPath, [CLI, ...args], { cwd: REPO, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
      done({ code, stdout, stderr });
    });
  });
}

/**
 * A safetensors file of one F32 tensor of `bytes` data bytes, all zeros and sparse (a hole: instant
 * to write and to read), except the data byte at `flip` when given (set to 1).
 */
export async function sparseSafetensors(path: string, bytes: number, flip?: number): Promise<void> {
  let header = JSON.stringify({ w: { dtype: 'F32', shape: [bytes / 4], data_offsets: [0, bytes] } });
  header += ' '.repeat((8 - (header.length % 8)) % 8);
  const head = Buffer.alloc(8 + header.length);
  head.writeBigUInt64LE(BigInt(header.length), 0);
  head.write(header, 8, 'latin1');
  const f = await open(path, 'w');
  try {
    await f.write(head, 0, head.length, 0);
    await f.truncate(head.length + bytes);
    if (flip !== undefined) await f.write(Buffer.from([0x01]), 0, 1, head.length + flip);
  } finally {
    await f.close();
  }
}

export interface Manifest {
  file: string;
  fileSize: number;
  fileSha256: string;
  headerLength: number;
  metadata: Record<string, string> | null;
  tensors: Array<{ name: string; dtype: string; shape: number[]; dataOffsets: [number, number]; byteLength: number; sha256: string }>;
}

/** The manifest the Python generator wrote next to a fixture (facts from the reference writer). */
export async function manifest(fixture: string): Promise<Manifest> {
  return JSON.parse(await readFile(join(FIXTURES, `${fixture}.manifest.json`), 'utf8')) as Manifest;
}

const made: string[] = [];
afterAll(async () => {
  await Promise.all(made.map((d) => rm(d, { recursive: true, force: true })));
});

/** A fresh temporary directory, removed after the file's tests. */
export async function tempDir(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), 'tensorport-cli-'));
  made.push(d);
  return d;
}

export function sha256(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

export async function fileSha256(path: string): Promise<string> {
  return sha256(await readFile(path));
}

/** name → {dtype, shape, sha256 of the bytes}, read through core (file, directory or index). */
export async function tensorDigests(path: string): Promise<Map<string, { dtype: string; shape: number[]; sha256: string; bytes: Uint8Array }>> {
  const cp = await openCheckpointPath(path);
  try {
    const out = new Map<string, { dtype: string; shape: number[]; sha256: string; bytes: Uint8Array }>();
    for (const t of cp.tensors) {
      const parts: Uint8Array[] = [];
      for await (const c of t.chunks()) parts.push(c);
      const bytes = new Uint8Array(Buffer.concat(parts));
      out.set(t.name, { dtype: t.dtype, shape: [...t.shape], sha256: sha256(bytes), bytes });
    }
    return out;
  } finally {
    await cp.close();
  }
}

/** Entries of a directory, sorted; leftover temp files would show up here. */
export async function listDir(dir: string): Promise<string[]> {
  return (await readdir(dir)).sort();
}

/** A safetensors file built by hand from the format description (data in the given order). */
export function safetensorsFile(tensors: Record<string, { dtype: string; shape: number[]; data: Uint8Array }>): Uint8Array {
  const header: Record<string, unknown> = {};
  let offset = 0;
  for (const [name, t] of Object.entries(tensors)) {
    header[name] = { dtype: t.dtype, shape: t.shape, data_offsets: [offset, offset + t.data.byteLength] };
    offset += t.data.byteLength;
  }
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - (json.length % 8)) % 8);
  const out = Buffer.alloc(8 + json.length + offset);
  out.writeBigUInt64LE(BigInt(json.length), 0);
  out.write(json, 8, 'latin1');
  let pos = 8 + json.length;
  for (const t of Object.values(tensors)) {
    out.set(t.data, pos);
    pos += t.data.byteLength;
  }
  return out;
}
