import type { Setting } from '../../../protocol/settings.js';
import { configInForce } from '../../platform/config-in-force.js';
import { type Ctx, requireRole } from '../../platform/context.js';
import type { Platform } from '../../platform/module.js';

/** The configuration a node runs with, secrets redacted, for admins only. */
export class SettingsService {
  constructor(
    private readonly config: Platform['config'],
    private readonly parts: Platform['configParts'],
  ) {}

  inForce(ctx: Ctx): { settings: Setting[] } {
    requireRole(ctx, 'admin', 'Only admins may read the configuration.');
    return { settings: configInForce(this.config, this.parts) };
  }
}
