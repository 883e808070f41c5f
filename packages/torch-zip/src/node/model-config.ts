import { readFile, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { tiedWeightsConfig, type TiedWeightsConfig } from '../torch/tied.ts';

// A model's config.json is a few KB; anything past this is not one and is not read.
const MAX_CONFIG_BYTES = 4 * 1024 * 1024;

/**
 * The tying fields of the `config.json` beside a checkpoint file, as transformers would read them;
 * undefined when there is none, or it is not a readable JSON object (it then says nothing about ties).
 */
export async function tiedWeightsBeside(checkpointPath: string): Promise<TiedWeightsConfig | undefined> {
  const path = join(dirname(checkpointPath), 'config.json');
  const info = await stat(path).catch(() => null);
  if (!info?.isFile() || info.size > MAX_CONFIG_BYTES) return undefined;
  try {
    return tiedWeightsConfig(JSON.parse(await readFile(path, 'utf8')) as unknown, path);
  } catch {
    return undefined;
  }
}
