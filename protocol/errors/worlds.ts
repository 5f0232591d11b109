/** The error codes of world content (chunks and their revisions), with their HTTP status. */
export const worldErrors = {
  /** A chunk write without `If-Match` or `If-None-Match: *` (editors must say what they overwrite). */
  PRECONDITION_REQUIRED: 428,
  /** A write's expected revision is not the current one; the body carries the current revision. */
  REVISION_CONFLICT: 409,
  /** A chunk payload that does not decode with the chunk codec; the body names the byte `offset`. */
  INVALID_CHUNK: 422,
};
