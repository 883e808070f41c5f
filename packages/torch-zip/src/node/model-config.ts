import { readFile, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { MAX_MODEL_CONFIG_BYTES, tiedWeightsFromJson, type TiedWeightsConfig } from '../torch/tied.ts';

/** The tying fields of the `config.json` beside a checkpoint file; undefined when there is none or it is not a JSON object. */
export async function tiedWeightsBeside(checkpointPath: string): Promise<TiedWeightsConfig | undefined> {
  const path = join(dirname(checkpointPath), 'config.json');
  const info = await stat(path).catch(() => null);
  if (!info?.isFile() || info.size > MAX_MODEL_CONFIG_BYTES) return undefined;
  return tiedWeightsFromJson(await readFile(path), path);
}
