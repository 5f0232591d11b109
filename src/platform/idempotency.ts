/**
 * Answers a service replays for a retried write (an Idempotency-Key seen before): the REST route
 * marks them with `Idempotent-Replayed: true`. A mark rather than a wrapper, so the service keeps
 * returning the answer itself and the frame twin acks it unchanged.
 */
const replays = new WeakSet<object>();

export function markReplayed<T extends object>(answer: T): T {
  replays.add(answer);
  return answer;
}

export function wasReplayed(answer: unknown): boolean {
  return typeof answer === 'object' && answer !== null && replays.has(answer);
}
