/**
 * The real llama.cpp for the GGUF tests (Node-only test helper): node-llama-cpp with its prebuilt
 * CPU binaries from the npm registry (@node-llama-cpp/linux-x64 ships llama.cpp's libraries), kept
 * out of the workspace like the Python oracles. Install it where the tests look:
 *
 *   npm install --prefix tmp/oracles/llama-cpp --no-save --no-package-lock --ignore-scripts \
 *     --omit=optional node-llama-cpp@3.22.1 @node-llama-cpp/linux-x64@3.22.1
 *
 * (`.ci/run` does; TENSORPORT_LLAMA_CPP names another prefix). Each use runs llama-cpp-run.mjs in
 * its own process, so the native addon never loads into a test worker.
 * Missing, the tests skip with a message; with TENSORPORT_REQUIRE_INTEROP=1 (CI) they fail instead.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

const REPO = join(import.meta.dirname, '../../../..');
export const LLAMA_CPP_INSTALL = 'npm install --prefix tmp/oracles/llama-cpp --no-save --no-package-lock --ignore-scripts --omit=optional node-llama-cpp@3.22.1 @node-llama-cpp/linux-x64@3.22.1';

/** The prefix holding node_modules/node-llama-cpp, or null after saying why the tests skip. */
export function requireLlamaCpp(): string | null {
  const prefix = process.env.TENSORPORT_LLAMA_CPP ?? join(REPO, 'tmp/oracles/llama-cpp');
  if (existsSync(join(prefix, 'node_modules/node-llama-cpp/package.json'))) return prefix;
  const what = `no llama.cpp (node-llama-cpp not in ${prefix}; from the repository root: ${LLAMA_CPP_INSTALL})`;
  if (process.env.TENSORPORT_REQUIRE_INTEROP === '1') throw new Error(`interop required (TENSORPORT_REQUIRE_INTEROP=1) but ${what}`);
  console.log(`llama.cpp: skipped tests: ${what}`);
  return null;
}

export interface LlamaCppRun {
  /** llama.cpp's release as node-llama-cpp reports it. */
  release: string;
  /** general.architecture as llama.cpp loaded it. */
  architecture: string;
  /** Tokens in the loaded vocabulary. */
  vocabulary: number;
  /** logits[i][v]: the logit of token v after prompt[0..i]. */
  logits: number[][];
  /** llama.cpp's tokenization of each string, no special tokens added. */
  tokens: number[][];
}

/** Loads `model` in llama.cpp (CPU), evaluates `prompt` and tokenizes `strings`; rejects with llama.cpp's words when it refuses the file. */
export function runLlamaCpp(prefix: string, model: string, prompt: readonly number[], strings: readonly string[]): Promise<LlamaCppRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(import.meta.dirname, 'llama-cpp-run.mjs')], {
      env: { ...process.env, NODE_PATH: join(prefix, 'node_modules') },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d));
    child.stderr.on('data', (d: Buffer) => (err += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), 120_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      if (code === 0) resolve(JSON.parse(out) as LlamaCppRun);
      else {
        // llama.cpp's own lines say why it refused a file; the stack that follows says nothing.
        const said = err.split('\n').filter((l) => /llama|gguf|error/i.test(l) && !/^\s+at /.test(l));
        reject(new Error(`llama.cpp run failed (${code}): ${said.slice(-8).join('\n')}`));
      }
    });
    child.stdin.end(JSON.stringify({ prefix, model, prompt, strings }));
  });
}
