import { fileURLToPath } from 'node:url';
import { readFileSync } from 'node:fs';

/** fixtures/torch/ at the repo root: everything the tests read is committed there. */
export const FIXTURES = fileURLToPath(new URL('../../../../fixtures/torch/', import.meta.url));
/** The torch 1.13 samples of the format research (see fixtures/torch/README.md). */
export const SAMPLES = `${FIXTURES}reference/`;
/** picklescan's test corpus (MIT). */
export const PICKLESCAN = `${FIXTURES}picklescan/`;

export const readBytes = (path: string): Uint8Array => new Uint8Array(readFileSync(path));
