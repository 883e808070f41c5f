import { readFileSync } from 'node:fs';
import { TensorportError } from '@tensorport/core';
import { describe, expect, it } from 'vitest';
import { loadPickle, openTorchCheckpoint, scanCheckpoint, scanPickle, StorageTable } from '../src/index.ts';
import { findTensors } from '../src/torch/walk.ts';
import { FIXTURES, readBytes, SAMPLES } from './helpers/paths.ts';
import { refusal } from './helpers/refusal.ts';

interface Case { globals: string[]; loadError: string | null }
const manifest = JSON.parse(readFileSync(`${FIXTURES}malicious/manifest.json`, 'utf8')) as Record<string, Case>;

describe('hostile pickles (fixtures/torch/malicious)', () => {
  it('has the cases the issue lists', () => {
    expect(Object.keys(manifest).length).toBeGreaterThanOrEqual(30);
  });
  for (const [file, c] of Object.entries(manifest)) {
    const bytes = readBytes(`${FIXTURES}malicious/${file}`);
    const load = () => loadPickle(bytes, { persistentLoad: new StorageTable('zip').load, path: file });
    if (c.loadError === null) {
      it(`${file}: loads as inert shared data and walks in bounded time`, () => {
        const walk = findTensors(load().value);
        expect(walk.tensors).toEqual([]);
        expect(walk.dropped.length).toBeLessThan(100);
      });
    } else {
      // A loader stops at the first STOP, so only a scan sees a name hidden after it.
      const named = c.loadError !== 'PickleInvalid' ? c.globals[0] : undefined;
      it(`${file}: load refuses with ${c.loadError}${named ? `, naming ${named}` : ''}`, () => {
        const e = refusal(load);
        expect(e.code).toBe(c.loadError);
        if (named) expect(e.message).toContain(named);
        expect(e.path).toBe(file);
      });
    }
    it(`${file}: scan reports ${c.globals.join(', ') || 'no globals'}`, () => {
      const r = scanPickle(bytes, { path: file });
      for (const g of c.globals) expect(r.globals).toContain(g);
      expect(r.safe).toBe(c.loadError === null);
      for (const g of c.globals) expect(r.findings.some((f) => f.message.includes(g))).toBe(true);
    });
  }
  it('lists every disallowed global of a file, not only the first', () => {
    const r = scanPickle(readBytes(`${FIXTURES}malicious/builtins_getattr.pkl`));
    expect(r.globals).toEqual(['builtins.getattr', 'builtins.__import__']);
    expect(r.findings.map((f) => f.message)).toEqual([
      'global builtins.getattr is not allowed',
      'global builtins.__import__ is not allowed',
      'REDUCE calls builtins.__import__',
      'REDUCE calls builtins.getattr',
    ]);
  });
  it('finds the payload in the second pickle of a stream', () => {
    const r = scanPickle(readBytes(`${FIXTURES}malicious/hidden_after_stop.pkl`));
    expect(r.pickles).toBe(2);
    expect(r.globals).toContain('os.system');
  });
});

describe('hostile checkpoints (reference samples)', () => {
  const cases: Array<[string, string, string]> = [
    ['evil_reduce_print.pt', 'PickleDisallowedGlobal', 'builtins.print'],
    ['evil_os_system.pt', 'PickleDisallowedGlobal', 'posix.system'],
    ['evil_stack_global_eval.pt', 'PickleDisallowedGlobal', 'builtins.eval'],
    ['evil_inst_print.pt', 'PickleDisallowedGlobal', 'builtins.print'],
    ['evil_persid_module.pt', 'PickleInvalid', "'module'"],
    ['evil_deep_nesting.pt', 'PickleLimitExceeded', 'nesting depth'],
    ['evil_long4_truncated.pt', 'PickleLimitExceeded', 'LONG4'],
    ['evil_storage_oob.pt', 'TorchStorageMismatch', '1073741824 bytes'],
    ['full_model_unsafe.pt', 'PickleDisallowedGlobal', '__main__.Net'],
    ['tensor_subclass_unsafe.pt', 'PickleDisallowedGlobal', '__main__.Tagged'],
    ['evil_os_system.pkl', 'PickleDisallowedGlobal', 'posix.system'], // a bare pickle is read as a legacy stream's first pickle
  ];
  for (const [file, code, text] of cases) {
    it(`${file} is refused: ${code}`, async () => {
      const err = await openTorchCheckpoint(readBytes(`${SAMPLES}${file}`)).then(() => null, (e: unknown) => e);
      expect(err).toBeInstanceOf(TensorportError);
      expect((err as TensorportError).code).toBe(code);
      expect((err as TensorportError).message).toContain(text);
    });
  }
  it('opens the billion-laughs and __proto__ checkpoints as data, with no tensors and no pollution', async () => {
    for (const file of ['evil_billion_laughs.pt', 'evil_proto_keys.pt']) {
      const c = await openTorchCheckpoint(readBytes(`${SAMPLES}${file}`));
      expect(c.tensors).toEqual([]);
      expect(c.warnings.length).toBeGreaterThan(0);
      expect(c.warnings.length).toBeLessThan(50);
    }
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.prototype).not.toHaveProperty('polluted');
  });
  it('scans each hostile ZIP checkpoint as unsafe, naming the global', async () => {
    for (const [file, name] of [['evil_os_system.pt', 'posix.system'], ['evil_stack_global_eval.pt', 'builtins.eval'], ['full_model_unsafe.pt', '__main__.Net']] as const) {
      const r = await scanCheckpoint(readBytes(`${SAMPLES}${file}`), { path: file });
      expect(r.format).toBe('torch-zip');
      expect(r.safe).toBe(false);
      expect(r.globals).toContain(name);
    }
  });
});

describe('scan reports stay bounded', () => {
  it('lists 1000 findings and counts the rest for 100 000 distinct disallowed globals', () => {
    const parts: string[] = ['\x80\x02'];
    for (let i = 0; i < 100_000; i++) parts.push(`cm${i}\nf\n0`);
    const bytes = Uint8Array.from(parts.join('').concat('N.'), (c) => c.charCodeAt(0));
    const r = scanPickle(bytes);
    expect(r.globals.length).toBe(100_000);
    expect(r.findings.length).toBe(1001);
    expect(r.findings[1000]).toEqual({ code: 'PickleLimitExceeded', message: '99000 more findings not listed' });
  });
});
