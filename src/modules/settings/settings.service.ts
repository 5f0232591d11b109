import type { Setting } from '../../../protocol/settings.js';
import { configParts } from '../../config.js';
import { configInForce } from '../../platform/config-in-force.js';
import { type Ctx, callerOf } from '../../platform/context.js';
import { AppError, ErrorCode } from '../../platform/errors.js';
import type { Platform } from '../../platform/module.js';

/** The configuration a node runs with, secrets redacted, for admins only. */
export class SettingsService {
  constructor(private readonly config: Platform['config']) {}

  inForce(ctx: Ctx): { settings: Setting[] } {
    const caller = callerOf(ctx);
    if (!caller.roles.includes('admin'))
      throw new AppError(ErrorCode.FORBIDDEN, 'Only admins may read the configuration.');
    return { settings: configInForce(this.config, configParts) };
  }
}
