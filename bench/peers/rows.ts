import { BODY } from '../chat/latency.js';
import { LOADOUT_BODY } from '../datapath/measure.js';
import { IN_FLIGHT, LOAD_CONNECTIONS } from '../realtime/frame-load.js';
import { REST_CONNECTIONS } from '../realtime/rest-load.js';
import { CLIQUE, type Population } from './population.js';
import type { FramesSpec, RestSpec, Side, Spec } from './specs.js';

/**
 * The rows of the comparison: the same work asked of each side in its own protocol. Socket rows
 * use LOAD_CONNECTIONS sockets (users 0-49) with IN_FLIGHT frames outstanding each; REST rows
 * REST_CONNECTIONS connections, each request a random user's (as the other benches load them).
 */

export interface Target {
  http: string;
  ws: string;
  population: Population;
}

export interface Row {
  name: string;
  /** What Nakama does instead, when it has no operation of the same kind. */
  nakama?: string;
  spec(side: Side, target: Target): Spec;
}

/** Group chat: every one of the LOAD_CONNECTIONS members listens, these send. */
const GROUP_SENDERS = 5;
const GROUP_IN_FLIGHT = 4;
const ECHO_INPUT = { hello: 'world', n: 1 };
const STATUS = 'exploring the plaza';

const sides = <T>(side: Side, atrium: T, nakama: T) => (side === 'atrium' ? atrium : nakama);

/** A frame every socket of users 0-49 repeats. */
function everySocket(side: Side, target: Target, atrium: object, nakama: object): FramesSpec {
  return {
    kind: 'frames',
    side,
    url: target.ws,
    sockets: target.population.users.slice(0, LOAD_CONNECTIONS).map(({ token }) => ({
      token,
      setup: [],
      frame: sides(side, atrium, nakama),
    })),
    inFlight: IN_FLIGHT,
  };
}

/** One request per user of `users` (all by default), picked at random for each request sent. */
function rest(
  target: Target,
  request: (user: Population['users'][number], index: number) => Omit<RestSpec['requests'][number], 'token'>,
  users = target.population.users,
): RestSpec {
  return {
    kind: 'rest',
    base: target.http,
    requests: users.map((user, i) => ({ ...request(user, i), token: user.token })),
    connections: REST_CONNECTIONS,
  };
}

/** User i's peer in the direct-message rows: users 2k and 2k + 1 write to each other. */
const peerOf = (population: Population, i: number) => population.users[i ^ 1] as Population['users'][number];

/** Nakama's id of the direct-message channel of two users (its stream: mode 4, the ids in order). */
const nakamaDmChannel = (a: string, b: string) => `4.${a < b ? a : b}.${a < b ? b : a}.`;

