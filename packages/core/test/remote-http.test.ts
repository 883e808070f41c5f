import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpSource, openSafetensors, openZip, readChunks, type HttpSourceOptions } from '@tensorport/core';
import { FileSink, nodeFetch } from '@tensorport/core/node';
import { startFaultProxy, type FaultProxy } from './helpers/fault-proxy.ts';
import { requireNginx, startRig, type Rig } from './helpers/nginx.ts';
import { codeOf } from './helpers/error-code.ts';

const FIX = join(import.meta.dirname, '..', '..', '..', 'fixtures');
const ST = join(FIX, 'safetensors/transformer_shard.safetensors');
const PT = join(FIX, 'torch/checkpoints/transformers.pt');
const NPZ = join(FIX, 'npz/npz/savez.npz');
// fast retries: the backoff schedule itself is not what these tests time
const FAST: HttpSourceOptions = { retryDelayMs: 5, maxRetryDelayMs: 20 };

const nginx = await requireNginx();

// The global fetch (the browser's path) and node:http (what the Node entry passes): the same answers.
const TRANSPORTS: Array<[string, HttpSourceOptions]> = [['the global fetch', {}], ['node:http', { fetch: nodeFetch }]];

describe.skipIf(!nginx).each(TRANSPORTS)('HttpSource against nginx, through %s', (_, transport) => {
  let rig: Rig;
  let proxy: FaultProxy;
  let tmp: string;
  let big: Uint8Array;

  beforeAll(async () => {
    tmp = mkdtempSync(join(tmpdir(), 'tp-remote-'));
    big = new Uint8Array(randomBytes(6 * 1024 * 1024 + 12345));
    writeFileSync(join(tmp, 'big.bin'), big);
    writeFileSync(join(tmp, 'empty.bin'), new Uint8Array(0));
    const changed = readFileSync(ST);
    changed[changed.length - 1] = changed[changed.length - 1]! ^ 0xff;
    writeFileSync(join(tmp, 'changed.safetensors'), changed);
    rig = await startRig(nginx!, {
      'model.safetensors': ST,
      'model.safetensors.v2': join(tmp, 'changed.safetensors'),
      'ckpt.pt': PT,
      'arrays.npz': NPZ,
      'big.bin': join(tmp, 'big.bin'),
      'big.bin.v2': join(tmp, 'big.bin'),
      'empty.bin': join(tmp, 'empty.bin'),
      'mutable.bin': join(tmp, 'big.bin'),
    }, {});
    proxy = await startFaultProxy(rig.cdn);
    // nginx's ETag is mtime-size: the swapped-in file must not share the original's mtime
    utimesSync(rig.served('model.safetensors.v2'), new Date(), new Date(Date.now() + 10_000));
  });
  afterAll(async () => {
    await proxy?.stop();
    await rig?.stop();
    rmSync(tmp, { recursive: true, force: true });
  });

  it('reads a safetensors header in one request and tensor bytes equal to the file', async () => {
    const src = await HttpSource.open(`${rig.cdn}/files/model.safetensors`, 'model.safetensors', transport);
    expect(src.size).toBe(readFileSync(ST).byteLength);
    expect(src.etag).toMatch(/^"/);
    const file = await openSafetensors(src);
    expect(src.stats().requests).toBe(1); // the 64 KiB probe holds this header
    const local = readFileSync(ST);
    const t = file.tensors[0]!;
    const length = t.byteLength;
    const bytes = await src.read(t.range!.offset, length);
    expect(length).toBeGreaterThan(0);
    expect(Buffer.from(bytes).equals(local.subarray(t.range!.offset, t.range!.offset + length))).toBe(true);
  });

  it('parses a torch ZIP and an npz directory through the page cache in few requests', async () => {
    for (const [path, local] of [['ckpt.pt', PT], ['arrays.npz', NPZ]] as const) {
      const src = await HttpSource.open(`${rig.cdn}/files/${path}`, path, { ...transport, probeBytes: 4096, pageSize: 4096 });
      const zip = await openZip(src);
      expect(zip.entries.length).toBeGreaterThan(1);
      // many small reads (end records, directory, local headers) but pages are fetched once
      for (const e of zip.entries) await src.read(e.localHeaderOffset, 30);
      const size = readFileSync(local).byteLength;
      expect(src.stats().requests).toBeLessThanOrEqual(Math.ceil(size / 4096));
      expect(src.stats().bytesTransferred).toBeLessThanOrEqual(size);
    }
  });

  it('streams large sequential reads with read-ahead, bytes exact, bounded requests', async () => {
    const src = await HttpSource.open(`${rig.cdn}/files/big.bin`, 'big.bin', { ...transport, concurrency: 4 });
    const parts: Uint8Array[] = [];
    for await (const c of readChunks(src, 100, big.byteLength - 100, 1024 * 1024)) parts.push(c.slice());
    expect(Buffer.concat(parts).equals(Buffer.from(big.subarray(100)))).toBe(true);
    // one request per 1 MiB window (+ the probe and the first direct read), never more than the file
    expect(src.stats().requests).toBeLessThanOrEqual(Math.ceil(big.byteLength / (1024 * 1024)) + 2);
    // the probe and the last (short, page-cached) chunk overlap other reads by at most a page each
    expect(src.stats().bytesTransferred).toBeLessThanOrEqual(big.byteLength + 2 * 64 * 1024);
  });

  it('reads ahead no further than the end of the stream (until): a range that ends early downloads only it', async () => {
    const src = await HttpSource.open(`${rig.cdn}/files/big.bin`, 'big.bin', { ...transport, concurrency: 4 });
    const from = 1024 * 1024;
    const length = 2 * 1024 * 1024;
    const parts: Uint8Array[] = [];
    for await (const c of readChunks(src, from, length, 512 * 1024)) parts.push(c.slice());
    expect(Buffer.concat(parts).equals(Buffer.from(big.subarray(from, from + length)))).toBe(true);
    // the probe, the first (direct) read and three read-ahead windows inside the range; without the
    // bound, three more windows past its end (requests are counted when sent, bytes as they arrive)
    expect(src.stats().requests).toBe(5);
    expect(src.stats().bytesTransferred).toBeLessThanOrEqual(length + 64 * 1024);
  });

  it('hands pooled range bodies to FileSink.writeOwned: the written file and a second pass equal the source', async () => {
    // Bodies of sequential large reads come from the read-buffer pool and go back to it once
    // written; a buffer handed out must not stay in the source's read-ahead to be served again.
    const out = join(tmp, 'pooled.bin');
    for (let pass = 0; pass < 2; pass++) {
      rmSync(out, { force: true });
      const src = await HttpSource.open(`${rig.cdn}/files/big.bin`, 'big.bin', { ...transport, concurrency: 3 });
      const sink = await FileSink.create(out, { fsync: false });
      for (let pos = 0; pos < src.size; pos += 1024 * 1024) await sink.writeOwned(await src.read(pos, Math.min(1024 * 1024, src.size - pos)));
      // the same range again after its buffer went back to the pool
      const again = await src.read(1024 * 1024, 1024 * 1024);
      expect(Buffer.from(again).equals(Buffer.from(big.subarray(1024 * 1024, 2 * 1024 * 1024)))).toBe(true);
      await sink.commit();
      expect(readFileSync(out).equals(Buffer.from(big))).toBe(true);
    }
  });

  it('reads a zero-length file', async () => {
    const src = await HttpSource.open(`${rig.cdn}/files/empty.bin`, 'empty.bin', transport);
    expect(src.size).toBe(0);
    expect((await src.read(0, 0)).byteLength).toBe(0);
  });

  it('accepts a small file from a server that ignores Range, refuses a larger one', async () => {
    const small = await HttpSource.open(`${rig.cdn}/norange/model.safetensors`, 'm', { ...transport, wholeFileMax: 1024 * 1024 });
    expect((await openSafetensors(small)).tensors.length).toBeGreaterThan(0);
    expect(await codeOf(HttpSource.open(`${rig.cdn}/norange/big.bin`, 'big', { ...transport, wholeFileMax: 1024 * 1024 }))).toBe('RemoteRangeUnsupported');
  });

  it('refuses a server that stops honouring Range mid-file', async () => {
    const src = await HttpSource.open(`${proxy.url}/lose-range/big.bin`, 'big', { ...transport, ...FAST, ifRange: false });
    expect(await codeOf(src.read(2 * 1024 * 1024, 1024))).toBe('RemoteRangeUnsupported');
  });

  it('detects a file that changes between reads: If-Range (200) and ETag/size checks (206)', async () => {
    for (const ifRange of [true, false]) {
      const src = await HttpSource.open(`${proxy.url}/swap/model.safetensors?ifRange=${ifRange}`, 'm', { ...transport, ...FAST, ifRange, probeBytes: 16 });
      expect(await codeOf(src.read(1000, 16))).toBe('RemoteFileChanged');
    }
    // rewritten in place under nginx (new mtime → new ETag)
    const src = await HttpSource.open(`${rig.cdn}/files/mutable.bin`, 'mutable', transport);
    const served = rig.served('mutable.bin');
    writeFileSync(served, randomBytes(big.byteLength));
    utimesSync(served, new Date(), new Date(Date.now() + 5000));
    expect(await codeOf(src.read(3 * 1024 * 1024, 1024))).toBe('RemoteFileChanged');
  });

  it('resumes a body reset mid-way and retries 503 and 429', async () => {
    const reset = await HttpSource.open(`${proxy.url}/reset/big.bin`, 'big', { ...transport, ...FAST, probeBytes: 1024 });
    const r = await reset.read(1024 * 1024, 2 * 1024 * 1024);
    expect(Buffer.from(r).equals(Buffer.from(big.subarray(1024 * 1024, 3 * 1024 * 1024)))).toBe(true);
    for (const fault of ['e503x2', 'r429']) {
      const s = await HttpSource.open(`${proxy.url}/${fault}/model.safetensors`, 'm', { ...transport, ...FAST });
      expect(s.size).toBe(readFileSync(ST).byteLength);
      expect(s.stats().requests).toBe(fault === 'e503x2' ? 3 : 2);
    }
  });

  it('gives up after the retry limit, and times out a stalled or slow server', async () => {
    expect(await codeOf(HttpSource.open(`${proxy.url}/e500/model.safetensors`, 'm', { ...transport, ...FAST, retries: 2 }))).toBe('RemoteUnavailable');
    expect(proxy.seen.filter((s) => s.path === '/e500/model.safetensors').length).toBe(3);
    expect(await codeOf(HttpSource.open(`${proxy.url}/hang/model.safetensors`, 'm', { ...transport, ...FAST, retries: 1, timeoutMs: 300 }))).toBe('RemoteTimeout');
    const slow = await HttpSource.open(`${rig.cdn}/slow/big.bin`, 'big', { ...transport, ...FAST, retries: 0, timeoutMs: 500, probeBytes: 1024 });
    expect(await codeOf(slow.read(0, 512 * 1024))).toBe('RemoteTimeout');
  });

  it('names a missing file RemoteNotFound', async () => {
    expect(await codeOf(HttpSource.open(`${rig.cdn}/files/nope.bin`, 'nope', { ...transport, ...FAST }))).toBe('RemoteNotFound');
  });

  it('is cancelled by its AbortSignal', async () => {
    const ctrl = new AbortController();
    const p = HttpSource.open(`${proxy.url}/hang/big.bin`, 'big', { ...transport, ...FAST, signal: ctrl.signal, timeoutMs: 10_000 });
    setTimeout(() => ctrl.abort(new Error('stop')), 50);
    await expect(p).rejects.toThrow('stop');
  });
});
