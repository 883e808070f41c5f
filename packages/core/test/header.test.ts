import { describe, expect, it } from 'vitest';
import { BytesSource } from '../src/io/source.ts';
import { TensorportError } from '../src/errors.ts';
import { MAX_HEADER_SIZE, parseHeaderBytes, readHeader, firstInvalidUtf8 } from '../src/safetensors/header.ts';
import { entry, stBytes, validFile } from './helpers/safetensors-bytes.ts';

/** 'OK' or the error code the header reader throws. */
async function verdict(bytes: Uint8Array): Promise<string> {
  try {
    await readHeader(new BytesSource(bytes));
    return 'OK';
  } catch (e) {
    if (!(e instanceof TensorportError)) throw e;
    return e.code;
  }
}

const T = entry('F32', [2], 0, 8);
const D8 = new Uint8Array(8);
const f32Bytes = (vals: number[]) => new Uint8Array(new Float32Array(vals).buffer);

describe('reference Rust tests (tensor.rs, section 4.1)', () => {
  it('test_header_too_small: empty buffer', async () => {
    expect(await verdict(new Uint8Array(0))).toBe('HeaderTooSmall');
    expect(await verdict(new Uint8Array(7))).toBe('HeaderTooSmall');
  });
  it('test_invalid_header_length: N=60 and no header bytes', async () => {
    expect(await verdict(stBytes('', 0, 60))).toBe('InvalidHeaderLength');
  });
  it('test_header_too_large: <\\0\\0\\0\\0\\xff\\xff\\xff', async () => {
    expect(await verdict(new Uint8Array([0x3c, 0, 0, 0, 0, 0xff, 0xff, 0xff]))).toBe('HeaderTooLarge');
  });
  it('test_invalid_header_non_utf8: N=1, \\xff', async () => {
    expect(await verdict(stBytes(new Uint8Array([0xff])))).toBe('InvalidHeaderUtf8');
  });
  it('test_invalid_header_not_json: N=1, {', async () => {
    expect(await verdict(stBytes('{'))).toBe('InvalidHeaderJson');
  });
  it('test_whitespace_padded_header and test_whitespace_leading_padded_header', async () => {
    const h = await readHeader(new BytesSource(stBytes('{}\r \t\n')));
    expect(h.tensors).toEqual([]);
    expect(h.warnings).toEqual([]);
    const lead = await readHeader(new BytesSource(stBytes('\t\n{}\r ')));
    expect(lead.tensors).toEqual([]);
    expect(lead.warnings.map((w) => w.code)).toEqual(['LeadingWhitespace']);
  });
  it('test_deserialization: N=60, I32 [2,2] [0,16]', async () => {
    const header = '{"test":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16]}}';
    expect(header.length).toBe(60);
    const h = await readHeader(new BytesSource(stBytes(header, 16)));
    expect(h.headerLength).toBe(60);
    expect(h.dataStart).toBe(68);
    expect(h.tensors).toEqual([{ name: 'test', dtype: 'I32', shape: [2, 2], begin: 0, end: 16, entryOffset: 9 }]);
  });
  it('test_empty_shapes_allowed: N=56, I32 [] [0,4]', async () => {
    const header = '{"test":{"dtype":"I32","shape":[],"data_offsets":[0,4]}}';
    expect(header.length).toBe(56);
    const h = await readHeader(new BytesSource(stBytes(header, 4)));
    expect(h.tensors[0]!.shape).toEqual([]);
  });
  it('test_zero_sized_tensor: I32 [2,0] [0,0] and no data', async () => {
    expect(await verdict(stBytes('{"test":{"dtype":"I32","shape":[2,0],"data_offsets":[0, 0]}}'))).toBe('OK');
  });
  it('test_invalid_info: I32 [2,2] [0,4] and no data (layout before buffer length)', async () => {
    expect(await verdict(stBytes('{"test":{"dtype":"I32","shape":[2,2],"data_offsets":[0, 4]}}'))).toBe('TensorInvalidInfo');
  });
  it('test_json_attack: 10 tensors all at [0,16]', async () => {
    const parts = Array.from({ length: 10 }, (_, i) => `"weight_${i}":${entry('F32', [2, 2], 0, 16)}`);
    expect(await verdict(stBytes(`{${parts.join(',')}}`, 16))).toBe('InvalidOffset');
  });
  it('test_metadata_incomplete_buffer: trailing polyglot bytes, and a file 2 bytes short', async () => {
    const ok = validFile([['a', 'F32', [2, 2], 16]]);
    const extra = new TextEncoder().encode('extra_bogus_data_for_polyglot_file');
    const poly = new Uint8Array(ok.length + extra.length);
    poly.set(ok);
    poly.set(extra, ok.length);
    expect(await verdict(ok)).toBe('OK');
    expect(await verdict(poly)).toBe('MetadataIncompleteBuffer');
    expect(await verdict(ok.subarray(0, ok.length - 2))).toBe('MetadataIncompleteBuffer');
  });
  it('test_validation_overflow: [2, 2^64-2] and [2, 2^63-1]', async () => {
    const a = `{"test":{"dtype":"I32","shape":[2,18446744073709551614],"data_offsets":[0,16]}}`;
    const b = `{"test":{"dtype":"I32","shape":[2,9223372036854775807],"data_offsets":[0,16]}}`;
    expect(a.length).toBe(79);
    expect(b.length).toBe(78);
    expect(await verdict(stBytes(a, 16))).toBe('ValidationOverflow');
    expect(await verdict(stBytes(b, 16))).toBe('ValidationOverflow');
  });
  it('F4 [1,3] is MisalignedSlice; F4 [1,2] in 2 bytes is TensorInvalidInfo', async () => {
    expect(await verdict(stBytes(`{"a":${entry('F4', [1, 3], 0, 2)}}`, 2))).toBe('MisalignedSlice');
    expect(await verdict(stBytes(`{"a":${entry('F4', [1, 2], 0, 2)}}`, 2))).toBe('TensorInvalidInfo');
  });
});

