import { describe, expect, it } from 'vitest';
import { adminRolesGrant, adminUsersList } from '../../protocol/admin.js';
import { pathOf } from '../../protocol/rest-path.js';
import { apiCall, routeOf } from '../../src/modules/console/operator-api.js';

describe('pathOf', () => {
  it("fills each :name segment of an operation's declared path", () => {
    expect(pathOf(adminRolesGrant, { user_id: 'u1', role: 'admin' })).toBe('/api/admin/users/u1/roles/admin');
    expect(pathOf(adminUsersList)).toBe('/api/admin/users');
  });

  it('encodes a value so that it stays one segment: a slash, a question mark, a hash and spaces', () => {
    expect(pathOf(adminRolesGrant, { user_id: '../users/x?y=1#z', role: 'a b' })).toBe(
      '/api/admin/users/..%2Fusers%2Fx%3Fy%3D1%23z/roles/a%20b',
    );
  });

  it('keeps an empty value an empty segment, for the API to refuse as an unknown id', () => {
    expect(pathOf(adminRolesGrant, { user_id: '', role: 'admin' })).toBe('/api/admin/users//roles/admin');
  });

  it('refuses a segment without a value, naming the operation and the segment', () => {
    const partly = { user_id: 'u1' } as { user_id: string; role: string };
    expect(() => pathOf(adminRolesGrant, partly)).toThrow(
      'admin.users.roles.grant needs a value for its path segment :role.',
    );
  });
});

describe("the console's calls of declared operations", () => {
  it('take the method and the filled path from the declaration, with what the call carries', () => {
    expect(apiCall(adminRolesGrant, { params: { user_id: 'a/b', role: 'admin' } })).toEqual({
      method: 'PUT',
      path: '/api/admin/users/a%2Fb/roles/admin',
    });
    expect(apiCall(adminUsersList, { query: { limit: 5 } })).toEqual({
      method: 'GET',
      path: '/api/admin/users',
      query: { limit: 5 },
    });
  });

  it('word the route for a summary as the OpenAPI document does', () => {
    expect(routeOf(adminRolesGrant)).toBe('PUT /api/admin/users/{user_id}/roles/{role}');
  });
});
