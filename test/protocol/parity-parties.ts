import type { TokenResponse } from '../../protocol/auth.js';
import { bearer, registerUser } from '../helpers/accounts.js';
import type { TestApp } from '../helpers/app.js';
import type { RestName, Row } from './parity-types.js';

/**
 * The parties rows of the parity table. A user is in one party at most, so rows that create or
 * join act on fresh users; reads and the PATCH act on one shared party, the same answer twice.
 * The party's chat runs as the socket client's user (its send is a frame), in a party of their own.
 */

/** The gameservers module serves the two whose socket twins would be `parties.*`: their rows are with its own. */
type PartyName = Exclude<
  Extract<RestName, `parties.${string}` | 'chat.sendToParty' | 'chat.partyHistory'>,
  'parties.inviteToServer' | 'parties.joinFriend'
>;

export function partyRows(appOf: () => TestApp): { [N in PartyName]: Row<N> } {
  const api = async (user: TokenResponse, method: 'POST' | 'PATCH', url: string, payload?: object) => {
    const response = await appOf().http.inject({
      method,
      url,
      headers: bearer(user.access_token),
      ...(payload ? { payload } : {}),
    });
    if (response.statusCode >= 300)
      throw new Error(`${method} ${url}: ${response.statusCode} ${response.body}`);
    return response.json() as { id: string };
  };
  /** A new open party of a new leader with one more member. */
  const newParty = async () => {
    const [leader, member] = [await registerUser(appOf()), await registerUser(appOf())];
    const { id } = await api(leader, 'POST', '/api/parties', { open: true });
    await api(member, 'POST', `/api/parties/${id}/join`);
    return { leader, member, party_id: id };
  };
  let shared: ReturnType<typeof newParty> | undefined;
  const circle = () => {
    shared ??= newParty();
    return shared;
  };
  /** The socket client's user leads a party with one more member, who wrote in its chat once. */
  let chatting: Promise<string> | undefined;
  const myParty = (me: TokenResponse) => {
    chatting ??= (async () => {
      const member = await registerUser(appOf());
      const { id } = await api(me, 'POST', '/api/parties', { open: true });
      await api(member, 'POST', `/api/parties/${id}/join`);
      await api(member, 'POST', `/api/parties/${id}/messages`, { body: 'welcome' });
      return id;
    })();
    return chatting;
  };
  return {
    'parties.create': {
      fresh: true,
      prepare: async () => ({
        token: (await registerUser(appOf())).access_token,
        input: { open: true, max_size: 4 },
      }),
    },
    'parties.mine': { prepare: async () => ({ token: (await circle()).leader.access_token }) },
    'parties.get': {
      prepare: async () => {
        const { member, party_id } = await circle();
        return { token: member.access_token, input: { party_id } };
      },
    },
    'parties.update': {
      prepare: async () => {
        const { leader, party_id } = await circle();
        return { token: leader.access_token, input: { party_id, max_size: 6 } };
      },
    },
    'parties.invite': {
      fresh: true,
      prepare: async () => {
        const { leader, party_id } = await circle();
        return {
          token: leader.access_token,
          input: { party_id, user_id: (await registerUser(appOf())).user.id },
        };
      },
    },
    'parties.join': {
      fresh: true,
      prepare: async () => {
        const { party_id } = await newParty();
        return { token: (await registerUser(appOf())).access_token, input: { party_id } };
      },
    },
    'parties.leave': {
      prepare: async () => {
        const { member, party_id } = await newParty();
        return { token: member.access_token, input: { party_id } };
      },
    },
    'parties.kick': {
      prepare: async () => {
        const { leader, member, party_id } = await newParty();
        return { token: leader.access_token, input: { party_id, user_id: member.user.id } };
      },
    },
    'parties.setLeader': {
      fresh: true,
      prepare: async () => {
        const { leader, member, party_id } = await newParty();
        return { token: leader.access_token, input: { party_id, user_id: member.user.id } };
      },
    },
    'chat.sendToParty': {
      fresh: true,
      prepare: async ({ me }) => ({
        token: me.access_token,
        input: { party_id: await myParty(me), body: ' parity ' },
      }),
    },
    'chat.partyHistory': {
      prepare: async ({ me }) => ({ token: me.access_token, input: { party_id: await myParty(me) } }),
    },
  };
}
