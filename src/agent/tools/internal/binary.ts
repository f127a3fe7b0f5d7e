/** Bytes inspected for a NUL, as git does to tell binary files from text. */
const SNIFF_BYTES = 8000;

/** True when `content` looks binary: a NUL byte near the start (git's heuristic). */
export function looksBinary(content: Uint8Array): boolean {
  return content.subarray(0, SNIFF_BYTES).includes(0);
}
