import { z } from 'zod';
import { amount, type grantSchema, idempotencyKeySchema } from '../../../protocol/economy.js';
import { text } from '../../../protocol/text.js';
import { AppError, ErrorCode } from '../../platform/errors.js';
import type { AuditActor } from '../audit/index.js';

/**
 * What an extension's `ctx.economy.grant` takes and answers (the extensions contract): the admin
 * grant's fields, checked here since no transport's schema stands before it.
 */

/** An extension by its name: the owner of its idempotency keys and the actor of its audit entries. */
export type ExtensionActor = Extract<AuditActor, { kind: 'extension' }>;

const extensionGrantSchema = z.object({
  user_id: z.string(),
  amount,
  reason: text(1, 200),
  idempotency_key: idempotencyKeySchema,
});

export type ExtensionGrantInput = z.infer<typeof extensionGrantSchema>;

/** The admin grant's answer, and whether it is the first call's, replayed for its key. */
export type ExtensionGrant = z.infer<typeof grantSchema> & { replayed: boolean };

/** The extension's argument as it gave it, checked: VALIDATION_FAILED naming each bad field. */
export function extensionGrantInput(input: unknown): ExtensionGrantInput {
  const parsed = extensionGrantSchema.safeParse(input);
  if (parsed.success) return parsed.data;
  const errors = parsed.error.issues.map((issue) => ({ path: issue.path.join('.'), message: issue.message }));
  const message = errors.map((error) => (error.path ? `${error.path}: ${error.message}` : error.message));
  throw new AppError(ErrorCode.VALIDATION_FAILED, message.join('; '), { errors });
}