describe('golden vectors (section 1.6)', () => {
  it('test_serialization: F32 [1,2,3], N=64, no padding', async () => {
    const header = '{"attn.0":{"dtype":"F32","shape":[1,2,3],"data_offsets":[0,24]}}';
    expect(header.length).toBe(64);
    const h = await readHeader(new BytesSource(stBytes(header, f32Bytes([0, 1, 2, 3, 4, 5]))));
    expect(h.tensors[0]).toMatchObject({ name: 'attn.0', dtype: 'F32', shape: [1, 2, 3], begin: 0, end: 24 });
    expect(h.dataStart).toBe(72);
  });
  it('test_serialization_fp4: F4 [1,2] in one byte, 4 spaces of padding', async () => {
    const header = '{"attn.0":{"dtype":"F4","shape":[1,2],"data_offsets":[0,1]}}    ';
    expect(header.length).toBe(64);
    const h = await readHeader(new BytesSource(stBytes(header, new Uint8Array([0]))));
    expect(h.tensors[0]).toMatchObject({ dtype: 'F4', shape: [1, 2], begin: 0, end: 1 });
  });
  it('test_empty, with and without metadata', async () => {
    expect((await readHeader(new BytesSource(stBytes('{}      ')))).metadata).toBeNull();
    const h = await readHeader(new BytesSource(stBytes('{"__metadata__":{"framework":"pt"}}     ')));
    expect(h.headerLength).toBe(40);
    expect(h.metadata).toEqual(new Map([['framework', 'pt']]));
  });
  it('PT test_serialization_forces_alignment and test_deserialization_metadata (N=102)', async () => {
    const header = `{"test1":${entry('I32', [2, 2], 0, 16)},"test2":${entry('F16', [2, 2], 16, 24)}}      `;
    expect(header.length).toBe(128);
    const h = await readHeader(new BytesSource(stBytes(header, 24)));
    expect(h.tensors.map((t) => t.name)).toEqual(['test1', 'test2']);
    const meta = `{"__metadata__":{"framework":"pt"},"test1":${entry('I32', [2, 2], 0, 16)}}`;
    const padded = meta + ' '.repeat(102 - meta.length);
    expect((await readHeader(new BytesSource(stBytes(padded, 16)))).headerLength).toBe(102);
  });
  it('python test_truncated_header_is_rejected and test_data_offset_overflow_is_rejected', async () => {
    const header = '{"test":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16]}}';
    const full = stBytes(header, 16);
    expect(await verdict(full.subarray(0, 8 + 30))).toBe('InvalidHeaderLength');
    const big = `{"weight":${entry('F32', [1024, 1024], 0, 4194304)}}`;
    expect(await verdict(stBytes(big, 1))).toBe('MetadataIncompleteBuffer');
  });
});