export const ROWS: Row[] = [
  {
    name: 'WebSocket ping',
    spec: (side, t) => everySocket(side, t, { t: 'ping' }, { ping: {} }),
  },
  {
    name: 'Status update over the socket',
    spec: (side, t) =>
      everySocket(
        side,
        t,
        { t: 'presence.status', d: { status_message: STATUS } },
        { status_update: { status: STATUS } },
      ),
  },
  {
    name: 'Heartbeat',
    nakama:
      'a ping envelope: Nakama has no presence heartbeat, a presence lasts as long as its socket, which the client keeps with pings',
    spec: (side, t) => everySocket(side, t, { t: 'presence.heartbeat' }, { ping: {} }),
  },
  {
    name: 'GET account',
    spec: (side, t) => rest(t, () => ({ method: 'GET', path: sides(side, '/api/users/me', '/v2/account') })),
  },
  {
    name: 'PUT of a 1 KiB document',
    nakama: 'a storage object write (PUT /v2/storage), the same JSON as its value',
    spec: (side, t) =>
      rest(t, () =>
        sides(
          side,
          { method: 'PUT', path: '/api/avatar/loadout', body: LOADOUT_BODY },
          {
            method: 'PUT',
            path: '/v2/storage',
            body: JSON.stringify({
              objects: [
                {
                  collection: 'avatar',
                  key: 'loadout',
                  value: LOADOUT_BODY,
                  permission_read: 1,
                  permission_write: 1,
                },
              ],
            }),
          },
        ),
      ),
  },
  {
    name: 'DM send over the socket',
    nakama: 'channel_message_send on the direct channel both users joined (channel_join type 2, persistent)',
    spec: (side, t) => ({
      kind: 'frames',
      side,
      url: t.ws,
      sockets: t.population.users.slice(0, LOAD_CONNECTIONS).map(({ token }, i) => {
        const peer = peerOf(t.population, i).id;
        return sides(
          side,
          { token, setup: [], frame: { t: 'dm.send', d: { user_id: peer, body: BODY } } },
          {
            token,
            setup: [{ channel_join: { target: peer, type: 2, persistence: true, hidden: false } }],
            frame: {
              channel_message_send: { channel_id: '$channel', content: JSON.stringify({ body: BODY }) },
            },
          },
        );
      }),
      inFlight: IN_FLIGHT,
    }),
  },
  {
    name: 'Friends list of 50',
    spec: (side, t) =>
      rest(
        t,
        () => ({ method: 'GET', path: sides(side, '/api/friends?limit=50', '/v2/friend?limit=50') }),
        t.population.users.slice(0, CLIQUE),
      ),
  },
  {
    name: 'DM history page of 50',
    nakama: 'GET /v2/channel/{id}, newest first; the conversations are those the DM row filled',
    spec: (side, t) =>
      rest(
        t,
        (user, i) => {
          const peer = peerOf(t.population, i).id;
          return {
            method: 'GET',
            path: sides(
              side,
              `/api/chat/dm/${peer}/messages?limit=50`,
              `/v2/channel/${nakamaDmChannel(user.id, peer)}?limit=50&forward=false`,
            ),
          };
        },
        t.population.users.slice(0, LOAD_CONNECTIONS),
      ),
  },
  {
    name: 'Group roster page of 100',
    spec: (side, t) =>
      rest(t, () => ({
        method: 'GET',
        path: sides(
          side,
          `/api/groups/${t.population.groupId}/members?limit=100`,
          `/v2/group/${t.population.groupId}/user?limit=100`,
        ),
      })),
  },
  {
    name: 'Group chat to 50 members',
    nakama:
      'channel_message_send on the group channel the 50 members joined (channel_join type 3, persistent)',
    spec: (side, t) => {
      const groupId = t.population.groupId;
      return {
        kind: 'frames',
        side,
        url: t.ws,
        sockets: t.population.users.slice(0, LOAD_CONNECTIONS).map(({ token }, i) => {
          const sends = i < GROUP_SENDERS;
          return sides(
            side,
            {
              token,
              setup: [{ t: 'chat.join', d: { group_id: groupId } }],
              frame: sends ? { t: 'chat.sendToGroup', d: { group_id: groupId, body: BODY } } : null,
            },
            {
              token,
              setup: [{ channel_join: { target: groupId, type: 3, persistence: true, hidden: false } }],
              frame: sends
                ? {
                    channel_message_send: { channel_id: '$channel', content: JSON.stringify({ body: BODY }) },
                  }
                : null,
            },
          );
        }),
        inFlight: GROUP_IN_FLIGHT,
      };
    },
  },
  {
    name: 'Purchase',
    nakama:
      'POST /v2/rpc/purchase of the bench module: both wallets and their ledger rows and the inventory object in one nk.multiUpdate',
    spec: (side, t) => ({
      kind: 'rest',
      base: t.http,
      requests: t.population.purchases.map(({ token, body }) => ({
        method: 'POST',
        path: sides(side, '/api/economy/purchases', '/v2/rpc/purchase?unwrap=true'),
        token,
        body: JSON.stringify(body),
      })),
      // A buyer per connection: a user buys one thing at a time.
      usersInTurn: true,
      idempotencyKey: side === 'atrium',
      connections: REST_CONNECTIONS,
    }),
  },
  {
    name: 'Echo RPC over the socket',
    nakama: 'the rpc envelope of the bench module, whose payload is a JSON string',
    spec: (side, t) =>
      everySocket(
        side,
        t,
        { t: 'rpc', d: { name: 'echo', input: ECHO_INPUT } },
        { rpc: { id: 'echo', payload: JSON.stringify(ECHO_INPUT) } },
      ),
  },
];

export const GROUP_CHAT = { senders: GROUP_SENDERS, inFlight: GROUP_IN_FLIGHT };
