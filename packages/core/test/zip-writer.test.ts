import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BytesSource, EXTRA_TORCH_PADDING, MemorySink, ZipWriter, crc32, isPatchableSink, openZip, type PatchableSink } from '../src/index.ts';
import { nodeZlibCodec } from '../src/node/zlib.ts';

class PatchableMemorySink extends MemorySink implements PatchableSink {
  private patches: Array<[number, Uint8Array]> = [];
  async writeAt(offset: number, bytes: Uint8Array): Promise<void> {
    this.patches.push([offset, bytes.slice()]);
  }
  override async commit(): Promise<void> {
    await super.commit();
    for (const [o, b] of this.patches) this.bytes().set(b, o);
  }
}

async function* pieces(data: Uint8Array, cuts: number[]): AsyncGenerator<Uint8Array> {
  let at = 0;
  for (const c of [...cuts.filter((x) => x < data.byteLength)].sort((a, b) => a - b)) {
    yield data.subarray(at, Math.max(at, c));
    at = Math.max(at, c);
  }
  yield data.subarray(at);
}

describe('ZipWriter', () => {
  it('matches the reference CRC-32 and zlib.crc32 on known vectors', () => {
    expect(crc32(new TextEncoder().encode('123456789'))).toBe(0xcbf43926);
    expect(crc32(new Uint8Array(0))).toBe(0);
    const data = Uint8Array.from({ length: 100_003 }, (_, i) => (i * 131 + 7) & 0xff);
    expect(crc32(data.subarray(50_000), crc32(data.subarray(0, 50_000)))).toBe(nodeZlibCodec.crc32!(data, 0));
  });

  it('round-trips random members through the reader (stored/deflated, patched/descriptors)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ data: fc.uint8Array({ maxLength: 3000 }), cuts: fc.array(fc.nat(3000), { maxLength: 4 }), deflate: fc.boolean() }), { maxLength: 5 }),
        fc.boolean(),
        async (members, patch) => {
          const sink = patch ? new PatchableMemorySink() : new MemorySink();
          expect(isPatchableSink(sink)).toBe(patch);
          const zip = new ZipWriter(sink, { codec: nodeZlibCodec });
          for (const [i, m] of members.entries()) {
            const r = await zip.add(`m${i}/é${i}.bin`, pieces(m.data, m.cuts), { deflate: m.deflate });
            expect([r.size, r.crc32]).toEqual([m.data.byteLength, crc32(m.data)]);
          }
          await zip.finish();
          await sink.commit();
          const z = await openZip(new BytesSource(sink.bytes()), { codec: nodeZlibCodec });
          expect(z.entries.length).toBe(members.length);
          for (const [i, m] of members.entries()) {
            const e = z.entries[i]!;
            expect(e.name).toBe(`m${i}/é${i}.bin`);
            expect(e.flags & 8).toBe(patch ? 0 : 8);
            expect(e.stored).toBe(!m.deflate);
            const parts: number[] = [];
            for await (const c of z.stream(e)) parts.push(...c);
            expect(Uint8Array.from(parts)).toEqual(m.data);
          }
        },
      ),
      { numRuns: 150 },
    );
  });

  it('refuses duplicate member names and names over 65535 bytes', async () => {
    const zip = new ZipWriter(new MemorySink());
    await zip.add('a', pieces(new Uint8Array(1), []));
    await expect(zip.add('a', pieces(new Uint8Array(1), []))).rejects.toMatchObject({ code: 'ZipDuplicateName' });
    await expect(zip.add('x'.repeat(70_000), pieces(new Uint8Array(1), []))).rejects.toMatchObject({ code: 'ZipInvalidName' });
  });

  it('adds a ZIP64 end record past 65535 entries', async () => {
    const sink = new MemorySink();
    const zip = new ZipWriter(sink);
    for (let i = 0; i < 65_540; i++) await zip.add(String(i), pieces(new Uint8Array(0), []));
    await zip.finish();
    await sink.commit();
    const z = await openZip(new BytesSource(sink.bytes()));
    expect(z.end.zip64).toBe(true);
    expect(z.entries.length).toBe(65_540);
    expect(z.get('65539')).toBeDefined();
  });

  it('aligns member data with a torch "FB" padding extra in the local header only', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            data: fc.uint8Array({ maxLength: 300 }),
            name: fc.string({ minLength: 1, maxLength: 40 }),
            align: fc.option(fc.oneof(fc.constantFrom(1, 2, 64, 4096, 32768), fc.integer({ min: 1, max: 32768 }))),
            deflate: fc.boolean(),
          }),
          { maxLength: 6 },
        ),
        fc.boolean(),
        async (members, patch) => {
          const sink = patch ? new PatchableMemorySink() : new MemorySink();
          const zip = new ZipWriter(sink, { codec: nodeZlibCodec });
          const names = members.map((m, i) => `${i}/${m.name}`);
          for (const [i, m] of members.entries()) {
            await zip.add(names[i]!, pieces(m.data, []), { deflate: m.deflate, ...(m.align === null ? {} : { align: m.align }) });
          }
          await zip.finish();
          await sink.commit();
          const bytes = sink.bytes();
          const v = new DataView(bytes.buffer, bytes.byteOffset);
          const z = await openZip(new BytesSource(bytes), { codec: nodeZlibCodec });
          for (const [i, m] of members.entries()) {
            const e = z.get(names[i]!)!;
            const lho = e.localHeaderOffset;
            const nameLen = v.getUint16(lho + 26, true);
            const extraLen = v.getUint16(lho + 28, true);
            // ZIP64 extra first, then FB (4 + padding bytes) exactly when aligning
            expect(v.getUint16(lho + 30 + nameLen, true)).toBe(0x0001);
            if (m.align === null) {
              expect(extraLen).toBe(20);
            } else {
              expect(e.dataOffset % m.align, `${e.name} align ${m.align}`).toBe(0);
              expect(v.getUint16(lho + 30 + nameLen + 20, true)).toBe(EXTRA_TORCH_PADDING);
              const pad = v.getUint16(lho + 30 + nameLen + 22, true);
              expect(pad).toBeLessThan(m.align);
              expect(extraLen).toBe(24 + pad);
            }
            // the directory entry carries no padding
            expect(v.getUint16(e.centralOffset + 30, true)).toBe(0);
            const parts: number[] = [];
            for await (const c of z.stream(e)) parts.push(...c);
            expect(Uint8Array.from(parts)).toEqual(m.data);
          }
        },
      ),
      { numRuns: 150 },
    );
  });

  it('pads 64-byte alignment the way torch lays out data.pkl: header at 0, data at 64', async () => {
    const sink = new MemorySink();
    const zip = new ZipWriter(sink);
    await zip.add('archive/data.pkl', pieces(new Uint8Array(10), []), { align: 64 });
    await zip.finish();
    await sink.commit();
    const b = sink.bytes();
    expect([...b.subarray(0, 4)]).toEqual([0x50, 0x4b, 3, 4]);
    // 30 + 16 name + 20 ZIP64 + 4 FB header = 70: 58 filler bytes bring the data to 128
    const z = await openZip(new BytesSource(b));
    expect(z.entries[0]!.dataOffset).toBe(128);
    expect(new TextDecoder().decode(b.subarray(66, 70))).toBe('FB:\0');
    expect(b.subarray(70, 128).every((x) => x === 0x5a)).toBe(true);
  });

  it('refuses an align that is not an integer from 1 to 32768', async () => {
    const zip = new ZipWriter(new MemorySink());
    for (const align of [0, -64, 1.5, 32769, Number.NaN]) {
      await expect(zip.add(`m${align}`, pieces(new Uint8Array(1), []), { align })).rejects.toThrow(RangeError);
    }
  });
});
