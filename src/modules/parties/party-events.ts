import type { EventPayloads } from '../../../protocol/frames.js';
import type { Party } from '../../../protocol/parties.js';
import { type EventBus, userTopic } from '../../platform/bus.js';
import type { LogSink } from '../../platform/log.js';

/**
 * What a removal from a party did, as the removal's transaction answers it: the party as it is
 * after it, or its end with its last member.
 */
export type Departure =
  | { ended: false; userId: string; party: Party }
  | { ended: true; userId: string; partyId: string };

/**
 * The parties' events, each on its recipients' own user topics in one publish (one Redis command
 * however many members), after the change committed: every socket of each user on every node
 * gets it, recorded with its `pos` for recovery.
 */
export class PartyEvents {
  constructor(private readonly bus: EventBus) {}

  /** `party.updated` to every member and to `alsoTo` (the user who left or was removed). */
  updated(log: LogSink, party: Party, alsoTo: readonly string[] = []): Promise<void> {
    const users = new Set([...party.members.map((member) => member.user_id), ...alsoTo]);
    const d: EventPayloads['party.updated'] = { party };
    return this.bus.publishCommitted([...users].map(userTopic), { t: 'party.updated', d }, log);
  }

  invited(log: LogSink, userId: string, d: EventPayloads['party.invite']): Promise<void> {
    return this.bus.publishCommitted(userTopic(userId), { t: 'party.invite', d }, log);
  }

  /** A leave, kick, offline removal or account deletion: the party's update, or its end. */
  departed(log: LogSink, departure: Departure): Promise<void> {
    if (!departure.ended) return this.updated(log, departure.party, [departure.userId]);
    const d: EventPayloads['party.ended'] = { party_id: departure.partyId };
    return this.bus.publishCommitted(userTopic(departure.userId), { t: 'party.ended', d }, log);
  }
}
