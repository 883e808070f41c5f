import type { PyValue } from '../pickle/values.ts';
import type { StorageTable } from './persistent.ts';

/** One pickle as the scan ran it: its value at STOP, where it ended, the globals it referenced. */
export interface CapturedRun {
  readonly value: PyValue;
  /** Offset just after STOP: in the member (ZIP) or the file (legacy). */
  readonly end: number;
  readonly globals: string[];
}

/**
 * The pickles a reader assembles, run once by the scan in the reader's configuration (its storage
 * layout, its mode's global resolver) so a convert runs each pickle once: the scan's findings
 * decide refuse or assemble, and the reader assembles these values instead of running the bytes
 * again. Only handed to a reader when the scan found nothing to refuse.
 */
export interface CapturedPickles {
  /** A ZIP's data.pkl (one run), or a legacy stream's five pickles in order. */
  readonly runs: CapturedRun[];
  /** The storages the object pickle's persistent ids named. */
  readonly storages: StorageTable;
  /** ZIP: the bytes of data.pkl the scan read (the reader compares them with the directory's size). */
  readonly memberBytes?: number;
}

/** What the scan is asked to capture, and where it leaves it. */
export interface PickleCapture {
  /** Extraction mode: the captured run resolves foreign names to placeholders, as the reader would. */
  readonly allowObjects: boolean;
  /** Filled in by the scan when it ran the pickles the reader needs. */
  pickles?: CapturedPickles;
}
