/**
 * The error the `ctx` services of an extension throw: an `Error` with a `code` string the
 * extension can branch on (`VALIDATION_FAILED`, `NOT_FOUND`, `EXTENSION_TIMEOUT`, ...). These
 * codes reach the extension only; one it does not catch is its failure (500 EXTENSION_ERROR).
 */
export class ExtensionServiceError extends Error {
  override name = 'ExtensionServiceError';
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}
