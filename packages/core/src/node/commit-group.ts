import { closeSync, fsyncSync, linkSync, lstatSync, openSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { registerRollback, unregisterRollback } from './cleanup.ts';
import { ownedName } from './owner.ts';

/**
 * Several files of one directory published as a unit (shards + index, an MLX model directory).
 *
 * Every member is complete and fsynced (`FileSink.prepare`) before the first rename. Before that
 * rename a journal `.tensorport-<pid>-<start>-<hex>.commit` naming every member (its temp name, the
 * inode of its data, and where a file it replaces is kept) is written and fsynced. Each commit then
 * keeps a hard link to the file it replaces (`.bak`) and renames, synchronously, so no signal
 * handler runs between a rename and its bookkeeping. A failed commit, a signal, `process.exit` or an
 * uncaught exception rolls back every member: a published file whose inode is ours is removed, or
 * the file it replaced is put back. Deleting the journal is the commit point; backups go after it.
 * After SIGKILL or a crash the journal stays, and the next tensorport run writing into that
 * directory rolls it back (stale.ts) once its process is gone.
 */
export class CommitGroup {
  private readonly members: GroupMember[] = [];
  private journal: string | null = null;
  private settled = false;
  private readonly rollback = (): void => this.rollBackSync();

  /**
   * @param journaled false for a lone prepared sink: signals still roll it back, but no journal is
   *   written (a group's journal must name all its members, or a crash recovery would undo only some).
   */
  constructor(private readonly journaled = true) {}

  /** Called by a sink whose data is durable and whose temp file is closed. */
  add(member: GroupMember): void {
    if (this.members.length > 0 && dirname(member.target) !== dirname(this.members[0]!.target)) {
      throw new Error(`a commit group spans one directory: ${member.target} is not beside ${this.members[0]!.target}`);
    }
    this.members.push(member);
  }

  /** Publishes one member (synchronously: see above). Throws the file system's error. */
  publish(member: GroupMember, force: boolean): void {
    if (this.settled) throw new Error(`${member.target}: its commit group is already settled`);
    if (this.journal === null) this.writeJournal();
    if (force) {
      if (lstatOrNull(member.target)) {
        try {
          linkSyncOrRename(member.target, member.backup);
        } catch (e) {
          if (errno(e) !== 'ENOENT') throw e;
        }
      }
      renameSync(member.temp, member.target);
    } else {
      publishNoClobber(member);
    }
    member.committed = true;
  }

  /** Undoes one member's commit (or its temp file when it never committed). */
  revert(member: GroupMember): void {
    rollBackMember(member);
    member.committed = false;
  }

  /** The group is settled either way: drop the journal (the commit point), then the backups. */
  finish(): void {
    if (this.settled) return;
    this.settled = true;
    if (this.journal) {
      removeQuietly(this.journal);
      syncDir(dirname(this.journal));
    }
    for (const m of this.members) removeQuietly(m.backup);
    unregisterRollback(this.rollback);
  }

  private writeJournal(): void {
    registerRollback(this.rollback);
    if (!this.journaled || this.members.length === 0) {
      this.journal = '';
      return;
    }
    const dir = dirname(this.members[0]!.target);
    const path = join(dir, ownedName('', 'commit'));
    const body = JSON.stringify({ version: 1, members: this.members.map(journalEntry) }) + '\n';
    const fd = openSync(path, 'wx', 0o666);
    try {
      writeSync(fd, body);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    syncDir(dir);
    this.journal = path;
  }

  private rollBackSync(): void {
    if (this.settled) return;
    for (const m of [...this.members].reverse()) {
      try {
        rollBackMember(m);
      } catch {
        // Best effort in a signal handler; the journal stays for the next run.
        return;
      }
    }
    this.finish();
  }
}

export interface GroupMember {
  /** Absolute final path. */
  target: string;
  /** Absolute temp path (beside the target). */
  temp: string;
  /** Where the file being replaced is kept until the group settles (exists only while it is kept). */
  backup: string;
  /** Device and inode of the data written, as decimal strings (so a foreign file is never removed). */
  dev: string;
  ino: string;
  committed: boolean;
}

export interface JournalEntry {
  target: string;
  temp: string;
  backup: string;
  dev: string;
  ino: string;
}

function journalEntry(m: GroupMember): JournalEntry {
  return { target: basename(m.target), temp: basename(m.temp), backup: basename(m.backup), dev: m.dev, ino: m.ino };
}

/**
 * Puts a member's directory entries back as they were before its commit. Idempotent, and correct
 * at every point of `publish` (also after a crash): the target is ours only if it has our inode.
 */
export function rollBackMember(m: Pick<GroupMember, 'target' | 'temp' | 'backup' | 'dev' | 'ino'>): void {
  const t = lstatOrNull(m.target);
  const ours = t !== null && String(t.dev) === m.dev && String(t.ino) === m.ino;
  if (lstatOrNull(m.backup)) {
    // The backup is a link to the replaced file: put it back over ours, or drop it when the target
    // is still that file.
    if (ours || t === null) renameSync(m.backup, m.target);
    else unlinkSync(m.backup);
  } else if (ours) {
    unlinkSync(m.target);
  }
  removeQuietly(m.temp);
}

/** Like FileSink's publish: `link` refuses an existing target atomically; without hard links, check then rename. */
function publishNoClobber(m: GroupMember): void {
  try {
    linkSync(m.temp, m.target);
  } catch (e) {
    const code = errno(e);
    if (code === 'EEXIST') throw e;
    if (!['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS', 'EMLINK', 'EXDEV'].includes(code ?? '')) throw e;
    if (lstatOrNull(m.target)) throw Object.assign(new Error(`${m.target} already exists`), { code: 'EEXIST' });
    renameSync(m.temp, m.target);
    return;
  }
  unlinkSync(m.temp);
}

function linkSyncOrRename(from: string, to: string): void {
  try {
    linkSync(from, to);
  } catch (e) {
    if (!['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS', 'EMLINK', 'EXDEV'].includes(errno(e) ?? '')) throw e;
    renameSync(from, to);
  }
}

function lstatOrNull(path: string): { dev: bigint; ino: bigint } | null {
  try {
    return lstatSync(path, { bigint: true });
  } catch {
    return null;
  }
}

function removeQuietly(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // Already gone.
  }
}

function syncDir(dir: string): void {
  try {
    const fd = openSync(dir, 'r');
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  } catch {
    // Best effort: some file systems refuse fsync on directories.
  }
}

function errno(e: unknown): string | undefined {
  const c = (e as { code?: unknown } | null)?.code;
  return typeof c === 'string' ? c : undefined;
}
