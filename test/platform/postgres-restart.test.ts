import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TokenResponse } from '../../protocol/auth.js';
import type { App } from '../../src/app.js';
import { configFrom } from '../../src/config.js';
import { bearer, registerUser } from '../helpers/accounts.js';
import { buildCheckedApp } from '../helpers/app.js';
import { PostgresServer, postgresBinDir } from '../helpers/postgres-server.js';

/**
 * PostgreSQL crashing and coming back (an immediate shutdown, then crash recovery on the same
 * port) while direct messages are being sent at a steady rate: the sends answer 503 meanwhile,
 * never a 500 or a hang, the service heals without a restart, and every message it acknowledged
 * is in the database once. The sending pauses before the restart until every send of the outage
 * is answered: each must be answered while PostgreSQL is still down, by the service's own
 * timeouts (1 s), not by the database coming back. The server is a private one, so the test runs
 * in both CI passes wherever the PostgreSQL binaries are installed.
 */

/** How long the sends of the outage get to be answered before PostgreSQL is started again. */
const OUTAGE_ANSWERS_DEADLINE_MS = 30_000;
/** One send every this many milliseconds, not waiting for the previous answer. */
const SEND_EVERY_MS = 20;

interface Send {
  status: number;
  /** The stored message's id, on a 201. */
  id?: string;
  /** Whether the send started after PostgreSQL had gone and before it was started again. */
  duringOutage: boolean;
  /** Whether it was answered before PostgreSQL was started again. */
  answeredWhileDown: boolean;
}

describe.skipIf(!postgresBinDir())(
  'PostgreSQL restarted under a steady write load (needs PostgreSQL binaries)',
  () => {
    let server: PostgresServer;
    let app: App;
    let dataDir: string;
    let sender: TokenResponse;
    let peer: TokenResponse;
    const sends: Send[] = [];
    let databaseDown = false;
    let outageSendsStarted = 0;
    let sending: NodeJS.Timeout | undefined;
    const inFlight = new Set<Promise<void>>();

    const sendOne = () => {
      const duringOutage = databaseDown;
      if (duringOutage) outageSendsStarted++;
      const done = app.http
        .inject({
          method: 'POST',
          url: `/api/chat/dm/${peer.user.id}/messages`,
          headers: bearer(sender.access_token),
          payload: { body: 'Meet at the fountain after the storm.' },
        })
        .then((response) => {
          const send: Send = { status: response.statusCode, duringOutage, answeredWhileDown: databaseDown };
          if (response.statusCode === 201) send.id = (response.json() as { id: string }).id;
          sends.push(send);
        })
        .finally(() => inFlight.delete(done));
      inFlight.add(done);
    };

    /** Polls the answers until `done` holds or `deadlineMs` passed; answers whether it held. */
    const pollUntil = async (done: () => boolean, deadlineMs: number) => {
      const deadline = performance.now() + deadlineMs;
      while (!done()) {
        if (performance.now() > deadline) return false;
        await new Promise((resolve) => setTimeout(resolve, SEND_EVERY_MS));
      }
      return true;
    };

    /** Resolves once `count` more sends have been answered with `status`. */
    const answered = async (status: number, count: number) => {
      const answeredWith = () => sends.filter((send) => send.status === status).length;
      const target = answeredWith() + count;
      if (!(await pollUntil(() => answeredWith() >= target, 30_000)))
        throw new Error(`fewer than ${count} more sends answered ${status}`);
    };

    /** Resolves once every send started during the outage is answered, or at the deadline (checked below). */
    const outageSendsAnswered = () =>
      pollUntil(
        () => sends.filter((send) => send.duringOutage).length >= outageSendsStarted,
        OUTAGE_ANSWERS_DEADLINE_MS,
      );

    beforeAll(async () => {
      server = await PostgresServer.start();
      dataDir = await mkdtemp(join(tmpdir(), 'atrium-pg-restart-'));
      app = await buildCheckedApp(
        configFrom({
          DATABASE_URL: server.url,
          DATA_DIR: dataDir,
          HTTP_PORT: 0,
          WS_PORT: 0,
          LOG_LEVEL: 'silent',
          DATABASE_QUERY_TIMEOUT_MS: 1000,
          DATABASE_CONNECT_TIMEOUT_MS: 1000,
          DM_RATE_LIMIT_COUNT: 100_000,
        }),
      );
      sender = await registerUser(app);
      peer = await registerUser(app);

      sending = setInterval(sendOne, SEND_EVERY_MS);
      await answered(201, 20);
      await server.stop();
      // Only sends started between the crash and the restart count as the outage's.
      databaseDown = true;
      await answered(503, 20);
      clearInterval(sending);
      await outageSendsAnswered();
      databaseDown = false;
      await server.start();
      sending = setInterval(sendOne, SEND_EVERY_MS);
      await answered(201, 20);
      clearInterval(sending);
      sending = undefined;
      await Promise.all(inFlight);
    }, 90_000);

    afterAll(async () => {
      if (sending) clearInterval(sending);
      await Promise.all(inFlight);
      await app?.close();
      await server?.destroy();
      if (dataDir) await rm(dataDir, { recursive: true, force: true });
    });

    it('every send is answered 201 or 503 SERVICE_UNAVAILABLE, never a 500', () => {
      const statuses = new Set(sends.map((send) => send.status));
      expect([...statuses].sort()).toEqual([201, 503]);
    });

    it('every send started while PostgreSQL was down is answered while it is still down, none waits for it', () => {
      const answeredWhileDown = sends.filter((send) => send.duringOutage && send.answeredWhileDown);
      expect(outageSendsStarted).toBeGreaterThan(0);
      expect(answeredWhileDown.length).toBe(outageSendsStarted);
    });

    it('sends started while PostgreSQL was down are refused, none acknowledged', () => {
      const duringOutage = sends.filter((send) => send.duringOutage);
      expect(duringOutage.length).toBeGreaterThan(0);
      expect(duringOutage.filter((send) => send.status === 201)).toEqual([]);
    });

    it('the service heals by itself once PostgreSQL is back: sends are acknowledged again', () => {
      const lastOutageSend = sends.findLastIndex((send) => send.duringOutage);
      expect(sends.slice(lastOutageSend + 1).some((send) => send.status === 201)).toBe(true);
    });

    it('every acknowledged message is in the database exactly once', async () => {
      const acknowledged = sends.flatMap((send) => (send.id ? [send.id] : []));
      const client = new pg.Client(server.url);
      await client.connect();
      try {
        const { rows } = await client.query<{ id: string; copies: number }>(
          'select id::text, count(*)::int as copies from messages where id = any($1::uuid[]) group by id',
          [acknowledged],
        );
        expect(rows.length).toBe(acknowledged.length);
        expect(rows.filter((row) => row.copies !== 1)).toEqual([]);
      } finally {
        await client.end();
      }
    });
  },
);
