/**
 * F32 -> F16 / Q8_0 / Q4_0 conversion, bit-exact with ggml's reference code (`ggml_compute_fp32_to_fp16`
 * in ggml-impl.h, `quantize_row_q8_0_ref` / `quantize_row_q4_0_ref` in ggml-quants.c), so a synthetic
 * file is byte-identical to what `llama-quantize` would have written from the same F32 weights.
 *
 * Every arithmetic step that is single precision in C goes through `Math.fround`: a float op computed in
 * double and rounded once to float gives the IEEE float result for + - * / (double has > 2p+2 bits).
 */

/** Elements per quantization block, for both Q8_0 and Q4_0. */
export const QK = 32;
/** Bytes per Q8_0 block: f16 scale + 32 int8 values. */
export const Q8_0_BLOCK_BYTES = 2 + QK;
/** Bytes per Q4_0 block: f16 scale + 16 bytes of nibbles. */
export const Q4_0_BLOCK_BYTES = 2 + QK / 2;

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);
const SCALE_TO_INF = 2 ** 112;
const SCALE_TO_ZERO = 2 ** -110;

/** IEEE half-precision bits of `value`, round-to-nearest-even, exactly as ggml converts it. */
export function fp32ToFp16Bits(value: number): number {
  const f = Math.fround(value);
  let base = Math.fround(Math.fround(Math.abs(f) * SCALE_TO_INF) * SCALE_TO_ZERO);
  f32[0] = f;
  const w = u32[0]!;
  const shl1 = (w << 1) >>> 0;
  const sign = (w & 0x80000000) >>> 0;
  let bias = (shl1 & 0xff000000) >>> 0;
  if (bias < 0x71000000) bias = 0x71000000;
  u32[0] = (bias >>> 1) + 0x07800000;
  base = Math.fround(f32[0]! + base);
  f32[0] = base;
  const bits = u32[0]!;
  const nonsign = ((bits >>> 13) & 0x7c00) + (bits & 0x0fff);
  return (sign >>> 16) | (shl1 > 0xff000000 ? 0x7e00 : nonsign);
}

/** The float value of half-precision `bits` (exact). */
export function fp16BitsToFp32(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1;
  const exponent = (bits >>> 10) & 0x1f;
  const mantissa = bits & 0x3ff;
  if (exponent === 0) return sign * mantissa * 2 ** -24;
  if (exponent === 0x1f) return mantissa === 0 ? sign * Number.POSITIVE_INFINITY : Number.NaN;
  return sign * (1 + mantissa / 1024) * 2 ** (exponent - 15);
}

/**
 * C `roundf` (half away from zero) of a float |x| <= 128, without a data-dependent branch (random signs
 * would mispredict half the time): floor(x + 0.5) via the always-positive x + 128.5 (exact in double
 * for such x), minus one for negative exact halves, where floor rounds toward +infinity instead.
 */
function roundHalfAway(x: number): number {
  const t = x + 128.5;
  let q = t | 0;
  if (q === t && x < 0) q--;
  return q - 128;
}

function checkBlocks(count: number): void {
  if (count % QK !== 0) throw new RangeError(`element count ${count} is not a multiple of ${QK}`);
}

interface Float16ArrayLike {
  set(values: ArrayLike<number>): void;
}
type Float16ArrayConstructor = new (
  buffer: ArrayBufferLike,
  byteOffset: number,
  length: number,
) => Float16ArrayLike;
/** Native Float16Array (Node 24+): IEEE round-to-nearest-even, identical to ggml for finite values. */
const NativeFloat16Array = (globalThis as { Float16Array?: Float16ArrayConstructor }).Float16Array;
const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/**
 * Writes `count` elements of `src` (from `srcOffset`) as little-endian F16 into `dst` at `dstOffset`.
 * Returns the number of bytes written (`2 * count`).
 */
export function convertToF16(
  src: Float32Array,
  dst: Uint8Array,
  dstOffset = 0,
  count = src.length,
  srcOffset = 0,
): number {
  const byteOffset = dst.byteOffset + dstOffset;
  if (NativeFloat16Array !== undefined && LITTLE_ENDIAN && byteOffset % 2 === 0) {
    new NativeFloat16Array(dst.buffer, byteOffset, count).set(src.subarray(srcOffset, srcOffset + count));
    return count * 2;
  }
  let o = dstOffset;
  for (let i = 0; i < count; i++) {
    const h = fp32ToFp16Bits(src[srcOffset + i]!);
    dst[o] = h & 0xff;
    dst[o + 1] = h >>> 8;
    o += 2;
  }
  return o - dstOffset;
}

/**
 * Q8_0 (`quantize_row_q8_0_ref`): per block of 32, d = max|x| / 127 stored as f16, then 32 int8
 * `roundf(x / d)` (computed as x * (1/d) in float, like ggml). Returns the number of bytes written.
 */
export function quantizeQ8_0(
  src: Float32Array,
  dst: Uint8Array,
  dstOffset = 0,
  count = src.length,
  srcOffset = 0,
): number {
  checkBlocks(count);
  let o = dstOffset;
  for (let b = srcOffset, end = srcOffset + count; b < end; b += QK) {
    let amax = 0;
    for (let j = 0; j < QK; j++) {
      const a = Math.abs(src[b + j]!);
      if (a > amax) amax = a;
    }
    const d = Math.fround(amax / 127);
    const id = d !== 0 ? Math.fround(1 / d) : 0;
    const h = fp32ToFp16Bits(d);
    dst[o] = h & 0xff;
    dst[o + 1] = h >>> 8;
    for (let j = 0; j < QK; j++) {
      dst[o + 2 + j] = roundHalfAway(Math.fround(src[b + j]! * id)) & 0xff;
    }
    o += Q8_0_BLOCK_BYTES;
  }
  return o - dstOffset;
}

/**
 * Q4_0 (`quantize_row_q4_0_ref`): per block of 32, `max` = the element of largest magnitude (first one
 * on ties, sign kept), d = max / -8 stored as f16, q = min(15, trunc(x * (1/d) + 8.5)); byte j holds
 * element j in its low nibble and element j + 16 in its high nibble. Returns the number of bytes written.
 */
export function quantizeQ4_0(
  src: Float32Array,
  dst: Uint8Array,
  dstOffset = 0,
  count = src.length,
  srcOffset = 0,
): number {
  checkBlocks(count);
  let o = dstOffset;
  for (let b = srcOffset, end = srcOffset + count; b < end; b += QK) {
    let amax = 0;
    let max = 0;
    for (let j = 0; j < QK; j++) {
      const v = src[b + j]!;
      const a = Math.abs(v);
      if (amax < a) {
        amax = a;
        max = v;
      }
    }
    const d = Math.fround(max / -8);
    const id = d !== 0 ? Math.fround(1 / d) : 0;
    const h = fp32ToFp16Bits(d);
    dst[o] = h & 0xff;
    dst[o + 1] = h >>> 8;
    for (let j = 0; j < QK / 2; j++) {
      const x0 = Math.fround(src[b + j]! * id);
      const x1 = Math.fround(src[b + QK / 2 + j]! * id);
      // x * (1/d) is in [-8, 8], so x + 8.5 > 0 and `| 0` is the C float -> int8 truncation.
      const q0 = Math.min(15, Math.fround(x0 + 8.5) | 0);
      const q1 = Math.min(15, Math.fround(x1 + 8.5) | 0);
      dst[o + 2 + j] = q0 | (q1 << 4);
    }
    o += Q4_0_BLOCK_BYTES;
  }
  return o - dstOffset;
}
