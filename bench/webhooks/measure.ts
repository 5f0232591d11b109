import { cp } from 'node:fs/promises';
import { join } from 'node:path';
import { newSecret } from '../../src/modules/webhooks/signing.js';
import { newId } from '../../src/platform/ids.js';
import type { Backend } from '../backends.js';
import { POOL_SIZE } from '../datapath/measure.js';
import { postgresVersion } from '../groups/measure.js';
import { progress } from '../realtime/progress.js';
import type { RestWindow } from '../realtime/rest-load.js';
import {
  type ContenderRounds,
  interleavedRounds,
  type RoundSchedule,
  WARMUP_SECONDS,
  type WindowFigures,
} from '../realtime/rounds.js';
import {
  type Atrium,
  type BareServer,
  startAtrium,
  startBareServer,
  stopAtrium,
} from '../realtime/servers.js';
import { type TokenIssuer, tokenIssuer } from '../realtime/tokens.js';
import { Api, type Latency, WORLDS_ENV } from '../worlds/harness.js';
import { withBackend } from '../worlds/measure.js';
import { bareDeliveries, serviceDeliveries } from './deliveries.js';
import {
  bareTarget,
  checkInbox,
  inboxRequests,
  oneClient,
  READS,
  type Read,
  serviceTarget,
} from './inbox.js';
import { type LagResults, measureLag } from './lag.js';
import { NOTIFICATIONS, seedWebhooks, type WebhooksSeed } from './seed.js';

/**
 * One backend's measurements on one service instance, its database seeded first (seed.ts): the
 * delivery job draining the backlog beside the bare script, in rounds; on Postgres the outbox lag
 * (the bench records events in the service's database, which the embedded one keeps in the
 * service's process); the inbox reads beside bare-inbox.ts, on the same database (Postgres) or a
 * copy of it taken before the service started (embedded: PGlite's files belong to one process).
 */

/** Deliveries seeded per second of the service's windows: more than it delivered in any run. */
const SEEDED_PER_SECOND = 3000;

const WEBHOOKS_ENV = {
  ...WORLDS_ENV,
  DATABASE_POOL_SIZE: String(POOL_SIZE),
  // The receiver listens on 127.0.0.1.
  WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
};

export interface InboxResults {
  alone: { service: Latency; bare: Latency };
  rounds: ContenderRounds<RestWindow>[];
}

export interface WebhooksResults {
  database: string;
  seed: WebhooksSeed;
  /** The service's delivery job, then the bare script. */
  deliveries: ContenderRounds<WindowFigures>[];
  /** Pending deliveries were left after the rounds: the job never ran out of work. */
  backlogLeft: boolean;
  lag?: LagResults;
  inbox: Record<Read, InboxResults>;
}

export function measureWebhooks(
  backend: Backend,
  schedule: RoundSchedule,
  seconds: number,
  nodeArgs?: readonly string[],
): Promise<WebhooksResults> {
  return withBackend(backend, async (baseEnv, dataDir) => {
    const env: Record<string, string> = { ...baseEnv, ...WEBHOOKS_ENV };
    const secret = newSecret();
    const servers: BareServer[] = [];
    let atrium: Atrium | undefined;
    let issuer: TokenIssuer | undefined;
    try {
      const receiverServer = await startBareServer('bench/webhooks/receiver.ts', { WEBHOOK_SECRET: secret });
      servers.push(receiverServer);
      const receiver = { url: `http://127.0.0.1:${receiverServer.port}/`, secret };
      const deliveries = SEEDED_PER_SECOND * (WARMUP_SECONDS + schedule.rounds * schedule.windowSeconds);
      progress(`${backend}: seeding ${NOTIFICATIONS} notifications and ${deliveries} pending deliveries...`);
      const seed = await seedWebhooks(env, receiver, deliveries);
      progress(`${backend}: seeded in ${seed.seconds.toFixed(1)} s`);
      const bareDb: Record<string, string> = env.DATABASE_URL
        ? { DATABASE_URL: env.DATABASE_URL, BARE_POOL_SIZE: String(POOL_SIZE) }
        : { BARE_PGLITE_DIR: join(dataDir, 'ceiling') };
      if (bareDb.BARE_PGLITE_DIR)
        await cp(join(dataDir, 'pgdata'), bareDb.BARE_PGLITE_DIR, { recursive: true });

      atrium = await startAtrium(env, nodeArgs);
      issuer = await tokenIssuer(dataDir);
      const [adminToken, userToken] = [
        ...(await issuer.issueFor([newId()], ['admin'])),
        ...(await issuer.issueFor([seed.inboxUserId])),
      ] as [string, string];
      const admin = new Api(`http://127.0.0.1:${atrium.httpPort}`);
      admin.token = adminToken;
      const database = env.DATABASE_URL ? await postgresVersion(env.DATABASE_URL) : 'PGlite';

      progress(`${backend}: deliveries of the backlog beside the bare script, in rounds...`);
      const rounds = await interleavedRounds(
        `${backend}, deliveries`,
        [
          serviceDeliveries(atrium, admin, seed.endpoints.backlog, receiver.url),
          bareDeliveries(receiver.url, secret),
        ],
        schedule,
      );
      const pending = await admin.ok<{ items: unknown[] }>(
        'GET',
        `/api/admin/webhooks/${seed.endpoints.backlog}/deliveries?status=pending&limit=1`,
      );

      let lag: LagResults | undefined;
      if (env.DATABASE_URL) {
        progress(`${backend}: outbox lag at 500 events/s for ${seconds} s...`);
        lag = await measureLag(env, atrium.pid, admin, seed.endpoints.lag, receiver, seconds);
      }

      const bare = await startBareServer('bench/webhooks/bare-inbox.ts', {
        ...bareDb,
        BARE_INBOX_USER: seed.inboxUserId,
      });
      servers.push(bare);
      const [service, ceiling] = [serviceTarget(atrium, userToken), bareTarget(bare)];
      await checkInbox(service, ceiling, NOTIFICATIONS);
      const inbox = {} as Record<Read, InboxResults>;
      for (const read of READS) {
        progress(`${backend}: inbox ${read}, one client, then in rounds beside bare Fastify...`);
        inbox[read] = {
          alone: {
            service: await oneClient(service, read, seconds),
            bare: await oneClient(ceiling, read, seconds),
          },
          rounds: await interleavedRounds(
            `${backend}, inbox ${read}`,
            [inboxRequests('the service', service, read), inboxRequests('bare Fastify', ceiling, read)],
            schedule,
          ),
        };
      }
      return {
        database,
        seed,
        deliveries: rounds,
        backlogLeft: pending.items.length > 0,
        ...(lag ? { lag } : {}),
        inbox,
      };
    } finally {
      await issuer?.close();
      if (atrium) await stopAtrium(atrium);
      await Promise.all(servers.map((server) => server.stop()));
    }
  });
}
