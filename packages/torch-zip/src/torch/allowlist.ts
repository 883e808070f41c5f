import type { GlobalEntry } from '../pickle/values.ts';
import { TORCH_DTYPES, type TorchDtype } from './dtypes.ts';
import {
  codecsEncode, newBytearray, newComplex, newDevice, newDict, newFrozenset, newParameter, newSet, newSize,
  rebuildFromTypeV2, rebuildParameter, rebuildParameterWithState, rebuildTensor, rebuildTensorV2, rebuildTensorV3,
  refuse, type Handler,
} from './rebuild.ts';

/**
 * What a GLOBAL may name. Nothing is ever imported or called: an entry only says what inert record
 * REDUCE/NEWOBJ builds (`call`), or what value the name itself stands for.
 * - `call`: REDUCE/NEWOBJ run the handler, which checks arguments and returns data.
 * - `dtype`, `storage`: values (a dtype argument, the storage class inside a persistent id).
 * - `type`: a class that only appears as an argument (`_rebuild_from_type_v2`'s new_type).
 * - `refuse`: torch can rebuild it, safetensors cannot hold it; refused by tensor name on load.
 */
export type AllowEntry = GlobalEntry;

const call = (h: Handler): AllowEntry => ({ kind: 'call', call: h });
const type: AllowEntry = { kind: 'type' };

/**
 * THE allowlist, in the spirit of torch's `_weights_only_unpickler._get_allowed_globals`, cut down
 * to what a state dict needs. Keys are `module.name` after Python 2 → 3 renaming.
 */
const TABLE: Record<string, AllowEntry> = {
  // containers and values
  'collections.OrderedDict': call(newDict),
  'collections.Counter': call(newDict),
  'builtins.set': call(newSet),
  'builtins.frozenset': call(newFrozenset),
  'builtins.bytearray': call(newBytearray),
  'builtins.complex': call(newComplex),
  '_codecs.encode': call(codecsEncode), // how protocol 2 pickles bytes
  'torch.Size': call(newSize),
  'torch.device': call(newDevice),
  // dense tensors and parameters
  'torch._utils._rebuild_tensor': call(rebuildTensor),
  'torch._utils._rebuild_tensor_v2': call(rebuildTensorV2),
  'torch._utils._rebuild_tensor_v3': call(rebuildTensorV3),
  'torch._utils._rebuild_parameter': call(rebuildParameter),
  'torch._utils._rebuild_parameter_with_state': call(rebuildParameterWithState),
  'torch._tensor._rebuild_from_type_v2': call(rebuildFromTypeV2),
  'torch.nn.parameter.Parameter': call(newParameter),
  'torch.Tensor': type,
  // tensors torch rebuilds but safetensors cannot hold: recognised so the refusal names them
  'torch._utils._rebuild_qtensor': call(refuse('quantized tensor')),
  'torch._utils._rebuild_sparse_tensor': call(refuse('sparse tensor')),
  'torch._utils._rebuild_sparse_csr_tensor': call(refuse('sparse CSR tensor')),
  'torch._utils._rebuild_nested_tensor': call(refuse('nested tensor')),
  'torch._utils._rebuild_meta_tensor_no_storage': call(refuse('meta tensor (no data)')),
  'torch._utils._rebuild_wrapper_subclass': call(refuse('wrapper tensor subclass')),
  'torch._utils._rebuild_device_tensor_from_numpy': call(refuse('device tensor from numpy')),
  'torch._utils._rebuild_device_tensor_from_cpu_tensor': call(refuse('device tensor')),
  'torch.serialization._get_layout': call(refuse('tensor with a sparse layout')),
  'torch.per_tensor_affine': type,
  'torch.per_tensor_symmetric': type,
  'torch.per_channel_affine': type,
  'torch.per_channel_symmetric': type,
  'torch.per_channel_affine_float_qparams': type,
  // storages: the untyped one, the legacy typed classes (also under torch.cuda in old files), dtypes
  'torch.UntypedStorage': { kind: 'storage', dtype: null },
  'torch.storage.UntypedStorage': { kind: 'storage', dtype: null }, // how torch 2.13 names it
  ...dtypeGlobals(),
};

/** `torch.<dtype>` for every dtype, `torch[.cuda].<X>Storage` for those with a legacy storage class. */
function dtypeGlobals(): Record<string, AllowEntry> {
  const out: Record<string, AllowEntry> = {};
  for (const [dtype, info] of Object.entries(TORCH_DTYPES) as [TorchDtype, { storage: string | null }][]) {
    out[`torch.${dtype}`] = { kind: 'dtype', dtype };
    if (info.storage !== null) {
      out[`torch.${info.storage}`] = { kind: 'storage', dtype };
      out[`torch.cuda.${info.storage}`] = { kind: 'storage', dtype };
    }
  }
  return out;
}

const ALLOWED: ReadonlyMap<string, AllowEntry> = new Map(Object.entries(TABLE));

/** Python 2 module names that protocol 0–2 pickles written by Python 3 still use. */
const PY2_MODULES: Readonly<Record<string, string>> = { __builtin__: 'builtins', copy_reg: 'copyreg' };

export function globalName(module: string, name: string): string {
  return `${PY2_MODULES[module] ?? module}.${name}`;
}

export function lookupGlobal(qualified: string): AllowEntry | undefined {
  return ALLOWED.get(qualified);
}

export function allowedGlobals(): string[] {
  return [...ALLOWED.keys()];
}
