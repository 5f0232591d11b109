import { configFrom } from '../../src/config.js';
import { AccessTokens, type Role } from '../../src/platform/auth/access-tokens.js';
import { loadKeyRing } from '../../src/platform/auth/keys.js';
import { newId } from '../../src/platform/ids.js';
import { MemoryKv } from '../../src/platform/kv/memory-kv.js';
import { progress } from './progress.js';

/**
 * Access tokens for synthetic users: registering tens of thousands of users through argon2 would
 * take hours, and the gateway only checks the signature and claims, so tokens signed here with the
 * service's own key for user ids that are not in the database authenticate like real users.
 */

export interface TokenIssuer {
  issue(count: number, label: string): Promise<string[]>;
  /** One token for each of these user ids (users that exist, for routes that read the account). */
  issueFor(userIds: readonly string[], roles?: Role[]): Promise<string[]>;
  close(): Promise<void>;
}

/**
 * Signs access tokens with the key in `<dataDir>/keys`, as the service that generated it would,
 * valid for `ttlSeconds` (the service's ACCESS_TOKEN_TTL_SECONDS default when not given).
 */
export async function tokenIssuer(dataDir: string, ttlSeconds?: number): Promise<TokenIssuer> {
  const config = configFrom({ DATA_DIR: dataDir });
  const kv = new MemoryKv();
  const tokens = new AccessTokens({
    keys: await loadKeyRing(config),
    kv,
    issuer: config.JWT_ISSUER,
    ttlSeconds: ttlSeconds ?? config.ACCESS_TOKEN_TTL_SECONDS,
  });
  return {
    async issue(count, label) {
      const started = performance.now();
      const issued: string[] = [];
      for (let i = 0; i < count; i++) {
        issued.push(await tokens.issue({ id: newId(), sessionId: newId(), roles: ['user'] }));
      }
      if (count >= 1000) {
        progress(
          `${label}: signed ${count} access tokens in ${((performance.now() - started) / 1000).toFixed(1)} s`,
        );
      }
      return issued;
    },
    issueFor: (userIds, roles = ['user']) =>
      Promise.all(userIds.map((id) => tokens.issue({ id, sessionId: newId(), roles }))),
    close: () => kv.close(),
  };
}
