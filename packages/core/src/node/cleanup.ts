import { unlinkSync } from 'node:fs';

/**
 * Temp files that must not outlive the process. A run stopped by Ctrl-C, `kill`, a hang-up or
 * `process.exit` removes them, so an interrupted conversion leaves neither a half-written file at
 * the target (which is only ever renamed into place) nor a stray temp file. SIGKILL cannot be
 * caught: its leftovers are named `.<name>.tensorport-<pid>-<start>-<hex>.tmp` and the next run
 * writing into that directory removes them (stale.ts).
 *
 * Rollbacks (commit-group.ts) run first: a multi-file commit interrupted between its renames puts
 * the directory back as it was before.
 *
 * Handlers are installed only while temp files exist. If ours is the only handler for a signal,
 * after cleaning up it re-raises the signal so the process still dies of it (exit status 128+n);
 * if the application has its own handler, that handler decides.
 */
const pending = new Set<string>();
const rollbacks = new Set<() => void>();
const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
let installed = false;

export function registerTempFile(path: string): void {
  pending.add(path);
  install();
}

export function unregisterTempFile(path: string): void {
  pending.delete(path);
  if (pending.size === 0 && rollbacks.size === 0) uninstall();
}

/** A synchronous undo run on a signal or exit before the temp files are removed (latest first). */
export function registerRollback(fn: () => void): void {
  rollbacks.add(fn);
  install();
}

export function unregisterRollback(fn: () => void): void {
  rollbacks.delete(fn);
  if (pending.size === 0 && rollbacks.size === 0) uninstall();
}

function install(): void {
  if (!installed) {
    installed = true;
    for (const s of SIGNALS) process.on(s, onSignal);
    process.on('exit', removePendingSync);
  }
}

/** Paths currently registered (for tests and diagnostics). */
export function pendingTempFiles(): string[] {
  return [...pending];
}

function uninstall(): void {
  if (!installed) return;
  installed = false;
  for (const s of SIGNALS) process.off(s, onSignal);
  process.off('exit', removePendingSync);
}

function removePendingSync(): void {
  for (const undo of [...rollbacks].reverse()) {
    try {
      undo();
    } catch {
      // Each rollback is best effort; the others still run.
    }
  }
  rollbacks.clear();
  for (const p of pending) {
    try {
      unlinkSync(p);
    } catch {
      // Already gone, or never created: nothing to clean.
    }
  }
  pending.clear();
}

function onSignal(signal: NodeJS.Signals): void {
  removePendingSync();
  uninstall();
  if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
}
