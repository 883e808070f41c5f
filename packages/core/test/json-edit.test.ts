import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { editJsonObject, jsonObjectSpans } from '../src/index.ts';

/** Issue 11 item 3: editing config.json text keeps every byte the edit does not touch. */
const CONFIGS = fileURLToPath(new URL('../../../fixtures/transformers/configs/', import.meta.url));
const read = (name: string): string => readFileSync(`${CONFIGS}${name}/config.json`, 'utf8');

describe('editJsonObject', () => {
  it('real transformers config.json (indent 2, sorted keys): inserts in sorted place, floats like 0.0 and 30.0 stay as written', () => {
    for (const name of ['mixtral', 'gemma2']) {
      const text = read(name);
      const section = { group_size: 64, bits: 4, mode: 'affine' };
      const out = editJsonObject(text, new Map<string, unknown>([['quantization', section], ['quantization_config', section]]));
      expect(JSON.parse(out)).toEqual({ ...(JSON.parse(text) as object), quantization: section, quantization_config: section });
      // Removing what was inserted gives the input back, byte for byte.
      expect(editJsonObject(out, new Map([['quantization', undefined], ['quantization_config', undefined]]))).toBe(text);
      const keys = jsonObjectSpans(out).members.map((m) => m.key);
      expect(keys).toEqual([...keys].sort());
      expect(out).toContain('\n  "quantization": {\n    "group_size": 64,\n    "bits": 4,\n    "mode": "affine"\n  },\n');
    }
    expect(read('mixtral')).toContain('"router_jitter_noise": 0.0');
    expect(read('gemma2')).toContain('"final_logit_softcapping": 30.0');
  });

  it('replaces a value in place, removes first/middle/last members, appends to unsorted objects', () => {
    const text = '{\n    "b": 1.0,\n    "a": [1, 2],\n    "c": {"x": "}"}\n}\n';
    expect(editJsonObject(text, new Map([['a', 7]]))).toBe('{\n    "b": 1.0,\n    "a": 7,\n    "c": {"x": "}"}\n}\n');
    expect(editJsonObject(text, new Map([['b', undefined]]))).toBe('{\n    "a": [1, 2],\n    "c": {"x": "}"}\n}\n');
    expect(editJsonObject(text, new Map([['a', undefined]]))).toBe('{\n    "b": 1.0,\n    "c": {"x": "}"}\n}\n');
    expect(editJsonObject(text, new Map([['c', undefined]]))).toBe('{\n    "b": 1.0,\n    "a": [1, 2]\n}\n');
    expect(editJsonObject(text, new Map([['a', undefined], ['b', undefined], ['c', undefined]]))).toBe('{}\n');
    expect(editJsonObject(text, new Map([['d', { k: true }]]))).toBe('{\n    "b": 1.0,\n    "a": [1, 2],\n    "c": {"x": "}"},\n    "d": {\n        "k": true\n    }\n}\n');
    expect(editJsonObject(text, new Map([['zz', undefined]]))).toBe(text);
  });

  it('empty objects, compact text, escapes in keys and strings, duplicate keys (the last, as JSON.parse reads it)', () => {
    expect(editJsonObject('{}', new Map([['a', 1]]))).toBe('{\n    "a": 1\n}');
    expect(editJsonObject('{"a": 1, "b": 2}', new Map([['ab', [1]]]))).toBe('{"a": 1, "ab": [1], "b": 2}');
    const tricky = '{"k\\"1": "v\\\\", "x": "é", "x": 2}';
    expect(editJsonObject(tricky, new Map([['x', 'ü']]))).toBe('{"k\\"1": "v\\\\", "x": "é", "x": "\\u00fc"}');
    expect(editJsonObject(tricky, new Map([['x', undefined]]))).toBe('{"k\\"1": "v\\\\"}');
    expect(() => editJsonObject('[1]', new Map([['a', 1]]))).toThrow(/not a JSON object/);
  });
});
