/** A problem the operator must fix before the service can start; the CLI prints its message alone. */
export class StartupError extends Error {
  override name = 'StartupError';
}
