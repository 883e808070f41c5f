/**
 * torch's float8_e4m3fn, the F8_E4M3 of safetensors: S.EEEE.MMM, exponent bias 7, subnormals,
 * no infinities, and S.1111.111 is NaN (largest finite ±448). Not MLX's decoding, which reads
 * 0x7F/0xFF as ±480 (packages/mlx/src/fp-codes.ts): FP8 checkpoints are torch's.
 */
function decode(byte: number): number {
  const sign = byte & 0x80 ? -1 : 1;
  const exponent = (byte >> 3) & 0x0f;
  const mantissa = byte & 0x07;
  if (exponent === 0x0f && mantissa === 0x07) return NaN;
  if (exponent === 0) return sign * mantissa * 2 ** -9;
  return sign * (1 + mantissa / 8) * 2 ** (exponent - 7);
}

/** Every byte's value, as float32 (each is exact in float32). */
export const E4M3FN_VALUES: Float32Array = Float32Array.from({ length: 256 }, (_, b) => decode(b));
