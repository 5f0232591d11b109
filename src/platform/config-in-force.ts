import { REDACTED, type Setting } from '../../protocol/settings.js';
import { secretVariables } from './platform-config.js';

/**
 * The configuration in force as admins may read it (GET /api/admin/config): every setting by name
 * and declaring part, with credentials withheld. Beside platform-config.ts's list of secret
 * variables, as the log's redaction (log.ts) is beside the logger.
 */

/**
 * Names that say a value is a credential, besides the secret variables platform-config.ts lists: a
 * setting added later whose name says SECRET, PASSWORD, a key, a PEM or a token (not a token's
 * lifetime, such as ACCESS_TOKEN_TTL_SECONDS) is withheld without anyone remembering to list it.
 */
const SECRET_NAME = /(^|_)(SECRET|PASSWORD|PASSPHRASE|CREDENTIALS?|PEM|PRIVATE_KEY|API_KEY|TOKEN)(_|$)/;
const LIFETIME_NAME = /_(TTL|SECONDS|MS|HOURS)$/;

export function isSecretSetting(name: string): boolean {
  return secretVariables.has(name) || (SECRET_NAME.test(name) && !LIFETIME_NAME.test(name));
}

/**
 * A URL without its credentials: the user name stays (it says which account), the password and
 * every query value go (`?password=`, `sslkey=`). Undefined when the text is not a URL with a host.
 */
export function withoutCredentials(text: string): { value: string; redacted: boolean } | undefined {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return undefined;
  }
  if (!url.host) return undefined;
  let redacted = false;
  if (url.password) {
    url.password = REDACTED;
    redacted = true;
  }
  for (const key of [...new Set(url.searchParams.keys())]) {
    url.searchParams.set(key, REDACTED);
    redacted = true;
  }
  return { value: url.toString(), redacted };
}

/** A parsed setting as the API shows it: text, number, boolean or null. */
function shown(value: unknown): string | number | boolean | null {
  if (value === undefined || value === null) return null;
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') return value;
  return JSON.stringify(value);
}

/**
 * One setting as admins may see it. A URL (DATABASE_URL, REDIS_URL, ...) keeps its host and
 * database, which an operator needs and which are no secret, and loses its credentials; any other
 * value of a secret setting is withheld whole.
 */
export function settingInForce(part: string, name: string, value: unknown): Setting {
  const plain = shown(value);
  if (plain === null) return { name, part, value: null, redacted: false };
  const url = typeof plain === 'string' ? withoutCredentials(plain) : undefined;
  if (url) return { name, part, ...url };
  if (isSecretSetting(name)) return { name, part, value: REDACTED, redacted: true };
  return { name, part, value: plain, redacted: false };
}

/**
 * Every setting of `config`, by the part that declares it, in the parts' order (src/config.ts's
 * configParts: the platform's and each module's), secrets redacted.
 */
export function configInForce(config: object, parts: Readonly<Record<string, object>>): Setting[] {
  const values = config as Record<string, unknown>;
  return Object.entries(parts).flatMap(([part, shape]) =>
    Object.keys(shape).map((name) => settingInForce(part, name, values[name])),
  );
}
