import { z } from 'zod';
import { positiveInt } from '../../platform/config-fields.js';

/** The chat module's settings (docs/chat.md), assembled into the Config by src/config.ts. */
export const chatConfig = {
  DM_RATE_LIMIT_COUNT: positiveInt(10, 100_000),
  DM_RATE_LIMIT_WINDOW_SECONDS: positiveInt(10, 86_400),
  /** What the text filter does with disallowed words in a message: mask them, or refuse the message (422). */
  DM_FILTER_MODE: z.enum(['mask', 'reject'], { error: 'must be one of mask, reject' }).default('mask'),
};
