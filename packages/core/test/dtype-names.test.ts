import { describe, expect, it } from 'vitest';
import { dtypeFromName } from '../src/index.ts';
import { requirePython, runPython } from './helpers/python.ts';

/** Issue 11 papercut: `--void1 f8_e4m3fn` (torch's spelling) was refused. */
describe('dtypeFromName', () => {
  it('safetensors names in any case, short and long torch/ml_dtypes/numpy names', () => {
    for (const [n, d] of [['F8_E4M3', 'F8_E4M3'], ['f8_e4m3', 'F8_E4M3'], ['f8_e4m3fn', 'F8_E4M3'], ['torch.float8_e4m3fn', 'F8_E4M3'], ['float8_e5m2', 'F8_E5M2'],
      ['float8_e8m0fnu', 'F8_E8M0'], ['ml_dtypes.float8_e4m3fnuz', 'F8_E4M3FNUZ'], ['bf16', 'BF16'], ['bfloat16', 'BF16'], ['np.float32', 'F32'], ['u8', 'U8'], ['i64', 'I64'], ['half', 'F16']] as const) {
      expect(dtypeFromName(n), n).toBe(d);
    }
    for (const n of ['float8', 'e4m3', '', 'torch.', 'f7']) expect(dtypeFromName(n), n).toBeNull();
  });
});

const py = await requirePython(['torch']);
describe.skipIf(!py)('torch names', () => {
  it("every torch dtype whose safetensors name torch's own safetensors mapping gives resolves to that name", async () => {
    // safetensors.torch's _TYPES table: the dtype names torch itself prints
    const out = await runPython(py!.exe, `
import json, torch
names = {"F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16, "I64": torch.int64, "I32": torch.int32,
         "I16": torch.int16, "I8": torch.int8, "U8": torch.uint8, "BOOL": torch.bool, "F8_E4M3": torch.float8_e4m3fn, "F8_E5M2": torch.float8_e5m2}
print(json.dumps({str(v): k for k, v in names.items()}))
`);
    for (const [torchName, st] of Object.entries(JSON.parse(out) as Record<string, string>)) expect(dtypeFromName(torchName), torchName).toBe(st);
  });
});
