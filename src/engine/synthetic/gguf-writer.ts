/**
 * A minimal GGUF v3 writer: header, typed KV metadata (scalars, strings, arrays), tensor infos, and a
 * data section aligned to `general.alignment` (32 by default). The header is built in memory (it is a
 * few MB at most, even with a 150k-token vocabulary); tensor data is streamed to the file chunk by
 * chunk, so a multi-GB model never has to fit in one Buffer.
 *
 * Layout (all little-endian): "GGUF", u32 version, u64 tensor count, u64 KV count, KVs, tensor infos
 * (name, u32 n_dims, u64 ne[n_dims] innermost first, u32 ggml type, u64 offset into the data section),
 * zero padding to the alignment, then each tensor's bytes followed by zero padding to the alignment.
 */
import { type FileHandle, open } from "node:fs/promises";
import { Q4_0_BLOCK_BYTES, Q8_0_BLOCK_BYTES, QK } from "./quantize.js";

export const GGUF_VERSION = 3;
export const GGUF_DEFAULT_ALIGNMENT = 32;

/** ggml tensor types this writer knows the size of (values are ggml's `enum ggml_type`). */
export const GgmlType = { F32: 0, F16: 1, Q4_0: 2, Q8_0: 8 } as const;
export type GgmlTypeName = keyof typeof GgmlType;

const VALUE_TYPE_IDS = {
  uint8: 0,
  int8: 1,
  uint16: 2,
  int16: 3,
  uint32: 4,
  int32: 5,
  float32: 6,
  bool: 7,
  string: 8,
  array: 9,
  uint64: 10,
  int64: 11,
  float64: 12,
} as const;

export type GgufNumericType = Exclude<keyof typeof VALUE_TYPE_IDS, "bool" | "string" | "array">;

export type GgufValue =
  | { type: GgufNumericType; value: number | bigint }
  | { type: "bool"; value: boolean }
  | { type: "string"; value: string }
  | { type: "array"; itemType: GgufNumericType; values: ArrayLike<number> }
  | { type: "array"; itemType: "bool"; values: readonly boolean[] }
  | { type: "array"; itemType: "string"; values: readonly string[] };

/** Shorthand constructors for metadata values. */
export const gguf = {
  u32: (value: number): GgufValue => ({ type: "uint32", value }),
  i32: (value: number): GgufValue => ({ type: "int32", value }),
  u64: (value: number | bigint): GgufValue => ({ type: "uint64", value }),
  f32: (value: number): GgufValue => ({ type: "float32", value }),
  bool: (value: boolean): GgufValue => ({ type: "bool", value }),
  str: (value: string): GgufValue => ({ type: "string", value }),
  strings: (values: readonly string[]): GgufValue => ({ type: "array", itemType: "string", values }),
  i32s: (values: ArrayLike<number>): GgufValue => ({ type: "array", itemType: "int32", values }),
  f32s: (values: ArrayLike<number>): GgufValue => ({ type: "array", itemType: "float32", values }),
};

export interface GgufTensorInfo {
  name: string;
  /** ne[]: element counts per dimension, innermost (contiguous) first. */
  dims: readonly number[];
  type: GgmlTypeName;
}

/** Bytes a tensor of `elements` elements occupies in the given type (excluding alignment padding). */
export function ggmlTensorBytes(type: GgmlTypeName, elements: number): number {
  switch (type) {
    case "F32":
      return elements * 4;
    case "F16":
      return elements * 2;
    case "Q8_0":
    case "Q4_0":
      if (elements % QK !== 0)
        throw new RangeError(`${type} needs a multiple of ${QK} elements, got ${elements}`);
      return (elements / QK) * (type === "Q8_0" ? Q8_0_BLOCK_BYTES : Q4_0_BLOCK_BYTES);
  }
}

export function tensorElements(dims: readonly number[]): number {
  return dims.reduce((product, n) => product * n, 1);
}

