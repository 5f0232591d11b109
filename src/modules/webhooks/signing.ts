/**
 * Standard Webhooks signing (https://www.standardwebhooks.com/) through the `standardwebhooks`
 * package: `v1,` + base64 HMAC-SHA256 of `<webhook-id>.<webhook-timestamp>.<body>`, keyed with the
 * base64-decoded bytes after `whsec_`, the definition the contract gives and receivers verify.
 */
import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';

export interface WebhookHeaders {
  'webhook-id': string;
  /** Unix seconds of this attempt. */
  'webhook-timestamp': string;
  /** `v1,<sig>`, or during a rotation's grace `v1,<new> v1,<previous>`. */
  'webhook-signature': string;
}

/** A new endpoint secret: `whsec_` + standard padded base64 of 32 random bytes. */
export function newSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/**
 * The headers of one attempt at `at`. `secrets` holds the current secret and, during a rotation's
 * grace, the previous one after it: the signatures come in that order.
 */
export function signedHeaders(
  id: string,
  body: string,
  secrets: readonly [current: string, previous?: string],
  at: Date,
): WebhookHeaders {
  const seconds = Math.floor(at.getTime() / 1000);
  // The package floors the time the same way; passing whole seconds keeps header and signature equal.
  const signedAt = new Date(seconds * 1000);
  const signatures = secrets
    .filter((secret) => secret !== undefined)
    .map((secret) => new Webhook(secret).sign(id, signedAt, body));
  return {
    'webhook-id': id,
    'webhook-timestamp': String(seconds),
    'webhook-signature': signatures.join(' '),
  };
}
