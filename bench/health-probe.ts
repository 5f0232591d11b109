import { setTimeout as sleep } from 'node:timers/promises';

export interface HealthProbe {
  /** Stops after the request in flight; answers how many were sent and the longest wait. */
  stop(): Promise<{ probes: number; worstMs: number }>;
}

/**
 * Sends GET `url` (a /healthz, which does no work) one after another, `intervalMs` apart, until
 * stopped: its longest wait is how long the server's event loop was blocked meanwhile. A probe
 * sent a few times per turn costs the server CPU; an interval keeps it out of the way.
 */
export function probeHealth(url: string, intervalMs = 0): HealthProbe {
  const result = { probes: 0, worstMs: 0 };
  let running = true;
  const probing = (async () => {
    while (running) {
      const sent = performance.now();
      const response = await fetch(url);
      await response.arrayBuffer();
      if (!response.ok) throw new Error(`GET ${url} answered ${response.status}`);
      result.worstMs = Math.max(result.worstMs, performance.now() - sent);
      result.probes++;
      if (intervalMs > 0) await sleep(intervalMs);
    }
  })();
  return {
    async stop() {
      running = false;
      await probing;
      return result;
    },
  };
}
