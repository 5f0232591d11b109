import { describe, expect, it } from 'vitest';
import { worldOwnerSql } from '../../src/modules/worlds/index.js';
import { executeBound } from '../../src/platform/db.js';
import { newId } from '../../src/platform/ids.js';
import { useServices } from '../helpers/services.js';

/** The SQL fragment the worlds module exports for other modules' statements (the game servers' list). */
describe("the worlds module's SQL fragment", () => {
  const services = useServices();

  it('worldOwnerSql is the owner of the world, and null for an id that names none', async () => {
    const { call, ctxFor, createUser } = services();
    const owner = await createUser();
    const world = await call('worlds.create', ctxFor(owner.user), { name: 'Fragment' });
    const ownerOf = async (worldId: string) => {
      const [row] = await executeBound<{ value: string | null }>(
        ctxFor(null).data,
        `select ${worldOwnerSql('$1::uuid')} as value`,
        [worldId],
      );
      return row?.value;
    };
    expect(await ownerOf(world.id)).toBe(owner.user.id);
    expect(await ownerOf(newId())).toBeNull();
  });
});