describe('probes against safetensors 0.8.0 (section 2.5 and our own, see docs/formats/safetensors.md)', () => {
  const accepted: [string, string, Uint8Array | number][] = [
    ['__metadata__ null', '{"__metadata__":null}', 0],
    ['unknown field with nested JSON (100 levels)', `{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"x":${'['.repeat(100)}${']'.repeat(100)}}}`, D8],
    ['paired surrogate escape in a key', `{"\\ud83d\\ude00":${T}}`, D8],
    ['tensor name ""', `{"":${T}}`, D8],
    ['leading space and newline', ` \n{"a":${T}}`, D8],
    ['"\\u005f_metadata__" is the metadata key', '{"\\u005f_metadata__":{"k":"v"}}', 0],
    ['F6_E2M3 [4] in 3 bytes', `{"a":${entry('F6_E2M3', [4], 0, 3)}}`, 3],
    ['F8_E4M3FNUZ and C64', `{"a":${entry('F8_E4M3FNUZ', [2], 0, 2)},"b":${entry('C64', [1], 2, 10)}}`, 10],
    ['zero-size tensors sharing offsets', `{"z1":${entry('F32', [0], 0, 0)},"z2":${entry('I8', [3, 0], 0, 0)},"x":${entry('U8', [16], 0, 16)},"z3":${entry('U8', [0], 16, 16)}}`, 16],
    ['entry as a sequence ["F32",[2],[0,8]]', '{"a":["F32",[2],[0,8]]}', D8],
    ['dtype as {"F32":null}', '{"a":{"dtype":{"F32":null},"shape":[2],"data_offsets":[0,8]}}', D8],
    ['sequence entry with map dtype', '{"a":[{"F32":null},[2],[0,8]]}', D8],
    ['[0, 2^60]', `{"a":${entry('F32', [0, 2n ** 60n], 0, 0)}}`, 0],
    ['[0, u64::MAX]', `{"a":${entry('F32', [0, '18446744073709551615'], 0, 0)}}`, 0],
    ['__proto__ as a tensor name', `{"__proto__":${T}}`, D8],
    ['duplicate metadata keys (last wins)', '{"__metadata__":{"k":"v","k":"w"}}', 0],
    ['unknown fields, including a repeated one', '{"x":{"dtype":"U8","shape":[0],"data_offsets":[0,0],"u":1,"u":2,"":{"k":1,"k":2}}}', 0],
    ['numbers the reference parses in unknown fields', '{"x":{"dtype":"U8","shape":[0],"data_offsets":[0,0],"u":[-0,1E1,1.0e-0,-1e-999999999999999,-1,1e308,1.5e308,0e99999999999999]}}', 0],
    ['DEL and U+2028 raw in strings', '{"__metadata__":{"\u007f":"\u2028"}}', 0],
    ['header exactly {}', '{}', 0],
    ['an escaped field name "\\u0064type"', '{"a":{"\\u0064type":"F32","shape":[2],"data_offsets":[0,8]}}', D8],
    ['__metadata__ after the tensors', `{"a":${T},"__metadata__":{"k":"v"}}`, D8],
    ['__metadata__ as an unknown field inside an entry', '{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"__metadata__":5}}', D8],
    ['depth 127 (top + entry + 125 arrays)', `{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"x":${'['.repeat(125)}${']'.repeat(125)}}}`, D8],
  ];
  it.each(accepted)('accepts: %s', async (_label, header, data) => {
    expect(await verdict(stBytes(header, data))).toBe('OK');
  });

  const rejected: [string, string, Uint8Array | number, string][] = [
    ['duplicate __metadata__', '{"__metadata__":{},"__metadata__":null}', 0, 'InvalidHeaderStructure'],
    ['escaped duplicate __metadata__', '{"\\u005f_metadata__":{"k":"v"},"__metadata__":null}', 0, 'InvalidHeaderStructure'],
    ['duplicate dtype in one entry', '{"a":{"dtype":"F32","dtype":"F32","shape":[2],"data_offsets":[0,8]}}', D8, 'InvalidHeaderStructure'],
    ['duplicate shape after all fields', '{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"shape":[2]}}', D8, 'InvalidHeaderStructure'],
    ['metadata value 1', '{"__metadata__":{"k":1}}', 0, 'InvalidHeaderStructure'],
    ['metadata as a string', '{"__metadata__":"x"}', 0, 'InvalidHeaderStructure'],
    ['metadata as a sequence', '{"__metadata__":[["k","v"]]}', 0, 'InvalidHeaderStructure'],
    ['nesting depth 128', `{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"x":${'['.repeat(126)}${']'.repeat(126)}}}`, D8, 'InvalidHeaderJson'],
    ['nesting depth 200', `{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"x":${'['.repeat(200)}${']'.repeat(200)}}}`, D8, 'InvalidHeaderJson'],
    ['BOM', '\ufeff{}', 0, 'InvalidHeaderJson'],
    ['lone \\ud800 in a key', `{"\\ud800":${T}}`, D8, 'InvalidHeaderJson'],
    ['lone \\udc00 in a value', '{"__metadata__":{"k":"\\udc00"}}', 0, 'InvalidHeaderJson'],
    ['shape 2.0', `{"a":${entry('F32', ['2.0'], 0, 8)}}`, D8, 'InvalidHeaderStructure'],
    ['shape 1e1', `{"a":${entry('U8', ['1e1'], 0, 10)}}`, 10, 'InvalidHeaderStructure'],
    ['offset 1.6e1', `{"a":${entry('U8', [16], 0, '1.6e1')}}`, 16, 'InvalidHeaderStructure'],
    ['shape -0', `{"a":${entry('F32', ['-0'], 0, 0)}}`, 0, 'InvalidHeaderStructure'],
    ['shape -1', `{"a":${entry('F32', ['-1'], 0, 0)}}`, 0, 'InvalidHeaderStructure'],
    ['shape 2^64', `{"a":${entry('F32', ['18446744073709551616', 0], 0, 0)}}`, 0, 'InvalidHeaderStructure'],
    ['1e400 in an unknown field', `{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"x":1e400}}`, D8, 'InvalidHeaderJson'],
    ['1.7976931348623158e308 in an unknown field', `{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"x":1.7976931348623158e308}}`, D8, 'InvalidHeaderJson'],
    ['a 400-digit integer in an unknown field', `{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"x":1${'0'.repeat(400)}}}`, D8, 'InvalidHeaderJson'],
    ['control character in a string', '{"__metadata__":{"k":"\u0001"}}', 0, 'InvalidHeaderJson'],
    ['F4 [3]', `{"a":${entry('F4', [3], 0, 2)}}`, 2, 'MisalignedSlice'],
    ['F6_E3M2 [2]', `{"a":${entry('F6_E3M2', [2], 0, 2)}}`, 2, 'MisalignedSlice'],
    ['top level []', '[]', 0, 'InvalidHeaderStructure'],
    ['top level null', 'null', 0, 'InvalidHeaderStructure'],
    ['N = 0', '', 0, 'InvalidHeaderJson'],
    ['dtype i32', `{"a":${entry('i32', [2], 0, 8)}}`, D8, 'UnknownDtype'],
    ['dtype E8M0 (an HF name that does not exist)', `{"a":${entry('E8M0', [2], 0, 2)}}`, 2, 'UnknownDtype'],
    ['data_offsets with 3 items', '{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8,8]}}', D8, 'InvalidHeaderStructure'],
    ['data_offsets with 1 item', '{"a":{"dtype":"F32","shape":[2],"data_offsets":[8]}}', D8, 'InvalidHeaderStructure'],
    ['data_offsets as a map', '{"a":{"dtype":"F32","shape":[2],"data_offsets":{"0":0,"1":8}}}', D8, 'InvalidHeaderStructure'],
    ['shape as a map', '{"a":{"dtype":"F32","shape":{},"data_offsets":[0,8]}}', D8, 'InvalidHeaderStructure'],
    ['NUL padding', '{}\u0000', 0, 'InvalidHeaderJson'],
    ['vertical tab padding', '{}\u000b', 0, 'InvalidHeaderJson'],
    ['form feed padding', '{}\u000c', 0, 'InvalidHeaderJson'],
    ['offsets [4,20]', `{"a":${entry('U8', [16], 4, 20)}}`, 20, 'InvalidOffset'],
    ['zero-size tensor at [5,5]', `{"a":${entry('U8', [0], 5, 5)}}`, 0, 'InvalidOffset'],
    ['missing data_offsets', '{"a":{"dtype":"F32","shape":[2]}}', D8, 'InvalidHeaderStructure'],
    ['entry is a number', '{"a":5}', 0, 'InvalidHeaderStructure'],
    ['entry is null', '{"a":null}', 0, 'InvalidHeaderStructure'],
    ['entry is a string', '{"a":"F32"}', 0, 'InvalidHeaderStructure'],
    ['[2,0] with a 4-byte span', `{"a":${entry('I32', [2, 0], 0, 4)}}`, 4, 'TensorInvalidInfo'],
    ['end before begin', `{"a":${entry('U8', [4], 0, 4)},"b":${entry('U8', [0], 4, 0)}}`, 4, 'InvalidOffset'],
    ['1 trailing byte', `{"a":${T}}`, 9, 'MetadataIncompleteBuffer'],
    ['tensor named __metadata__ (what the writer bug #849 produces)', `{"__metadata__":${T}}`, D8, 'InvalidHeaderStructure'],
    ['sequence entry with 4 items', '{"a":["F32",[2],[0,8],1]}', D8, 'InvalidHeaderStructure'],
    ['sequence entry with 2 items', '{"a":["F32",[2]]}', D8, 'InvalidHeaderStructure'],
    ['dtype {"F32":{}}', '{"a":{"dtype":{"F32":{}},"shape":[2],"data_offsets":[0,8]}}', D8, 'InvalidHeaderStructure'],
    ['dtype {"F32":[]}', '{"a":{"dtype":{"F32":[]},"shape":[2],"data_offsets":[0,8]}}', D8, 'InvalidHeaderStructure'],
    ['dtype {"F32":1}', '{"a":{"dtype":{"F32":1},"shape":[2],"data_offsets":[0,8]}}', D8, 'InvalidHeaderStructure'],
    ['dtype with two variants', '{"a":{"dtype":{"F32":null,"F16":null},"shape":[2],"data_offsets":[0,8]}}', D8, 'InvalidHeaderStructure'],
    ['dtype {}', '{"a":{"dtype":{},"shape":[2],"data_offsets":[0,8]}}', D8, 'InvalidHeaderStructure'],
    ['dtype {"X":null}', '{"a":{"dtype":{"X":null},"shape":[2],"data_offsets":[0,8]}}', D8, 'UnknownDtype'],
    ['dtype 17 (a variant index)', '{"a":{"dtype":17,"shape":[2],"data_offsets":[0,8]}}', D8, 'InvalidHeaderStructure'],
    ['dtype ["F32"]', '{"a":{"dtype":["F32"],"shape":[2],"data_offsets":[0,8]}}', D8, 'InvalidHeaderStructure'],
    ['dtype null', '{"a":{"dtype":null,"shape":[2],"data_offsets":[0,8]}}', D8, 'InvalidHeaderStructure'],
    ['overflow before a 0 dim ([2^63, 2, 0])', `{"a":${entry('F32', ['9223372036854775808', 2, 0], 0, 0)}}`, 0, 'ValidationOverflow'],
    ['elements × bits overflow (F32 [2^62])', `{"a":${entry('F32', ['4611686018427387904'], 0, 0)}}`, 0, 'ValidationOverflow'],
    ['U8 [2^61]: bits overflow', `{"a":${entry('U8', ['2305843009213693952'], 0, 0)}}`, 0, 'ValidationOverflow'],
    ['U8 [2^61-1]: fits, wrong size', `{"a":${entry('U8', ['2305843009213693951'], 0, 0)}}`, 0, 'TensorInvalidInfo'],
    ['U8 [u64::MAX]', `{"a":${entry('U8', ['18446744073709551615'], 0, 0)}}`, 0, 'ValidationOverflow'],
    ['metadata value null', '{"__metadata__":{"k":null}}', 0, 'InvalidHeaderStructure'],
    ['__metadata__ null twice', '{"__metadata__":null,"__metadata__":null}', 0, 'InvalidHeaderStructure'],
    ['sequence entry with 0 items', '{"a":[]}', 0, 'InvalidHeaderStructure'],
    ['nested shape [[2]]', '{"a":{"dtype":"F32","shape":[[2]],"data_offsets":[0,8]}}', D8, 'InvalidHeaderStructure'],
    ['offsets as strings', '{"a":{"dtype":"F32","shape":[2],"data_offsets":["0","8"]}}', D8, 'InvalidHeaderStructure'],
    ['shape [true]', '{"a":{"dtype":"F32","shape":[true],"data_offsets":[0,8]}}', D8, 'InvalidHeaderStructure'],
    ['{} then one data byte', '{}', 1, 'MetadataIncompleteBuffer'],
    ['trailing comma', `{"a":${T},}`, D8, 'InvalidHeaderJson'],
    ['two values', '{}{}', 0, 'InvalidHeaderJson'],
    ['single quotes', "{'a':1}", 0, 'InvalidHeaderJson'],
    ['bad literal in an unknown field', '{"x":{"dtype":"U8","shape":[0],"data_offsets":[0,0],"u":tru}}', 0, 'InvalidHeaderJson'],
  ];
  it.each(rejected)('rejects: %s', async (_label, header, data, code) => {
    expect(await verdict(stBytes(header, data))).toBe(code);
  });

  it('N = 100,000,000 passes the size check (then needs the bytes); N = 100,000,001 is too large', async () => {
    expect(MAX_HEADER_SIZE).toBe(100_000_000);
    expect(await verdict(stBytes('{}', 0, 100_000_000))).toBe('InvalidHeaderLength');
    expect(await verdict(stBytes('{}', 0, 100_000_001))).toBe('HeaderTooLarge');
    expect(await verdict(stBytes('{}', 0, 2n ** 64n - 1n))).toBe('HeaderTooLarge');
  });
});

