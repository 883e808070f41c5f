/**
 * Hard bounds on what a pickle may make the interpreter do. Every one is far above what real
 * checkpoints reach (a 100 000-tensor state dict: stack ~2 000, MARK depth 3, nesting < 10, memo
 * ~30 entries per tensor) and each one stops a known attack before it costs memory or time.
 */
export interface PickleLimits {
  /** Values on the stack (100k nested EMPTY_LISTs push 100k). */
  maxStack: number;
  /** Open MARKs. */
  maxMarks: number;
  /** Container nesting depth: deep structures crash recursive consumers. */
  maxNesting: number;
  /** Distinct memo keys (LONG_BINPUT 0xFFFFFFFF needs only one: the memo is a Map). */
  maxMemo: number;
  /** Items in one list, tuple, dict or set. */
  maxItems: number;
  /** Bytes of one integer (LONG1 reaches 255; LONG4 could ask for 2 GB). */
  maxIntBytes: number;
  /** Opcodes executed plus items moved off the stack: total work, linear in the input. */
  maxWork: number;
}

export const DEFAULT_LIMITS: Readonly<PickleLimits> = {
  maxStack: 1 << 20,
  maxMarks: 1000,
  maxNesting: 1000,
  maxMemo: 1 << 24,
  maxItems: 1 << 24,
  maxIntBytes: 1024,
  maxWork: 1 << 28,
};
