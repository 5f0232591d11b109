import { profileGet, profileUpdate } from '../../../protocol/profiles.js';
import { defineModule } from '../../platform/module.js';
import { serve } from '../../platform/operations.js';
import { DEFAULT_PRIVACY, dmPolicySql, privacyOf } from './profiles.repository.js';
import { ProfilesService } from './profiles.service.js';

export { DEFAULT_PRIVACY, dmPolicySql };

/** What other modules may use of profiles: the privacy settings they enforce. */
export interface ProfilesApi {
  privacyOf: typeof privacyOf;
}

/** Bio, avatar image and the privacy settings other features enforce. */
export const profilesModule = defineModule({
  name: 'profiles',
  tables: ['profiles'],
  needs: [],
  setup() {
    const profiles = new ProfilesService();
    const api: ProfilesApi = { privacyOf };
    return {
      api,
      operations: [
        serve(profileGet, (ctx) => profiles.get(ctx)),
        serve(profileUpdate, (ctx, update) => profiles.update(ctx, update)),
      ],
    };
  },
});
