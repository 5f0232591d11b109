import {
  type AvatarLoadout,
  type AvatarLoadoutInput,
  DEFAULT_BASE_BODY,
  storedLoadout,
} from '../../../protocol/profiles.js';
import { type Ctx, callerOf } from '../../platform/context.js';
import { AppError, ErrorCode } from '../../platform/errors.js';
import { findLoadoutDocument, isMissingUser, saveLoadoutDocument } from './avatar.repository.js';

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
    const document = await findLoadoutDocument(ctx.data, caller.id);
    if (!document) return { base_body: DEFAULT_BASE_BODY, slots: {}, is_default: true };
    return asLoadout(document);
  }

  /**
   * Replaces the caller's loadout with an envelope-checked document (see avatarLoadoutInputSchema).
   * Any `is_default` the client sent is dropped before storing; every other key is stored as sent.
   */
  async put(ctx: Ctx, document: AvatarLoadoutInput): Promise<AvatarLoadout> {
    const caller = callerOf(ctx);
    try {
      return asLoadout(await saveLoadoutDocument(ctx.data, caller.id, storedLoadout(document), ctx.now()));
    } catch (error) {
      // The token outlived its account by a moment: the insert has no user to reference.
      if (isMissingUser(error)) {
        throw new AppError(ErrorCode.UNAUTHENTICATED, 'The account no longer exists.');
      }
      throw error;
    }
  }
}
