// Shared by test/convert-big.test.ts and bench/web-convert.mjs: a big sparse safetensors input,
// and the peak memory of Chromium's renderer processes (the page and its worker live in one).
import { readdir, readFile, open, writeFile } from 'node:fs/promises';

/**
 * A safetensors file of `size` bytes whose data is a hole (written header, then ftruncate): gigabytes
 * of F32 zeros for a few KB of disk. `count` tensors share the data.
 * @param {string} path @param {number} size @param {number} count
 */
export async function writeBigSafetensors(path, size, count) {
  /** @type {Record<string, unknown>} */
  const header = { __metadata__: { format: 'pt' } };
  // Tensors of whole 4 KiB rows; the header (spaces after the JSON) takes the rest, a multiple of 8 when size is.
  const each = Math.floor((size - 8 - 64 * (count + 4)) / (count * 4096)) * 4096;
  const reserve = size - 8 - count * each;
  if (size % 8 !== 0) throw new Error('size must be a multiple of 8');
  for (let i = 0; i < count; i++) header[`layers.${i}.weight`] = { dtype: 'F32', shape: [each / 4 / 1024, 1024], data_offsets: [i * each, (i + 1) * each] };
  const json = Buffer.from(JSON.stringify(header).padEnd(reserve, ' '));
  if (json.length !== reserve) throw new Error('header outgrew its reservation');
  const prefix = Buffer.alloc(8);
  prefix.writeBigUInt64LE(BigInt(reserve));
  const fh = await open(path, 'w');
  try {
    await fh.write(Buffer.concat([prefix, json]), 0, 8 + reserve, 0);
    await fh.truncate(size);
  } finally {
    await fh.close();
  }
}

/** Every process descended from `root` (by /proc/<pid>/stat's parent field). @param {number} root */
async function descendants(root) {
  const parent = new Map();
  for (const d of await readdir('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    const stat = await readFile(`/proc/${d}/stat`, 'utf8').catch(() => '');
    const m = /\) \S (\d+)/.exec(stat);
    if (m) parent.set(Number(d), Number(m[1]));
  }
  const out = [];
  const queue = [root];
  while (queue.length) {
    const p = queue.shift();
    for (const [c, pp] of parent) if (pp === p) (out.push(c), queue.push(c));
  }
  return out;
}

/**
 * Peak resident memory (VmHWM, KiB → bytes) of each renderer process under `browserPid`, and the
 * current RSS. @param {number} browserPid @returns {Promise<Array<{ pid: number; hwm: number; rss: number }>>}
 */
export async function rendererMemory(browserPid) {
  const out = [];
  for (const pid of await descendants(browserPid)) {
    const cmd = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
    if (!cmd.includes('--type=renderer')) continue;
    const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
    const kib = (/** @type {string} */ k) => Number(new RegExp(`${k}:\\s+(\\d+)`).exec(status)?.[1] ?? 0) * 1024;
    out.push({ pid, hwm: kib('VmHWM'), rss: kib('VmRSS') });
  }
  return out;
}

/** Resets the renderers' VmHWM to their current RSS (clear_refs 5), so a peak is this run's. @param {number} browserPid */
export async function resetPeaks(browserPid) {
  for (const { pid } of await rendererMemory(browserPid)) await writeFile(`/proc/${pid}/clear_refs`, '5').catch(() => undefined);
}

/** The pid of the Chromium started with this user data dir. @param {string} userDataDir */
export async function browserPidFor(userDataDir) {
  for (const d of await readdir('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    const cmd = await readFile(`/proc/${d}/cmdline`, 'utf8').catch(() => '');
    if (cmd.includes(`--user-data-dir=${userDataDir}`) && !cmd.includes('--type=')) return Number(d);
  }
  throw new Error(`no chromium with --user-data-dir=${userDataDir}`);
}

/**
 * Samples the page's JS heap (CDP Performance.getMetrics) and the renderers' RSS every `ms` until
 * `stop()`; returns peaks in bytes. Renderer peaks are VmHWM: nothing between samples is missed.
 * @param {import('playwright-core').CDPSession} cdp @param {number} browserPid
 */
export function sampleMemory(cdp, browserPid, ms = 250) {
  let heap = 0;
  let timer = /** @type {NodeJS.Timeout | undefined} */ (undefined);
  const tick = async () => {
    const { metrics } = await cdp.send('Performance.getMetrics').catch(() => ({ metrics: [] }));
    heap = Math.max(heap, metrics.find((m) => m.name === 'JSHeapUsedSize')?.value ?? 0);
    timer = setTimeout(() => void tick(), ms);
  };
  const started = resetPeaks(browserPid).then(() => cdp.send('Performance.enable')).then(tick);
  return {
    async stop() {
      await started;
      clearTimeout(timer);
      const renderers = await rendererMemory(browserPid);
      return { jsHeapPeak: heap, rendererPeak: Math.max(0, ...renderers.map((r) => r.hwm)), renderers };
    },
  };
}
