import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** The repo's fixtures/torch/ and the shared reference material every developer and CI have at ../shared. */
export const FIXTURES = fileURLToPath(new URL('../../../../fixtures/torch/', import.meta.url));
export const SHARED = fileURLToPath(new URL('../../../../../shared/', import.meta.url));
export const SAMPLES = `${SHARED}reference/samples/torch/`;
export const PICKLESCAN = `${SHARED}corpora/picklescan/`;

export const readBytes = (path: string): Uint8Array => new Uint8Array(readFileSync(path));
