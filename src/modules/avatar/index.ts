import { avatarGetLoadout, avatarPutLoadout } from '../../../protocol/profiles.js';
import { defineModule } from '../../platform/module.js';
import { serve } from '../../platform/operations.js';
import { AvatarService } from './avatar.service.js';

/** Avatar loadouts: one game-defined document per user, envelope-checked and stored verbatim. */
export const avatarModule = defineModule({
  name: 'avatar',
  tables: ['avatar_loadouts'],
  needs: [],
  setup() {
    const avatar = new AvatarService();
    return {
      api: {},
      operations: [
        serve(avatarGetLoadout, (ctx) => avatar.get(ctx)),
        serve(avatarPutLoadout, (ctx, loadout) => avatar.put(ctx, loadout)),
      ],
    };
  },
});
