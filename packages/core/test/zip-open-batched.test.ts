import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { BytesSource, MemorySink, ZipWriter, isTensorportError, openZip, type ByteSource, type ZipArchive } from '../src/index.ts';
import { parseCentralDirectory, type CentralEntry } from '../src/zip/central-directory.ts';
import { readEndRecord } from '../src/zip/end-record.ts';
import { HeaderWindow, MAX_GAP, MAX_WINDOW } from '../src/zip/header-window.ts';
import { checkLocalHeader } from '../src/zip/local-header.ts';

/** A source that records every read it serves. */
class CountingSource extends BytesSource {
  readonly reads: Array<[number, number]> = [];
  override read(offset: number, length: number): Promise<Uint8Array> {
    this.reads.push([offset, length]);
    return super.read(offset, length);
  }
}

async function* one(b: Uint8Array): AsyncGenerator<Uint8Array> {
  yield b;
}

async function archive(sizes: readonly number[], dataDescriptors = false): Promise<Uint8Array> {
  const sink = new MemorySink();
  const zip = new ZipWriter(sink, { dataDescriptors });
  for (const [i, n] of sizes.entries()) await zip.add(`archive/data/${i}`, one(new Uint8Array(n).fill(i & 0xff)));
  await zip.finish();
  await sink.commit();
  return sink.bytes();
}

async function allBytesMatch(z: ZipArchive): Promise<void> {
  // one expect per archive, not per member: thousands of expects dominated this file's time
  const bad: string[] = [];
  for (const e of z.entries) {
    let n = 0;
    const fill = Number(e.name.slice(e.name.lastIndexOf('/') + 1)) & 0xff;
    for await (const c of z.stream(e)) {
      for (let i = 0; i < c.byteLength; i++) if (c[i] !== fill) bad.push(e.name);
      n += c.byteLength;
    }
    if (n !== e.uncompressedSize) bad.push(`${e.name}: ${n} bytes`);
  }
  expect(bad).toEqual([]);
}

// The verdict property below runs on an archive past one window; the bench
// (bench/zip-open-verdicts.mjs) runs it at the old size (12,000 members, 120 runs) through these.
const VERDICT_MEMBERS = Number(process.env.TENSORPORT_ZIP_VERDICT_MEMBERS ?? 500);
const VERDICT_RUNS = Number(process.env.TENSORPORT_ZIP_VERDICT_RUNS ?? 80);

/**
 * The open-time checks as they were before windows: every local header read on its own, in
 * directory order, then the overlap check. The batched reader must reach the same verdict.
 */
async function unbatchedVerdict(bytes: Uint8Array): Promise<string> {
  try {
    const src = new BytesSource(bytes);
    const end = await readEndRecord(src);
    const central = parseCentralDirectory(await src.read(end.cdOffset, end.cdSize), end.cdOffset, end.entryCount);
    if (new Set(central.map((e) => e.name)).size !== central.length) return 'ZipDuplicateName';
    const spans: Array<[number, number]> = [];
    for (const e of central) {
      const x = await checkLocalHeader((o, l) => src.read(o, l), e, end.cdOffset);
      spans.push([e.localHeaderOffset, x.end]);
    }
    spans.sort((a, b) => a[0] - b[0]);
    for (let i = 1; i < spans.length; i++) if (spans[i]![0] < spans[i - 1]![1]) return 'ZipOverlap';
    return 'ok';
  } catch (e) {
    return isTensorportError(e) ? e.code : `crash: ${String(e)}`;
  }
}

async function batchedVerdict(bytes: Uint8Array): Promise<string> {
  try {
    await openZip(new BytesSource(bytes));
    return 'ok';
  } catch (e) {
    return isTensorportError(e) ? e.code : `crash: ${String(e)}`;
  }
}

