/** The error codes of server extensions (docs/extensions.md), with their HTTP status. */
export const extensionErrors = {
  /**
   * An extension's hook, rpc or handler failed: it threw something other than a refusal, or
   * returned a bad replacement or result. The body names none of its message or stack.
   */
  EXTENSION_ERROR: 500,
  /** An extension's rpc or before hook passed EXTENSION_TIMEOUT_MS; the operation did not run. */
  EXTENSION_TIMEOUT: 503,
};
