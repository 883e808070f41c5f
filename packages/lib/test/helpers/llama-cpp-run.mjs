// Runs one GGUF in the real llama.cpp (node-llama-cpp's prebuilt CPU build), for llama-cpp.ts:
// reads {prefix, model, prompt, strings} on stdin, prints {release, architecture, vocabulary,
// logits, tokens} on stdout. A refused file exits 1 with llama.cpp's log lines on stderr.
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

let input = '';
for await (const chunk of process.stdin) input += chunk;
const { prefix, model: modelPath, prompt, strings } = JSON.parse(input);
const entry = createRequire(join(prefix, 'package.json')).resolve('node-llama-cpp');
const { getLlama, LlamaLogLevel } = await import(pathToFileURL(entry).href);

const llama = await getLlama({ gpu: false, build: 'never', usePrebuiltBinaries: true, logLevel: LlamaLogLevel.warn, logger: (level, message) => process.stderr.write(`${message}\n`) });
const model = await llama.loadModel({ modelPath, gpuLayers: 0 });
const context = await model.createContext({ contextSize: Math.max(64, prompt.length * 2), batchSize: Math.max(64, prompt.length), threads: 2 });
const results = await context.getSequence().controlledEvaluate(prompt.map((t) => [t, { generateNext: { logits: true } }]));
const vocabulary = model.fileInfo.metadata.tokenizer.ggml.tokens.length;
const logits = results.map((r) => {
  const row = new Array(vocabulary);
  for (let v = 0; v < vocabulary; v++) row[v] = r.next.logits.get(v) ?? null;
  return row;
});
const tokens = strings.map((s) => [...model.tokenize(s)]);
process.stdout.write(JSON.stringify({ release: llama.llamaCppRelease.release, architecture: model.fileInfo.metadata.general.architecture, vocabulary, logits, tokens }));
await context.dispose();
await model.dispose();
await llama.dispose();
