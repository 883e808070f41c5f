import { TensorportError } from '../errors.ts';
import type { DType } from '../dtype.ts';
import { readChunks, type ByteSource } from '../io/source.ts';
import type { Checkpoint, TensorDescriptor } from '../tensor.ts';
import { readHeader, type HeaderTensor, type SafetensorsHeader } from './header.ts';

/**
 * A lazily opened safetensors file: opening reads and validates the header (8 + N bytes) and
 * nothing else; tensor bytes are read on demand, by range.
 */

/** A tensor of a safetensors file; its bytes are a plain range of the source. */
export class SafetensorsTensor implements TensorDescriptor {
  // Two fields, the rest read from the header entry: a file may hold 100,000 of these.
  constructor(
    readonly info: HeaderTensor,
    private readonly data: DataSection,
  ) {}

  get name(): string {
    return this.info.name;
  }
  get dtype(): DType {
    return this.info.dtype;
  }
  get byteLength(): number {
    return this.info.end - this.info.begin;
  }
  get range(): { readonly source: ByteSource; readonly offset: number } {
    return { source: this.data.source, offset: this.data.start + this.info.begin };
  }

  /**
   * The dims. A dim above 2^53 (legal only in a zero-element tensor) cannot be represented as a
   * number: converting such a tensor fails here with DimensionTooLarge; `info.exactShape` has it.
   */
  get shape(): readonly number[] {
    if (this.info.exactShape) {
      throw new TensorportError('DimensionTooLarge', `tensor \`${this.name}\` has a dimension above 2^53 ([${this.info.exactShape.join(', ')}]); it cannot be converted`, { tensor: this.name });
    }
    return this.info.shape;
  }

  chunks(chunkSize?: number): AsyncIterable<Uint8Array> {
    return readChunks(this.data.source, this.data.start + this.info.begin, this.byteLength, chunkSize);
  }
}

/** The file's data section, shared by its tensors. */
interface DataSection {
  readonly source: ByteSource;
  readonly start: number;
}

export class SafetensorsFile implements Checkpoint {
  readonly format = 'safetensors' as const;
  readonly metadata: Map<string, string> | null;
  /** In data order (sorted by offset). */
  readonly tensors: SafetensorsTensor[];
  // made on the first lookup: a convert of 100,000 tensors never looks one up by name
  private byName: Map<string, SafetensorsTensor> | null = null;

  constructor(readonly source: ByteSource, readonly header: SafetensorsHeader) {
    this.metadata = header.metadata;
    const data: DataSection = { source, start: header.dataStart };
    this.tensors = header.tensors.map((t) => new SafetensorsTensor(t, data));
  }

  /** The tensor called `name`; TensorNotFound otherwise. */
  tensor(name: string): SafetensorsTensor {
    this.byName ??= new Map(this.tensors.map((t) => [t.name, t]));
    const t = this.byName.get(name);
    if (!t) throw new TensorportError('TensorNotFound', `tensor \`${name}\` not found in ${this.source.name}`, { tensor: name, path: this.source.name });
    return t;
  }

  /** All bytes of one tensor (memory: that tensor). */
  async read(name: string): Promise<Uint8Array> {
    const t = this.tensor(name);
    return this.source.read(t.range.offset, t.byteLength);
  }

  /** Bytes [start, end) of one tensor's data; RangeOutOfBounds unless 0 ≤ start ≤ end ≤ byteLength. */
  async readRange(name: string, start: number, end: number): Promise<Uint8Array> {
    const t = this.tensor(name);
    if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end) || start < 0 || end < start || end > t.byteLength) {
      throw new TensorportError('RangeOutOfBounds', `range [${start}, ${end}) is outside tensor \`${name}\` (${t.byteLength} bytes)`, { tensor: name, path: this.source.name });
    }
    return this.source.read(t.range.offset + start, end - start);
  }

  close(): Promise<void> {
    return this.source.close();
  }
}

/** Opens and validates a safetensors file; reads only the 8 + N header bytes. */
export async function openSafetensors(source: ByteSource): Promise<SafetensorsFile> {
  return new SafetensorsFile(source, await readHeader(source));
}
