/** `tensorport validate` is the library's `validatePath`. */
export { validatePath as validate } from 'tensorport/node';
export type { ValidateReport } from 'tensorport';
