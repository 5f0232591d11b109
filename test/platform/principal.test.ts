import { describe, expect, it } from 'vitest';
import {
  admittedKinds,
  ofServices,
  ofSessions,
  principalId,
  servicePrincipal,
  userPrincipal,
} from '../../src/platform/auth/principal.js';

const alice = userPrincipal({ id: 'alice', sessionId: 'sa', roles: [] });
const bob = userPrincipal({ id: 'bob', sessionId: 'sb', roles: [] });
const server = servicePrincipal({ id: 'gs1', scope: 'w1' });
const other = servicePrincipal({ id: 'gs2', scope: 'w2' });

describe('principals', () => {
  it('names a user by their id and a service as service:<id>, so the two never collide', () => {
    expect(principalId(alice)).toBe('alice');
    expect(principalId(server)).toBe('service:gs1');
    expect(principalId(undefined)).toBeUndefined();
  });

  it('ends the users of the revoked sessions and no service', () => {
    const revoked = ofSessions(['sa']);
    expect([alice, bob, server].map(revoked)).toEqual([true, false, false]);
  });

  it('ends the services named and every service of the scopes named, and no user', () => {
    expect([server, other, alice].map(ofServices(['gs1']))).toEqual([true, false, false]);
    expect([server, other, alice].map(ofServices([], ['w2']))).toEqual([false, true, false]);
  });

  it('admits services only to the operations that take their tokens', () => {
    expect(admittedKinds({ serviceToken: false })).toEqual(['user']);
    expect(admittedKinds({ serviceToken: true })).toEqual(['user', 'service']);
  });
});
