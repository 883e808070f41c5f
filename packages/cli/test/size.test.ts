import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { formatBytes, isFractionalBytes, parseSize } from '../src/size.ts';

describe('parseSize (Hugging Face size strings)', () => {
  it('reads decimal units as powers of 10 and binary units as powers of 2', () => {
    expect(parseSize('5GB')).toBe(5_000_000_000);
    expect(parseSize('5GiB')).toBe(5 * 1024 ** 3);
    expect(parseSize('500MB')).toBe(500_000_000);
    expect(parseSize('10KiB')).toBe(10240);
    expect(parseSize('10kib')).toBe(10240);
    expect(parseSize('1.5GB')).toBe(1_500_000_000);
    expect(parseSize('2TB')).toBe(2e12);
    expect(parseSize('123')).toBe(123);
    expect(parseSize('123B')).toBe(123);
    expect(parseSize(' 7 MB ')).toBe(7_000_000);
  });

  it('rejects what is not a size', () => {
    for (const bad of ['', 'GB', '-5GB', '5XB', '5 G B', '1e9', '0x10', '5GB5', 'NaN', '99999999999999999999TB']) {
      expect(parseSize(bad), bad).toBeNull();
    }
  });

  it('refuses sizes that are not a whole number of bytes, in exact decimal arithmetic (1.1KB is 1100, not 1100.0000000000002)', () => {
    for (const bad of ['1.5', '0.5B', '1.0001KB', '1.5KiB0']) expect(parseSize(bad), bad).toBeNull();
    expect(isFractionalBytes('1.5')).toBe(true);
    expect(isFractionalBytes('1.0001KB')).toBe(true);
    expect(isFractionalBytes('1.5GB')).toBe(false);
    expect(parseSize('1.1KB')).toBe(1100);
    expect(parseSize('1.5KiB')).toBe(1536);
    expect(parseSize('2.50MB')).toBe(2_500_000);
    expect(parseSize('0.001KB')).toBe(1);
  });

  it('refuses a decimal unit with a lowercase b, which transformers reads as bits', () => {
    for (const bits of ['5Gb', '5gb', '500mb', '10kb', '100b']) expect(parseSize(bits), bits).toBeNull();
  });

  it('is n × unit for every integer n and unit', () => {
    const units: Array<[string, number]> = [['', 1], ['B', 1], ['KB', 1e3], ['MB', 1e6], ['GB', 1e9], ['KiB', 1024], ['MiB', 1024 ** 2], ['GiB', 1024 ** 3]];
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 1_000_000 }), fc.constantFrom(...units), (n, [unit, factor]) => {
        expect(parseSize(`${n}${unit}`)).toBe(n * factor);
        expect(parseSize(`${n}${unit.toUpperCase()}`)).toBe(n * factor);
      }),
    );
  });
});

describe('formatBytes', () => {
  it('uses binary units with three significant digits', () => {
    expect(formatBytes(0)).toBe('0 B');
    expect(formatBytes(1023)).toBe('1023 B');
    expect(formatBytes(1536)).toBe('1.50 KiB');
    expect(formatBytes(20 * 1024 * 1024)).toBe('20.0 MiB');
    expect(formatBytes(5e9)).toBe('4.66 GiB');
    expect(formatBytes(300 * 1024 ** 4)).toBe('300 TiB');
  });
});