describe('deliberately stricter: duplicate tensor names', () => {
  it('refuses a repeated name, naming both entries by byte offset', async () => {
    const header = `{"a":${T},"a":${T}}`;
    const e = await readHeader(new BytesSource(stBytes(header, D8))).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(TensorportError);
    const err = e as TensorportError;
    expect(err.code).toBe('DuplicateTensorName');
    expect(err.tensor).toBe('a');
    const second = 8 + '{"a":'.length + T.length + ','.length;
    expect(err.offset).toBe(second);
    expect(err.message).toContain('bytes 9 and ' + second);
  });
});

describe('parseHeaderBytes', () => {
  it('returns tensors sorted by offset with file-absolute entry offsets, metadata as a Map', () => {
    const header = `{"__metadata__":{"format":"pt","z":"1"},"b":${entry('U8', [2], 4, 6)},"a":${entry('F32', [1], 0, 4)}}`;
    const h = parseHeaderBytes(new TextEncoder().encode(header), 8 + header.length + 6);
    expect(h.tensors.map((t) => t.name)).toEqual(['a', 'b']);
    expect([...h.metadata!.keys()]).toEqual(['format', 'z']);
    expect(h.tensors[1]!.entryOffset).toBe(8 + header.indexOf('"b"'));
    expect(h.fileSize).toBe(8 + header.length + 6);
  });

  it('keeps exact dims beyond 2^53 for zero-element tensors', () => {
    const header = `{"a":${entry('F32', [0, '18446744073709551615'], 0, 0)}}`;
    const h = parseHeaderBytes(new TextEncoder().encode(header), 8 + header.length);
    expect(h.tensors[0]!.exactShape).toEqual([0n, 18446744073709551615n]);
    expect(h.tensors[0]!.shape[1]).toBe(18446744073709551615);
  });

  it('accepts bigint sizes and reports the first invalid UTF-8 byte offset', () => {
    const bytes = new Uint8Array([0x7b, 0x7d, 0x20, 0xe2, 0x82]); // `{} ` then a truncated €
    const e = (() => {
      try {
        parseHeaderBytes(bytes, 8n + 5n);
      } catch (x) {
        return x as TensorportError;
      }
      throw new Error('accepted');
    })();
    expect(e.code).toBe('InvalidHeaderUtf8');
    expect(e.offset).toBe(8 + 3);
  });

  it('firstInvalidUtf8 agrees with TextDecoder(fatal) on overlongs, surrogates and > U+10FFFF', () => {
    const bad = [[0xc0, 0x80], [0xe0, 0x80, 0x80], [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80], [0xf5, 0x80, 0x80, 0x80], [0x80], [0xc2]];
    for (const b of bad) expect(firstInvalidUtf8(new Uint8Array([0x41, ...b]))).toBe(1);
    const good = new TextEncoder().encode('aé€😀\u{10ffff}');
    expect(firstInvalidUtf8(good)).toBe(good.length);
  });
});
