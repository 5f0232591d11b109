import { createRequire } from 'node:module';

/**
 * ioredis's pipelines without their own `length` accessor.
 *
 * ioredis (5.x and 6.0) gives every Pipeline, in its constructor, an own `length` getter made for
 * that pipeline. With enableAutoPipelining each event-loop turn's commands to a server are one
 * pipeline, so a node makes thousands a second. V8 cannot share a hidden class between objects
 * whose accessors differ: each pipeline leaves hidden-class data that old-generation structures
 * point at until a full collection, and through its getter's closure that data holds the pipeline,
 * its commands and their replies. So the scavenger keeps every pipeline of the last interval and
 * promotes it, and the old generation fills with them. Measured on Node 20 with one client
 * awaiting MGET in a loop: 1.67 MiB promoted per scavenge, scavenges of 3.2 ms and a full
 * collection every 0.8 s; with `length` on the prototype, nothing promoted, 0.6 ms scavenges, no
 * full collection and 27% more commands per second (docs/performance.md, "Every pipeline
 * promoted").
 *
 * `useLeanPipelines` makes ioredis build its pipelines here (its transaction support looks the
 * class up on the Pipeline module at each `pipeline()` and `multi()`): the constructor's work as
 * ioredis 5.11 does it, with `length` read through one getter on the prototype.
 * test/platform/lean-pipeline.test.ts compares the instances with ioredis's own, so an upgrade
 * that changes the constructor fails there.
 */

interface PipelineClient {
  constructor: { name: string };
  isCluster?: boolean;
  options: unknown;
  scriptsSet: Record<string, unknown>;
  addedBuiltinSet: Set<string>;
  [command: string]: unknown;
}

type PipelineConstructor = (new (redis: PipelineClient) => object) & { lean?: true };

const pipelineModule = createRequire(import.meta.url)('ioredis/built/Pipeline.js') as {
  default: PipelineConstructor;
};

/** ioredis's own Pipeline class, as the module exported it before `useLeanPipelines`. */
export const IOREDIS_PIPELINE: PipelineConstructor = pipelineModule.default;

/** Makes every pipeline ioredis builds from now on a lean one; calling it again does nothing. */
export function useLeanPipelines(): void {
  if (pipelineModule.default.lean) return;
  const prototype = IOREDIS_PIPELINE.prototype;
  Object.defineProperty(prototype, 'length', {
    get(this: { _queue: unknown[] }) {
      return this._queue.length;
    },
    configurable: true,
  });
  const lean = function LeanPipeline(redis: PipelineClient) {
    const pipeline = Object.create(prototype);
    // Commander's constructor, then Pipeline's, in their order.
    pipeline.options = {};
    pipeline.scriptsSet = {};
    pipeline.addedBuiltinSet = new Set();
    pipeline.redis = redis;
    pipeline.isPipeline = true;
    pipeline.replyPending = 0;
    pipeline._queue = [];
    pipeline._result = [];
    pipeline._transactions = 0;
    pipeline._shaToScript = {};
    pipeline.isCluster = redis.constructor.name === 'Cluster' || redis.isCluster;
    pipeline.options = redis.options;
    for (const name of Object.keys(redis.scriptsSet)) {
      const script = redis.scriptsSet[name] as { sha: string };
      pipeline._shaToScript[script.sha] = script;
      pipeline[name] = redis[name];
      pipeline[`${name}Buffer`] = redis[`${name}Buffer`];
    }
    for (const name of redis.addedBuiltinSet) {
      pipeline[name] = redis[name];
      pipeline[`${name}Buffer`] = redis[`${name}Buffer`];
    }
    pipeline.promise = new Promise((resolve, reject) => {
      pipeline.resolve = resolve;
      pipeline.reject = reject;
    });
    return pipeline;
  } as unknown as PipelineConstructor;
  lean.prototype = prototype;
  lean.lean = true;
  pipelineModule.default = lean;
}
