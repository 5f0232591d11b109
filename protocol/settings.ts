import { z } from 'zod';
import { operation } from './operation.js';

/**
 * The configuration a node runs with, for admins (the operator console's configuration page):
 * every setting by name, secrets redacted. Settings are fixed by the code (about a hundred), so
 * the answer is one document rather than a page of a list.
 */

/** What a redacted value, or the redacted part of one (a URL's password), reads as. */
export const REDACTED = '[redacted]';

export const settingSchema = z.object({
  name: z.string(),
  /** Who declares it: `platform`, or the module whose `<domain>.config.ts` does. */
  part: z.string(),
  /** As parsed at startup; null when unset. A secret reads REDACTED, a URL keeps all but its credentials. */
  value: z.union([z.string(), z.number(), z.boolean()]).nullable(),
  /** True when all or part of the value was withheld. */
  redacted: z.boolean(),
});
export type Setting = z.infer<typeof settingSchema>;

export const configInForceSchema = z.object({ settings: z.array(settingSchema) });

export const adminConfig = operation('admin.config', {
  tag: 'admin',
  summary:
    'Admins: the settings this node runs with, by name and declaring part; key material and passwords are redacted, and URLs keep everything but their credentials and query values.',
  rest: { method: 'GET', path: '/api/admin/config' },
  request: z.object({}).strict(),
  response: configInForceSchema,
  errors: [401, 403, 422],
});

export const settingsOperations = [adminConfig] as const;
