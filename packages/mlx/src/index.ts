export * from './bitstream.ts';
export * from './affine.ts';
export { decodeFloats, encodeFloats, roundTo, wordsOf, bytesOfWords, type FloatDType } from './bytes.ts';
export * from './fp.ts';
export * from './config.ts';
export * from './layers.ts';
