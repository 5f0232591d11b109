import { describe, expect, it } from 'vitest';
import { privacyAdmits } from '../../src/modules/social/index.js';

/** The everyone / friends / nobody rule presence, direct messages and follow lists share. */
describe('the privacy rule of a setting', () => {
  it.each([
    ['everyone', true, true],
    ['public', true, true],
    ['friends', true, false],
    ['nobody', false, false],
    ['private', false, false],
  ] as const)('%s admits a friend: %s, anyone else: %s', (setting, friend, other) => {
    expect(privacyAdmits(setting, true)).toBe(friend);
    expect(privacyAdmits(setting, false)).toBe(other);
  });
});
