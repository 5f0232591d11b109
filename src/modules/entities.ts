import { RefreshTokenSchema, SessionSchema } from './auth/session.entity.js';
import { AvatarLoadoutSchema } from './avatar/avatar-loadout.entity.js';
import { ProfileSchema } from './profiles/profile.entity.js';
import { UserSchema } from './users/user.entity.js';

/** Every entity the ORM manages; each module adds its own here. */
export const entities = [UserSchema, SessionSchema, RefreshTokenSchema, ProfileSchema, AvatarLoadoutSchema];
