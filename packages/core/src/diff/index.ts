export { diffCheckpoints, type DiffSide, type DiffOptions, type DiffResult, type TensorChange, type ChangeReason, type AliasUse } from './diff.ts';
