import type autocannon from 'autocannon';
import { type RestWindow, restContender } from '../realtime/rest-load.js';
import type { Contender } from '../realtime/rounds.js';
import type { Atrium } from '../realtime/servers.js';
import { type Latency, latency } from '../worlds/harness.js';

/**
 * Measurement 1: join-and-leave cycles. Each connection of the load repeats `POST
 * /api/parties/{id}/join` then `POST /api/parties/{id}/leave`, each cycle as a joiner and into a
 * party taken from free lists and given back when the leave is answered: a joiner is in one cycle
 * at a time, and a party has one joiner at a time, so every join finds room. A cycle cut off at
 * the end of a window never gives its joiner and party back (the joiner may still be in the
 * party), so no later cycle meets what it left.
 */

export type PartyChange = 'join' | 'leave';

/** One join or leave through REST; answers its status once the body is read. */
export async function partyRequest(
  httpPort: number,
  token: string,
  partyId: string,
  change: PartyChange,
): Promise<number> {
  const response = await fetch(`http://127.0.0.1:${httpPort}/api/parties/${partyId}/${change}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}` },
  });
  await response.arrayBuffer();
  return response.status;
}

/** A join then a leave is one operation: the figures are cycles. */
export function joinLeaveCycles(
  atrium: Atrium,
  tokens: readonly string[],
  partyIds: readonly string[],
): Contender<RestWindow> {
  const freeTokens = [...tokens];
  const freeParties = [...partyIds];
  type Cycle = { token?: string; party?: string };
  const request = (change: PartyChange) => (request: autocannon.Request, context: object) => {
    const cycle = context as Cycle;
    if (change === 'join') {
      cycle.token = freeTokens.shift();
      cycle.party = freeParties.shift();
      if (!cycle.token || !cycle.party) throw new Error('the free joiners or parties ran out');
    }
    return {
      ...request,
      path: `/api/parties/${cycle.party}/${change}`,
      headers: { ...request.headers, authorization: `Bearer ${cycle.token}` },
    };
  };
  const requests = restContender(
    'POST join, POST leave',
    `http://127.0.0.1:${atrium.httpPort}/`,
    atrium.pid,
    {},
    {
      sequence: [
        { setupRequest: request('join') },
        {
          setupRequest: request('leave'),
          onResponse: (_status, _body, context) => {
            const { token, party } = context as Cycle;
            freeTokens.push(token as string);
            freeParties.push(party as string);
          },
        },
      ],
    },
  );
  return {
    name: 'POST join, POST leave',
    async window(seconds) {
      const figures = await requests.window(seconds);
      return { ...figures, perSecond: figures.perSecond / 2 };
    },
  };
}

/**
 * The two requests' latency unloaded: one client joining then leaving the parties in turn, one
 * request at a time, for `seconds` (the rounds' 50 connections measure throughput, and their p99
 * is mostly the queue). Every answer must be a 2xx.
 */
export async function joinLeaveAlone(
  httpPort: number,
  token: string,
  partyIds: readonly string[],
  seconds: number,
): Promise<Record<PartyChange, Latency>> {
  const samples: Record<PartyChange, number[]> = { join: [], leave: [] };
  for (let k = 0, end = performance.now() + seconds * 1000; performance.now() < end; k++) {
    for (const change of ['join', 'leave'] as const) {
      const started = performance.now();
      const status = await partyRequest(httpPort, token, partyIds[k % partyIds.length] as string, change);
      if (status >= 300) throw new Error(`a party ${change} answered ${status}`);
      samples[change].push(performance.now() - started);
    }
  }
  return { join: latency(samples.join), leave: latency(samples.leave) };
}