describe('HeaderWindow', () => {
  const bytes = new Uint8Array(3 * MAX_WINDOW);
  for (let i = 0; i < bytes.byteLength; i++) bytes[i] = (i * 7919) >>> 5;
  const same = (a: Uint8Array, b: Uint8Array) => Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(b);

  it('serves exactly the requested bytes, never reading more than a window or past the limit', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ at: fc.nat(bytes.byteLength - 1), estimate: fc.integer({ min: 30, max: 200_000 }) }), { maxLength: 60 }),
        fc.array(fc.record({ at: fc.nat(bytes.byteLength - 1), len: fc.nat(131_100) }), { minLength: 1, maxLength: 60 }),
        fc.integer({ min: 1, max: bytes.byteLength }),
        async (plan, requests, limit) => {
          const src = new CountingSource(bytes);
          plan.sort((a, b) => a.at - b.at);
          const w = new HeaderWindow(src, { at: Float64Array.from(plan, (p) => p.at), estimate: Float64Array.from(plan, (p) => p.estimate) }, limit);
          for (const r of requests) {
            const len = Math.min(r.len, limit - Math.min(r.at, limit));
            const at = Math.min(r.at, limit - len);
            expect(same(await w.read(at, len), bytes.subarray(at, at + len)), `read ${len} at ${at}`).toBe(true);
            const [o, l] = src.reads[src.reads.length - 1] ?? [0, 0];
            expect(l).toBeLessThanOrEqual(Math.max(MAX_WINDOW, len));
            expect(o + l).toBeLessThanOrEqual(limit);
          }
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe('ZIP open reads local headers in few, bounded reads', () => {
  it('opens 5,000 small members past one window (patched or with descriptors) in a handful of reads of at most a window', async () => {
    for (const descriptors of [false, true]) {
      const bytes = await archive(Array.from({ length: 5_000 }, (_, i) => 2 * (i % 97) + 60), descriptors);
      const src = new CountingSource(bytes);
      const z = await openZip(src);
      expect(z.entries.length).toBe(5_000);
      expect(z.end.cdOffset).toBeGreaterThan(MAX_WINDOW);
      const cdOffset = z.end.cdOffset;
      // tail, directory, then the member region in windows: about cdOffset / MAX_WINDOW of them,
      // plus the end record's small checks (ZIP64 locator, the bytes just before the directory)
      const small = src.reads.filter(([, l]) => l <= 64).length;
      expect(small, `descriptors ${descriptors}`).toBeLessThanOrEqual(3);
      expect(src.reads.length - small, `descriptors ${descriptors}`).toBeLessThanOrEqual(2 + Math.ceil(cdOffset / (MAX_WINDOW - 1024)));
      expect(Math.max(...src.reads.filter(([o, l]) => o + l <= cdOffset).map(([, l]) => l))).toBeLessThanOrEqual(MAX_WINDOW);
      await allBytesMatch(z);
    }
  });

  it('does not read through members larger than MAX_GAP to reach the next header', async () => {
    const sizes = Array.from({ length: 20 }, (_, i) => (i % 2 ? 5 : 4 * MAX_GAP));
    const bytes = await archive(sizes, true);
    const src = new CountingSource(bytes);
    const z = await openZip(src);
    const cd = z.end.cdOffset;
    // reads ending before the directory (the tail read of the end record starts before it too)
    const memberBytes = src.reads.filter(([o, l]) => o + l <= cd).reduce((n, [, l]) => n + l, 0);
    expect(bytes.byteLength).toBeGreaterThan(40 * MAX_GAP);
    // 10 big members: each read covers a header (and the small member after it), never the big data
    expect(memberBytes).toBeLessThan(20 * 1024);
    await allBytesMatch(z);
  });

  it('keeps directory order when the directory is not in file order, and still checks each header', async () => {
    const bytes = await archive([10, 20, 30, 40, 50], true);
    const reversed = reverseDirectory(bytes);
    const z = await openZip(new BytesSource(reversed));
    expect(z.entries.map((e) => e.name)).toEqual([4, 3, 2, 1, 0].map((i) => `archive/data/${i}`));
    expect(z.get('archive/data/2')!.index).toBe(2);
    await allBytesMatch(z);
    // entry 0 (archive/data/4) pointed at member 3's local header: a name that disagrees
    const bad = reversed.slice();
    const cd0 = z.entries[0]!.centralOffset;
    const view = new DataView(bad.buffer);
    view.setUint32(cd0 + 42, z.entries[1]!.localHeaderOffset, true);
    expect(await batchedVerdict(bad)).toBe('ZipLocalHeaderMismatch');
  });
});

/** Rewrites the central directory with its entries in reverse order (indices then follow the new order). */
function reverseDirectory(bytes: Uint8Array): Uint8Array {
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const eocd = bytes.byteLength - 22;
  const count = v.getUint16(eocd + 10, true);
  const cdOffset = v.getUint32(eocd + 16, true);
  const cdSize = v.getUint32(eocd + 12, true);
  const parts: Uint8Array[] = [];
  for (let p = cdOffset; p < cdOffset + cdSize; ) {
    const len = 46 + v.getUint16(p + 28, true) + v.getUint16(p + 30, true) + v.getUint16(p + 32, true);
    parts.push(bytes.slice(p, p + len));
    p += len;
  }
  expect(parts.length).toBe(count);
  const out = bytes.slice();
  let p = cdOffset;
  for (const part of parts.reverse()) {
    out.set(part, p);
    p += part.byteLength;
  }
  return out;
}

describe('batched open gives the same verdict as checking each header on its own', () => {
  let base: Uint8Array;
  let entries: readonly CentralEntry[];
  let cdOffset: number;
  beforeAll(async () => {
    // past one window, with descriptors: several windows and descriptor reads across their edges
    // (members of ~2.5 KB: few of them fill the windows, and each run re-opens the whole archive)
    const pad = VERDICT_MEMBERS >= 12_000 ? 0 : 2500;
    base = await archive(Array.from({ length: VERDICT_MEMBERS }, (_, i) => ((i * 37) % 61) + pad), true);
    const src = new BytesSource(base);
    const end = await readEndRecord(src);
    cdOffset = end.cdOffset;
    entries = parseCentralDirectory(await src.read(end.cdOffset, end.cdSize), end.cdOffset, end.entryCount);
    expect(cdOffset).toBeGreaterThan(MAX_WINDOW);
  });

  it('on archives with one byte changed in a local header, a descriptor or a directory offset', async () => {
    const seen = new Set<string>();
    await fc.assert(
      fc.asyncProperty(
        fc.nat(VERDICT_MEMBERS - 1),
        fc.constantFrom('header', 'descriptor', 'offset'),
        fc.nat(60),
        fc.integer({ min: 0, max: 255 }),
        async (i, where, k, value) => {
          const e = entries[i]!;
          const bytes = base.slice();
          const next = entries[i + 1]?.localHeaderOffset ?? cdOffset;
          if (where === 'header') bytes[e.localHeaderOffset + (k % 50)] = value;
          else if (where === 'descriptor') bytes[next - 24 + (k % 24)] = value;
          else bytes[e.centralOffset + 42 + (k % 4)] = value;
          const want = await unbatchedVerdict(bytes);
          seen.add(want);
          expect(await batchedVerdict(bytes)).toBe(want);
        },
      ),
      { numRuns: VERDICT_RUNS },
    );
    // the mutations reach the refusals that matter, not only harmless bytes
    expect(seen.size).toBeGreaterThan(2);
  });
});
