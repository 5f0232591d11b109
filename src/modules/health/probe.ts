/** How long /readyz and the dependency gauges give the database or the KV store to answer. */
const CHECK_TIMEOUT_MS = 2000;

/** Whether a dependency's check passed within the bound. */
export async function probe(check: () => Promise<void>): Promise<'ok' | 'unavailable'> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('timeout')), CHECK_TIMEOUT_MS);
  });
  try {
    await Promise.race([check(), timeout]);
    return 'ok';
  } catch {
    return 'unavailable';
  } finally {
    clearTimeout(timer);
  }
}
