import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { BytesSource, TensorportError } from '@tensorport/core';
import { nodeZlibCodec } from '@tensorport/core/node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTorchCheckpoint, scanCheckpoint } from '../src/index.ts';
import { digest } from './helpers/digest.ts';
import { binunicode, global, pk, PROTO2, STOP } from './helpers/pickle-bytes.ts';
import { PICKLESCAN, readBytes } from './helpers/paths.ts';
import { torchZip } from './helpers/torch-zip-bytes.ts';

const DIR = fileURLToPath(new URL('../../../fixtures/torch-objects/', import.meta.url));
interface Manifest { marker: string; port: number; unsafeGlobals: string[]; tensors: Array<{ name: string; sha256: string }> }
const m = JSON.parse(readFileSync(`${DIR}hostile-payloads.pt.manifest.json`, 'utf8')) as Manifest;

describe('extraction mode on hostile pickles: tensors out, nothing run', () => {
  // The fixture's payloads are posix.system('touch <marker>') and socket.create_connection to this port.
  let connections = 0;
  const server = createServer((s) => { connections++; s.destroy(); });
  beforeAll(async () => {
    rmSync(m.marker, { force: true });
    await new Promise<void>((done, fail) => server.once('error', fail).listen(m.port, '127.0.0.1', done));
    expect((server.address() as AddressInfo).port).toBe(m.port);
  });
  afterAll(() => new Promise<void>((done) => server.close(() => done())));

  it('hostile-payloads.pt: the state dict is extracted, the payloads are inert records, and no file or socket appeared', async () => {
    const c = await openTorchCheckpoint(new BytesSource(readBytes(`${DIR}hostile-payloads.pt`), 'hostile-payloads.pt'), { allowObjects: true, select: 'state_dict', keepAliases: true });
    expect(c.tensors.map((t) => t.name)).toEqual(m.tensors.map((t) => t.name));
    for (const [i, t] of c.tensors.entries()) expect(await digest(t, 5)).toBe(m.tensors[i]!.sha256);
    const reported = c.objects!.globals.map((g) => g.name);
    expect(reported).toEqual(expect.arrayContaining(m.unsafeGlobals));
    expect(c.objects!.globals.find((g) => g.name === 'posix.system')?.firstPath).toBe('touch');
    // scan is unchanged: strict, unsafe, naming both payloads
    const s = await scanCheckpoint(readBytes(`${DIR}hostile-payloads.pt`));
    expect(s.verdict).toBe('unsafe');
    expect(s.globals).toEqual(expect.arrayContaining(['posix.system', 'socket.create_connection']));
    await new Promise((r) => setTimeout(r, 50));
    expect(existsSync(m.marker)).toBe(false);
    expect(connections).toBe(0);
  });

  it('a DAG of shared modules (2 children, both one module, 40 levels: 2^40 state_dict names) ends at the visit limit, quickly', async () => {
    // level 0: NEWOBJ of a module class + BUILD {'_parameters': {}, '_modules': {}}; level i: both children are level i-1 (BINGET)
    const parts: Array<number | string | number[]> = [...PROTO2];
    const module = (children: number[]) => [
      ...Array.from(global('bomb', 'M'), (c) => c.charCodeAt(0)), 0x29, 0x81, 0x7d, 0x28, ...binunicode('_parameters'), 0x7d, ...binunicode('_modules'), 0x7d,
      ...(children.length ? [0x28, ...children.flatMap((c, i) => [...binunicode(`m${i}`), 0x68, c]), 0x75] : []), 0x75, 0x62,
    ];
    for (let level = 0; level < 40; level++) parts.push(...module(level === 0 ? [] : [level - 1, level - 1]), 0x71, level, ...(level < 39 ? [0x30] : []));
    parts.push(STOP);
    const zip = await torchZip({ 't/data.pkl': pk(...parts), 't/version': '3\n' });
    const t0 = performance.now();
    await expect(openTorchCheckpoint(zip, { allowObjects: true })).rejects.toMatchObject({ code: 'PickleLimitExceeded' });
    expect(performance.now() - t0).toBeLessThan(8000);
  });

  it('picklescan corpus: every file either extracts or ends in a TensorportError, never anything else', async () => {
    const files = ['data', 'data2'].flatMap((d) => readdirSync(`${PICKLESCAN}${d}`).map((f) => `${d}/${f}`));
    let opened = 0;
    let refused = 0;
    for (const f of files) {
      const bytes = readBytes(`${PICKLESCAN}${f}`);
      try {
        const c = await openTorchCheckpoint(new BytesSource(bytes, f), { allowObjects: true, zipCodec: nodeZlibCodec });
        for (const t of c.tensors) await digest(t);
        opened++;
      } catch (e) {
        expect(e, f).toBeInstanceOf(TensorportError);
        refused++;
      }
    }
    expect(opened + refused).toBe(files.length);
    expect(opened).toBeGreaterThan(0);
    expect(connections).toBe(0);
  });
});
