import { adminConfig } from '../../../protocol/settings.js';
import { defineModule } from '../../platform/module.js';
import { serve } from '../../platform/operations.js';
import { SettingsService } from './settings.service.js';

/** The configuration in force, for admins: `GET /api/admin/config`, secrets redacted (docs/console.md). */
export const settingsModule = defineModule({
  name: 'settings',
  tables: [],
  needs: [],
  setup({ config, configParts }) {
    const settings = new SettingsService(config, configParts);
    return { api: {}, operations: [serve(adminConfig, (ctx) => settings.inForce(ctx))] };
  },
});
