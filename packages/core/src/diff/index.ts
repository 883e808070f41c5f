export { diffCheckpoints, type DiffSide, type DiffOptions, type DiffResult, type TensorChange, type ChangeReason, type AliasUse, type TensorErrorSummary } from './diff.ts';
