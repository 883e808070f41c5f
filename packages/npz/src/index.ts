export { openNpy, type NpyReadOptions, type NpyCheckpoint } from './open-npy.ts';
export { openNpz, type NpzReadOptions, type NpzCheckpoint } from './open-npz.ts';
export { writeNpy, writeNpz, type NpzWriteOptions, type NpyWriteResult } from './write.ts';
export { fflateCodec } from './fflate-codec.ts';
export { parseNpyHeader, formatNpyHeader, startsWithNpyMagic, NPY_MAGIC, DEFAULT_MAX_HEADER_SIZE, type NpyHeader, type NpyHeaderOptions } from './npy-header.ts';
export { descrToDtype, dtypeToDescr } from './descr.ts';
export { parsePyLiteral, PyTuple, type PyValue } from './literal.ts';
export { DEFAULT_MAX_FORTRAN_BYTES } from './descriptor.ts';
export { npzFormat, npyFormat, type NpzOpenOptions, type NpyOpenOptions, type NpzFormatWriteOptions } from './format.ts';