function padTo(n: number, alignment: number): number {
  return Math.ceil(n / alignment) * alignment;
}

/** A little-endian byte builder that grows by doubling. */
class ByteBuilder {
  private buf = Buffer.alloc(1 << 16);
  length = 0;

  private reserve(n: number): void {
    if (this.length + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.length + n) size *= 2;
    const next = Buffer.alloc(size);
    this.buf.copy(next, 0, 0, this.length);
    this.buf = next;
  }

  u8(v: number): void {
    this.reserve(1);
    this.buf.writeUInt8(v, this.length);
    this.length += 1;
  }

  u32(v: number): void {
    this.reserve(4);
    this.buf.writeUInt32LE(v, this.length);
    this.length += 4;
  }

  u64(v: number | bigint): void {
    this.reserve(8);
    this.buf.writeBigUInt64LE(BigInt(v), this.length);
    this.length += 8;
  }

  numeric(type: GgufNumericType, v: number | bigint): void {
    const n = Number(v);
    const size = type.endsWith("64") ? 8 : type.endsWith("32") ? 4 : type.endsWith("16") ? 2 : 1;
    this.reserve(size);
    const b = this.buf;
    const o = this.length;
    switch (type) {
      case "uint8":
        b.writeUInt8(n, o);
        break;
      case "int8":
        b.writeInt8(n, o);
        break;
      case "uint16":
        b.writeUInt16LE(n, o);
        break;
      case "int16":
        b.writeInt16LE(n, o);
        break;
      case "uint32":
        b.writeUInt32LE(n, o);
        break;
      case "int32":
        b.writeInt32LE(n, o);
        break;
      case "float32":
        b.writeFloatLE(n, o);
        break;
      case "uint64":
        b.writeBigUInt64LE(BigInt(v), o);
        break;
      case "int64":
        b.writeBigInt64LE(BigInt(v), o);
        break;
      case "float64":
        b.writeDoubleLE(n, o);
        break;
    }
    this.length += size;
  }

  string(s: string): void {
    const n = Buffer.byteLength(s, "utf8");
    this.u64(n);
    this.reserve(n);
    this.buf.write(s, this.length, n, "utf8");
    this.length += n;
  }

  zeros(n: number): void {
    this.reserve(n);
    this.buf.fill(0, this.length, this.length + n);
    this.length += n;
  }

  value(v: GgufValue): void {
    this.u32(VALUE_TYPE_IDS[v.type]);
    switch (v.type) {
      case "bool":
        this.u8(v.value ? 1 : 0);
        return;
      case "string":
        this.string(v.value);
        return;
      case "array":
        this.u32(VALUE_TYPE_IDS[v.itemType]);
        this.u64(v.values.length);
        if (v.itemType === "string") for (const s of v.values) this.string(s);
        else if (v.itemType === "bool") for (const b of v.values) this.u8(b ? 1 : 0);
        else for (let i = 0; i < v.values.length; i++) this.numeric(v.itemType, v.values[i]!);
        return;
      default:
        this.numeric(v.type, v.value);
    }
  }

  bytes(): Buffer {
    return this.buf.subarray(0, this.length);
  }
}

export interface GgufWriterOptions {
  /** KV metadata in file order. `general.alignment` is added when the alignment is not the default. */
  metadata: Iterable<readonly [string, GgufValue]>;
  tensors: readonly GgufTensorInfo[];
  alignment?: number;
}

