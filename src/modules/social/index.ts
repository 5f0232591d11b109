import { defineModule } from '../../platform/module.js';
import { relationsOf } from './relations.js';

export type { Relation } from './relations.js';

/** What other modules may use of the social graph: how two users relate, for privacy rules. */
export interface SocialApi {
  relationsOf: typeof relationsOf;
}

/** The social graph (friendships and blocks); its operations arrive with the social domain. */
export const socialModule = defineModule({
  name: 'social',
  entities: [],
  needs: [],
  setup() {
    const api: SocialApi = { relationsOf };
    return { api };
  },
});
