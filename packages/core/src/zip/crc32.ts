/**
 * CRC-32 (ISO-HDLC, the ZIP and zlib checksum), slice-by-8 so the browser path keeps up with
 * disk reads. Node callers can pass `zlib.crc32` through a codec instead (about 10x faster).
 */
const TABLES = (() => {
  const t = new Uint32Array(256 * 8);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  for (let n = 0; n < 256; n++) {
    let c = t[n]!;
    for (let k = 1; k < 8; k++) {
      c = t[c & 0xff]! ^ (c >>> 8);
      t[k * 256 + n] = c >>> 0;
    }
  }
  return t;
})();

/** Continues `crc` (the value returned for the previous bytes, 0 to start) over `data`. */
export function crc32(data: Uint8Array, crc = 0): number {
  const t = TABLES;
  let c = ~crc >>> 0;
  let i = 0;
  const n = data.byteLength;
  const end8 = n - (n % 8);
  for (; i < end8; i += 8) {
    const a = (data[i]! | (data[i + 1]! << 8) | (data[i + 2]! << 16) | (data[i + 3]! << 24)) ^ c;
    const b = data[i + 4]! | (data[i + 5]! << 8) | (data[i + 6]! << 16) | (data[i + 7]! << 24);
    c =
      t[7 * 256 + (a & 0xff)]! ^ t[6 * 256 + ((a >>> 8) & 0xff)]! ^ t[5 * 256 + ((a >>> 16) & 0xff)]! ^ t[4 * 256 + (a >>> 24)]! ^
      t[3 * 256 + (b & 0xff)]! ^ t[2 * 256 + ((b >>> 8) & 0xff)]! ^ t[256 + ((b >>> 16) & 0xff)]! ^ t[b >>> 24]!;
  }
  for (; i < n; i++) c = t[(c ^ data[i]!) & 0xff]! ^ (c >>> 8);
  return ~c >>> 0;
}
