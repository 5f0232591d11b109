import { describe, expect, it } from 'vitest';
import { type ServicePrincipal, ServiceTokens } from '../../src/platform/auth/service-tokens.js';
import { AppError, ErrorCode } from '../../src/platform/errors.js';

const issuer = (principal: ServicePrincipal) => ({
  prefix: 'tk_',
  name: 'test token',
  verify: async (token: string) => {
    if (token !== 'tk_live') throw new AppError(ErrorCode.UNAUTHENTICATED, 'dead');
    return principal;
  },
});

describe('service tokens', () => {
  it('refuses every token, and recognizes none, until a module provides their issuer', async () => {
    const tokens = new ServiceTokens();
    expect(tokens.recognizes('tk_live')).toBe(false);
    await expect(tokens.verify('tk_live')).rejects.toMatchObject({
      code: ErrorCode.UNAUTHENTICATED,
      message: 'A valid service token is required (Authorization: Bearer).',
    });
  });

  it("recognizes tokens by the issuer's prefix and verifies them with its check", async () => {
    const tokens = new ServiceTokens();
    tokens.provide(issuer({ id: 's1', scope: 'w1' }));
    expect(tokens.recognizes('tk_live')).toBe(true);
    expect(tokens.recognizes('eyJhbGciOi')).toBe(false);
    await expect(tokens.verify('tk_live')).resolves.toEqual({ id: 's1', scope: 'w1' });
    await expect(tokens.verify('tk_dead')).rejects.toMatchObject({ message: 'dead' });
    expect(tokens.refusal().message).toBe('A valid test token is required (Authorization: Bearer).');
  });

  it('takes one issuer: a second module providing one is a startup error', () => {
    const tokens = new ServiceTokens();
    tokens.provide(issuer({ id: 's1', scope: 'w1' }));
    expect(() => tokens.provide(issuer({ id: 's2', scope: 'w2' }))).toThrow(/already issued as test tokens/);
    expect(tokens.recognizes('tk_live')).toBe(true);
  });
});
