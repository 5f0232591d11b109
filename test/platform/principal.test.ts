import { describe, expect, it } from 'vitest';
import {
  admittedKinds,
  gameServerPrincipal,
  ofGameServers,
  ofSessions,
  principalId,
  userPrincipal,
} from '../../src/platform/auth/principal.js';

const alice = userPrincipal({ id: 'alice', sessionId: 'sa', roles: [] });
const bob = userPrincipal({ id: 'bob', sessionId: 'sb', roles: [] });
const server = gameServerPrincipal({ serverId: 'gs1', worldId: 'w1' });
const other = gameServerPrincipal({ serverId: 'gs2', worldId: 'w2' });

describe('principals', () => {
  it('names a user by their id and a game server as server:<id>, so the two never collide', () => {
    expect(principalId(alice)).toBe('alice');
    expect(principalId(server)).toBe('server:gs1');
    expect(principalId(undefined)).toBeUndefined();
  });

  it('ends the users of the revoked sessions and no game server', () => {
    const revoked = ofSessions(['sa']);
    expect([alice, bob, server].map(revoked)).toEqual([true, false, false]);
  });

  it('ends the game servers named and every game server of the worlds named, and no user', () => {
    expect([server, other, alice].map(ofGameServers(['gs1']))).toEqual([true, false, false]);
    expect([server, other, alice].map(ofGameServers([], ['w2']))).toEqual([false, true, false]);
  });

  it('admits game servers only to the operations that declare them', () => {
    expect(admittedKinds({ gameServer: false })).toEqual(['user']);
    expect(admittedKinds({ gameServer: true })).toEqual(['user', 'gameServer']);
  });
});
