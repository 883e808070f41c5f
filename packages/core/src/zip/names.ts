import { TensorportError } from '../errors.ts';

/** Bytes 0x80–0xFF of code page 437, the ZIP default when flag bit 11 (UTF-8) is clear. */
const CP437_HIGH =
  'ÇüéâäàåçêëèïîìÄÅÉæÆôöòûùÿÖÜ¢£¥₧ƒáíóúñÑªº¿⌐¬½¼¡«»░▒▓│┤╡╢╖╕╣║╗╝╜╛┐└┴┬├─┼╞╟╚╔╩╦╠═╬╧╨╤╥╙╘╒╓╫╪┘┌█▄▌▐▀' +
  'αßΓπΣσµτΦΘΩδ∞φε∩≡±≥≤⌠⌡÷≈°∙·√ⁿ²■\u00a0';

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Decodes a member name the way CPython's zipfile does (UTF-8 when flagged, else CP437). */
export function decodeName(bytes: Uint8Array, utf8Flag: boolean, offset: number): string {
  if (utf8Flag) {
    try {
      return utf8.decode(bytes);
    } catch (cause) {
      throw new TensorportError('ZipInvalidName', 'member name is flagged UTF-8 but is not valid UTF-8', { offset, cause });
    }
  }
  let s = '';
  for (const b of bytes) s += b < 0x80 ? String.fromCharCode(b) : CP437_HIGH[b - 0x80]!;
  return s;
}

/** UTF-8 bytes and whether flag bit 11 is needed (numpy sets it only for non-ASCII names). */
export function encodeName(name: string): { bytes: Uint8Array; utf8: boolean } {
  const bytes = new TextEncoder().encode(name);
  if (bytes.byteLength > 0xffff) {
    throw new TensorportError('ZipInvalidName', `member name is ${bytes.byteLength} bytes; ZIP allows 65535`, { tensor: name.slice(0, 64) });
  }
  return { bytes, utf8: bytes.some((b) => b >= 0x80) };
}
