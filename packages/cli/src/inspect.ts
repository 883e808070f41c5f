/** `tensorport inspect` is the library's `inspectPath`. */
export { inspectPath as inspect } from 'tensorport/node';
export type { DtypeTotal, InspectReport, InspectTensor } from 'tensorport';
