import type { ByteSink, Context, OutputTarget } from '@tensorport/core';
import type { SideFile } from './transform.ts';

interface Entry {
  readonly name: string;
  readonly sink: ByteSink;
  prepared: boolean;
  committed: boolean;
  finish: (() => Promise<void>) | undefined;
}

/**
 * The target as a writer sees it inside `convert`: one commit for the writer's files, the side
 * files beside them and the removal of stale entries, settled only after the output was read back.
 *
 * - The side files are planned with the writer's own files (one `prepare`, so the output policy sees
 *   them all) and staged, complete and durable but invisible, before the writer publishes anything:
 *   a sink with two-phase commit puts them into the same journaled group.
 * - Every sink commits in two phases (`prepare` first, also for writers that commit directly), and
 *   its `finish` (which drops the backups of replaced files) waits for `finish()` here; `settle()`
 *   (stale entries removed) waits too. `fail()` reverts every commit, so a later check that fails
 *   puts back the files a `force` replaced, and removes the rest.
 */
export class HeldTarget implements OutputTarget {
  private readonly entries: Entry[] = [];
  private staged: Array<{ file: SideFile; sink: ByteSink }> | null = null;
  private settleWanted = false;

  constructor(
    private readonly inner: OutputTarget,
    private readonly side: readonly SideFile[],
  ) {}

  get name(): string {
    return this.inner.name;
  }

  get directory(): boolean {
    return this.inner.directory;
  }

  get codec() {
    return this.inner.codec;
  }

  protect(inputs: readonly string[]): void {
    this.inner.protect(inputs);
  }

  locate(file: string): string {
    return this.inner.locate(file);
  }

  reopen(files: readonly string[]): Promise<Context> {
    return this.inner.reopen(files);
  }

  rollback(files: readonly string[]): Promise<void> {
    return this.inner.rollback(files);
  }

  async prepare(files: readonly string[], shadows: readonly string[] = []): Promise<void> {
    if (this.staged !== null) return this.inner.prepare(files, shadows);
    // A side file the writer writes itself is the writer's.
    const side = this.side.filter((f) => !files.includes(f.name));
    await this.inner.prepare([...files, ...side.map((f) => f.name)], shadows);
    await this.stage(side);
  }

  async create(file: string): Promise<ByteSink> {
    const sink = await this.inner.create(file);
    const entry: Entry = { name: file, sink, prepared: false, committed: false, finish: sink.finish?.bind(sink) };
    this.entries.push(entry);
    const prepare = sink.prepare?.bind(sink);
    const commit = sink.commit.bind(sink);
    // Own properties over the sink's methods: everything else (writeOwned, writeAt, bytesWritten) stays the sink's.
    if (prepare) {
      sink.prepare = async () => {
        await prepare();
        entry.prepared = true;
      };
    }
    sink.commit = async () => {
      if (prepare && !entry.prepared) await sink.prepare!();
      await commit();
      entry.committed = true;
    };
    if (entry.finish) sink.finish = async () => undefined;
    return sink;
  }

  async settle(): Promise<void> {
    this.settleWanted = true;
  }

  /** After the writer returned: publishes the staged side files; returns their names. */
  async commitSide(): Promise<string[]> {
    if (this.staged === null) {
      // A writer that never prepared: plan and stage them now.
      const side = [...this.side];
      await this.inner.prepare(side.map((f) => f.name));
      await this.stage(side);
    }
    const names: string[] = [];
    for (const { file, sink } of this.staged!) {
      await sink.commit();
      names.push(file.name);
    }
    return names;
  }

  /** Everything passed: stale entries go, backups of replaced files go, the commit is final. */
  async finish(): Promise<void> {
    if (this.settleWanted) await this.inner.settle();
    for (const e of this.entries) await e.finish?.().catch(() => undefined);
  }

  /**
   * Something failed: every commit is undone (a replaced file comes back), every other sink aborted;
   * what cannot be reverted (a sink without two-phase commit) goes through the target's rollback.
   */
  async fail(): Promise<void> {
    const removed: string[] = [];
    let reverted = true;
    for (const e of [...this.entries].reverse()) {
      if (e.committed && e.sink.revert) {
        await e.sink.revert().catch(() => {
          reverted = false;
        });
      } else if (e.committed) removed.push(e.name);
      else await e.sink.abort().catch(() => undefined);
    }
    // A failed revert keeps the group's journal, so exit handlers or the next run finish the rollback.
    if (reverted) for (const e of this.entries) await e.finish?.().catch(() => undefined);
    await this.inner.rollback(removed).catch(() => undefined);
  }

  private async stage(side: readonly SideFile[]): Promise<void> {
    this.staged = [];
    for (const file of side) {
      const sink = await this.create(file.name);
      this.staged.push({ file, sink });
      await sink.write(file.bytes);
      await sink.prepare?.();
    }
  }
}
