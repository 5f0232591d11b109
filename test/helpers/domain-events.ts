import type { DomainEventData, DomainEventType } from '../../protocol/domain-events.js';
import { defineModule } from '../../src/platform/module.js';
import type { TestApp } from './app.js';
import { queryRows } from './database.js';

/**
 * Reading the domain events (protocol/domain-events.ts) the modules record, from the outbox's
 * table. A type is recorded only while some consumer takes it, so a test adds `consumerOf` its
 * types to the app's modules, and stops the app's outbox so what was recorded stays there:
 *
 *     const app = useTestApp({}, { modules: [...testModules, consumerOf('user.deleted')] });
 *     const { recorded, recordedBy } = recordedEvents(app);
 *     beforeAll(async () => {
 *       await app().outbox.stop();
 *     });
 */

/** A module consuming each of `types` with a handler that does nothing. */
export const consumerOf = (...types: DomainEventType[]) =>
  defineModule({
    name: 'test-consumers',
    tables: [],
    needs: [],
    setup({ outbox }) {
      for (const type of types) {
        outbox.consume({
          name: `test:${type}`,
          type,
          retry: { leaseSeconds: 30, maxAttempts: 5 },
          handle: async () => {},
        });
      }
      return { api: {} };
    },
  });

/** What the app recorded: every event of a type, or what one piece of work added. */
export function recordedEvents(app: () => TestApp) {
  /** The data of each event of `type` recorded so far, oldest first. */
  const recorded = async <T extends DomainEventType>(type: T): Promise<DomainEventData[T][]> =>
    (
      await queryRows<{ data: DomainEventData[T] }>(
        app().db,
        'select data from outbox_events where type = ? order by at, id',
        [type],
      )
    ).map((row) => row.data);
  /** What `work` recorded of `type`. */
  const recordedBy = async <T extends DomainEventType>(
    type: T,
    work: () => Promise<unknown>,
  ): Promise<DomainEventData[T][]> => {
    const before = (await recorded(type)).length;
    await work();
    return (await recorded(type)).slice(before);
  };
  return { recorded, recordedBy };
}
