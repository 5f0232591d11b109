import cluster, { type Worker } from 'node:cluster';
import { AggregatorRegistry, Registry } from 'prom-client';
import { isWorkerMessage, tellSupervisor, type WorkerMessage } from './worker-messages.js';

/**
 * In worker mode `/metrics` describes the whole host, whichever worker the scrape reached: that
 * worker asks the supervisor, which gathers every worker's registry over the cluster's IPC
 * channel and merges them with prom-client's AggregatorRegistry (counters and histograms summed
 * by label set, gauges by the rule each metric declares; docs/operations.md).
 */

/** prom-client gives up on a silent worker after 5 s, so the supervisor always answers before this. */
const ANSWER_TIMEOUT_MS = 10_000;

/** Supervisor side: answers each worker's request with the merged metrics of every worker. */
export function serveHostMetrics(): void {
  const aggregator = new AggregatorRegistry();
  cluster.on('message', (worker: Worker, message: unknown) => {
    if (!isWorkerMessage(message) || message.type !== 'atrium:metrics-request') return;
    const { id } = message;
    const answer = (reply: WorkerMessage) => {
      if (worker.isConnected()) worker.send(reply, undefined, () => {});
    };
    aggregator.clusterMetrics().then(
      (text) => answer({ type: 'atrium:metrics', id, text }),
      (error: Error) => answer({ type: 'atrium:metrics', id, error: error.message }),
    );
  });
}

/**
 * Worker side, from the worker's first moment: prom-client's listener answers the supervisor's
 * requests, with an empty registry until the app's is given (a worker still starting would
 * otherwise leave every scrape waiting for it). Returns the function that gives it.
 */
export function contributeToHostMetrics(): (registries: Registry[]) => void {
  new AggregatorRegistry();
  AggregatorRegistry.setRegistries([new Registry()]);
  return (registries) => AggregatorRegistry.setRegistries(registries);
}

const pending = new Map<number, { settle: (reply: WorkerMessage) => void }>();
let nextRequestId = 0;

/** The whole host's metrics as the supervisor merged them, in the Prometheus text format. */
export function hostMetricsText(): Promise<string> {
  if (nextRequestId === 0) process.on('message', settleRequest);
  const id = ++nextRequestId;
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      pending.delete(id);
      reject(new Error('the supervisor did not answer'));
    }, ANSWER_TIMEOUT_MS);
    pending.set(id, {
      settle: (reply) => {
        clearTimeout(timer);
        pending.delete(id);
        if (reply.type !== 'atrium:metrics') return;
        if ('text' in reply) resolve(reply.text);
        else reject(new Error(reply.error));
      },
    });
    tellSupervisor({ type: 'atrium:metrics-request', id });
  });
}

function settleRequest(message: unknown): void {
  if (isWorkerMessage(message) && message.type === 'atrium:metrics') pending.get(message.id)?.settle(message);
}
