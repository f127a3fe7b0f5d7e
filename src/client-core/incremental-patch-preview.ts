import {
  decodeJsonString,
  jsonStringFieldStart,
  PATCH_PREVIEW_MAX_CHARS,
  type PatchPreviewFile,
  StreamingPatchPreview,
} from "./streaming-patch.js";

/**
 * Where the patch text may begin at the latest: past this many characters of arguments without
 * the `patch` string starting, nothing is shown (the search for it would rescan them per delta).
 */
const MAX_PREFIX_CHARS = 4096;

/**
 * The preview of one `apply_patch` call's arguments as they grow (what `previewPatch` shows),
 * kept between deltas: each update decodes and parses only what is new, so a call of N
 * characters costs O(N) over all its deltas instead of O(N) per delta.
 */
export class IncrementalPatchPreview {
  private readonly preview = new StreamingPatchPreview();
  /** Where the patch string's body begins in the arguments; null until it does. */
  private start: number | null = null;
  /** How far the arguments are decoded. */
  private decoded = 0;
  private done = false;

  /** The files so far (whole lines only); grows in place. */
  get files(): readonly PatchPreviewFile[] {
    return this.preview.files;
  }

  /**
   * Takes the arguments as they are now (the previous ones plus what was written since); returns
   * whether what the preview shows changed (a file or a line was added).
   */
  update(argumentsJson: string): boolean {
    if (this.done) return false;
    if (this.start === null) {
      this.start = jsonStringFieldStart(argumentsJson.slice(0, MAX_PREFIX_CHARS), "patch");
      if (this.start === null) {
        this.done = argumentsJson.length > MAX_PREFIX_CHARS;
        return false;
      }
      this.decoded = this.start;
    }
    const cut = argumentsJson.length > PATCH_PREVIEW_MAX_CHARS;
    const json = cut ? argumentsJson.slice(0, PATCH_PREVIEW_MAX_CHARS) : argumentsJson;
    if (json.length <= this.decoded) return false;
    const piece = decodeJsonString(json, this.decoded);
    this.decoded = piece.end;
    const before = this.preview.changes;
    this.preview.push(piece.text);
    // The string ended: its last line is whole too (as previewPatch counts it).
    if (piece.complete && !cut) this.preview.end();
    if (piece.complete || cut) this.done = true;
    return this.preview.changes !== before;
  }
}
