import { positiveInt } from '../../platform/config-fields.js';

/**
 * The parties module's settings (docs/parties.md), assembled into the Config by src/config.ts.
 * Invitations count against SOCIAL_RATE_LIMIT_* (social), in a limiter of their own.
 */
export const partiesConfig = {
  /** How long a member may be offline before they are removed from their party, as if they left. */
  PARTY_OFFLINE_GRACE_SECONDS: positiveInt(60, 86_400),
  /** How long an invitation to a party stays pending. */
  PARTY_INVITE_TTL_SECONDS: positiveInt(600, 604_800),
};