/** Serializes everything before the data section (already padded to the alignment). */
export function encodeGgufHeader(options: GgufWriterOptions): Buffer {
  const alignment = options.alignment ?? GGUF_DEFAULT_ALIGNMENT;
  const kvs = [...options.metadata];
  if (alignment !== GGUF_DEFAULT_ALIGNMENT && !kvs.some(([k]) => k === "general.alignment")) {
    kvs.push(["general.alignment", gguf.u32(alignment)]);
  }
  const out = new ByteBuilder();
  out.u32(0x46554747); // "GGUF" read as a little-endian u32
  out.u32(GGUF_VERSION);
  out.u64(options.tensors.length);
  out.u64(kvs.length);
  for (const [key, value] of kvs) {
    out.string(key);
    out.value(value);
  }
  let offset = 0;
  for (const t of options.tensors) {
    out.string(t.name);
    out.u32(t.dims.length);
    for (const n of t.dims) out.u64(n);
    out.u32(GgmlType[t.type]);
    out.u64(offset);
    offset += padTo(ggmlTensorBytes(t.type, tensorElements(t.dims)), alignment);
  }
  out.zeros(padTo(out.length, alignment) - out.length);
  return out.bytes();
}

/**
 * Streams a GGUF file: `open()` writes the header; then call `write()` with each tensor's bytes, in the
 * order of `tensors` (a chunk may not span two tensors); padding is inserted automatically; `close()`
 * checks that every tensor was written in full.
 */
export class GgufFileWriter {
  private tensorIndex = 0;
  private tensorWritten = 0;
  private position: number;
  private readonly tensorBytes: number[];
  private readonly padding: Buffer;

  private constructor(
    private readonly handle: FileHandle,
    private readonly tensors: readonly GgufTensorInfo[],
    private readonly alignment: number,
    headerBytes: number,
  ) {
    this.position = headerBytes;
    this.tensorBytes = tensors.map((t) => ggmlTensorBytes(t.type, tensorElements(t.dims)));
    this.padding = Buffer.alloc(alignment);
  }

  static async open(path: string, options: GgufWriterOptions): Promise<GgufFileWriter> {
    const header = encodeGgufHeader(options);
    const handle = await open(path, "w");
    try {
      await writeFully(handle, header, 0);
    } catch (error) {
      await handle.close();
      throw error;
    }
    return new GgufFileWriter(
      handle,
      options.tensors,
      options.alignment ?? GGUF_DEFAULT_ALIGNMENT,
      header.length,
    );
  }

  /** Total bytes of the data section (tensor bytes plus padding). */
  get dataBytes(): number {
    return this.tensorBytes.reduce((sum, n) => sum + padTo(n, this.alignment), 0);
  }

  /** The tensor the next `write()` belongs to, or undefined once all are written. */
  get currentTensor(): GgufTensorInfo | undefined {
    return this.tensors[this.tensorIndex];
  }

  async write(chunk: Uint8Array): Promise<void> {
    const tensor = this.tensors[this.tensorIndex];
    if (tensor === undefined) throw new RangeError("all tensors have already been written");
    const expected = this.tensorBytes[this.tensorIndex]!;
    if (this.tensorWritten + chunk.length > expected) {
      throw new RangeError(
        `tensor ${tensor.name}: ${this.tensorWritten + chunk.length} bytes written, expected ${expected}`,
      );
    }
    await writeFully(this.handle, chunk, this.position);
    this.position += chunk.length;
    this.tensorWritten += chunk.length;
    if (this.tensorWritten === expected) {
      const pad = padTo(expected, this.alignment) - expected;
      if (pad > 0) await writeFully(this.handle, this.padding.subarray(0, pad), this.position);
      this.position += pad;
      this.tensorIndex++;
      this.tensorWritten = 0;
    }
  }

  async close(): Promise<void> {
    const missing = this.tensors[this.tensorIndex];
    await this.handle.close();
    if (missing !== undefined) throw new Error(`GGUF closed before tensor ${missing.name} was fully written`);
  }

  /** Closes the file without checking completeness (for error paths). */
  async abort(): Promise<void> {
    await this.handle.close().catch(() => undefined);
  }
}

async function writeFully(handle: FileHandle, data: Uint8Array, position: number): Promise<void> {
  let done = 0;
  while (done < data.length) {
    const { bytesWritten } = await handle.write(data, done, data.length - done, position + done);
    done += bytesWritten;
  }
}
