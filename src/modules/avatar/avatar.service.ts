import { ForeignKeyConstraintViolationException } from '@mikro-orm/core';
import {
  type AvatarLoadout,
  type AvatarLoadoutInput,
  DEFAULT_BASE_BODY,
  storedLoadout,
} from '../../../protocol/profiles.js';
import { type Ctx, callerOf } from '../../platform/context.js';
import { AppError, ErrorCode } from '../../platform/errors.js';
import { AvatarLoadoutSchema } from './avatar-loadout.entity.js';

/**
 * A saved document as a response. Only envelope-checked documents are stored, so base_body and
 * slots are there; `is_default` always comes from the server.
 */
function asLoadout(document: Record<string, unknown>): AvatarLoadout {
  return { ...document, is_default: false } as AvatarLoadout;
}

export class AvatarService {
  /** The caller's saved loadout, or the server default when they never saved one. */
  async get(ctx: Ctx): Promise<AvatarLoadout> {
    const caller = callerOf(ctx);
    const row = await ctx.em.findOne(AvatarLoadoutSchema, { userId: caller.id });
    if (!row) return { base_body: DEFAULT_BASE_BODY, slots: {}, is_default: true };
    return asLoadout(row.document);
  }

  /**
   * Replaces the caller's loadout with an envelope-checked document (see avatarLoadoutInputSchema).
   * Any `is_default` the client sent is dropped before storing. One upsert, so concurrent first
   * saves both succeed and the last one wins.
   */
  async put(ctx: Ctx, document: AvatarLoadoutInput): Promise<AvatarLoadout> {
    const caller = callerOf(ctx);
    try {
      const row = await ctx.em.upsert(AvatarLoadoutSchema, {
        userId: caller.id,
        document: storedLoadout(document),
        updatedAt: ctx.now(),
      });
      return asLoadout(row.document);
    } catch (error) {
      // The token outlived its account by a moment: the insert has no user to reference.
      if (error instanceof ForeignKeyConstraintViolationException) {
        throw new AppError(ErrorCode.UNAUTHENTICATED, 'The account no longer exists.');
      }
      throw error;
    }
  }
}
