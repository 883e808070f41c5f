export * from './bitstream.ts';
export * from './affine.ts';
export { decodeFloats, encodeFloats, roundTo, wordsOf, bytesOfWords, type FloatDType } from './bytes.ts';
