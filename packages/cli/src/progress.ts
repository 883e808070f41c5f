import { formatBytes } from './size.ts';

/** What a progress bar needs of stderr; a fake in tests. */
export interface ProgressStream {
  isTTY?: boolean;
  columns?: number;
  write(text: string): unknown;
}

export interface ProgressOptions {
  /** Work that finishes sooner than this never shows a bar (ms). */
  delay?: number;
  /** Minimum time between redraws (ms). */
  interval?: number;
  now?: () => number;
}

/**
 * A one-line byte progress bar: `[#####·····]  48%  1.20 GiB / 2.50 GiB  310 MiB/s`.
 * Draws only on a TTY, only once the work has run for `delay` ms, and at most every `interval`
 * ms, so short runs and redirected stderr stay clean.
 */
export class ProgressBar {
  private readonly start: number;
  private lastDraw = -Infinity;
  private drawn = false;
  private readonly delay: number;
  private readonly interval: number;
  private readonly now: () => number;

  constructor(
    private readonly stream: ProgressStream,
    private readonly total: number,
    private readonly label = '',
    options: ProgressOptions = {},
  ) {
    this.now = options.now ?? (() => performance.now());
    this.delay = options.delay ?? 1000;
    this.interval = options.interval ?? 100;
    this.start = this.now();
  }

  /** Reports `done` bytes of `total`. */
  update(done: number): void {
    if (!this.stream.isTTY) return;
    const t = this.now();
    if (t - this.start < this.delay || t - this.lastDraw < this.interval) return;
    this.lastDraw = t;
    this.drawn = true;
    this.stream.write(`\r${this.render(done, t)}\x1b[K`);
  }

  /** Clears the line if anything was drawn. */
  finish(): void {
    if (this.drawn) this.stream.write('\r\x1b[K');
    this.drawn = false;
  }

  render(done: number, t = this.now()): string {
    const fraction = this.total > 0 ? Math.min(1, done / this.total) : 1;
    const seconds = (t - this.start) / 1000;
    const rate = seconds > 0 ? `${formatBytes(Math.round(done / seconds))}/s` : '';
    const text = `${(fraction * 100).toFixed(0).padStart(3)}%  ${formatBytes(done)} / ${formatBytes(this.total)}  ${rate}`;
    const prefix = this.label ? `${this.label} ` : '';
    // A pty without a size reports 0 columns.
    const columns = this.stream.columns || 80;
    const width = Math.max(10, Math.min(30, columns - prefix.length - text.length - 4));
    const filled = Math.round(fraction * width);
    return `${prefix}[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${text}`;
  }
}

/** A byte progress bar on `stream` for human output; none with --json (stdout then holds only the object). */
export function progressFor(stream: ProgressStream, json: boolean | undefined, label: string): { onProgress?: (done: number, total: number) => void; finish: () => void } {
  if (json) return { finish: () => undefined };
  let bar: ProgressBar | null = null;
  return {
    onProgress: (done, total) => {
      bar ??= new ProgressBar(stream, total, label);
      bar.update(done);
    },
    finish: () => bar?.finish(),
  };
}
