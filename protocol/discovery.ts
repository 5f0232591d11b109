import { z } from 'zod';
import { listQuery, pageOf } from './lists.js';
import { operation } from './operation.js';
import { text } from './text.js';

/**
 * World discovery (docs/discovery.md): what a world shows in search (title, description, tags,
 * category, thumbnail, visit counts), set by its owner and read by whoever may read the world,
 * and the search over public worlds with the sorts popular, new and trending.
 */

const id = z.string().max(64);

export const DISCOVERY_CATEGORIES = [
  'social',
  'adventure',
  'roleplay',
  'simulation',
  'competitive',
  'creative',
  'education',
  'horror',
  'other',
] as const;
export const discoveryCategorySchema = z.enum(DISCOVERY_CATEGORIES);
export type DiscoveryCategory = z.infer<typeof discoveryCategorySchema>;
export const DISCOVERY_TAGS_MAX = 10;
/** A tag as stored: lower case letters, digits and dashes (input is lower-cased first). */
export const DISCOVERY_TAG = /^[a-z0-9-]{1,32}$/;
const tag = z
  .string()
  .max(64)
  .transform((value) => value.toLowerCase())
  .refine((value) => DISCOVERY_TAG.test(value), 'must be 1-32 of a-z, 0-9 and -');

export const discoverySortSchema = z.enum(['popular', 'new', 'trending']);
export type DiscoverySort = z.infer<typeof discoverySortSchema>;

export const worldDiscoverySchema = z.object({
  world_id: z.string(),
  owner_id: z.string(),
  title: z.string(),
  description: z.string(),
  tags: z.array(z.string()),
  category: discoveryCategorySchema,
  thumbnail_asset_id: z.string().nullable(),
  visit_count: z.number().int(),
  unique_visitors: z.number().int(),
  last_visited_at: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type WorldDiscovery = z.infer<typeof worldDiscoverySchema>;

const tag_ = 'discovery';
const DISCOVERY = '/api/worlds/:world_id/discovery';

export const discoveryGet = operation('discovery.get', {
  tag: tag_,
  summary:
    "A world's discovery metadata; whoever may read the world. Title and description follow the world's name and description until the owner sets them.",
  rest: { method: 'GET', path: DISCOVERY },
  request: z.object({ world_id: id }).strict(),
  response: worldDiscoverySchema,
  errors: [401, 404],
});

export const discoveryPut = operation('discovery.put', {
  tag: tag_,
  summary:
    'Set what search shows of the world (owner only; 403 for another reader, 404 for a non-reader); omitted fields stay as they are. Tags are lower-cased and duplicates collapse.',
  rest: { method: 'PUT', path: DISCOVERY },
  request: z
    .object({
      world_id: id,
      title: text(1, 100).optional(),
      description: text(0, 2000).optional(),
      tags: z.array(tag).max(DISCOVERY_TAGS_MAX).optional(),
      category: discoveryCategorySchema.optional(),
      thumbnail_asset_id: text(1, 64).nullable().optional(),
    })
    .strict(),
  response: worldDiscoverySchema,
  errors: [401, 403, 404, 422],
});

export const discoverySearch = operation('discovery.search', {
  tag: tag_,
  summary:
    'Public worlds: `q` full text over title, description and tags (web search syntax), `tag` (repeatable: all must match), `category`; sorted `popular` (visits in the last 168 h, the default), `new` (creation) or `trending` (visits of the last 24 h minus the 24 h before), ties by new. Popular and trending rank a snapshot at most a minute old, which a cursor keeps.',
  rest: { method: 'GET', path: '/api/discovery/worlds' },
  request: z
    .object({
      q: text(1, 100).optional(),
      tag: z
        .preprocess(
          (value) => (typeof value === 'string' ? [value] : value),
          z.array(tag).max(DISCOVERY_TAGS_MAX),
        )
        .optional(),
      category: discoveryCategorySchema.optional(),
      sort: discoverySortSchema.default('popular'),
      ...listQuery,
    })
    .strict(),
  response: pageOf(worldDiscoverySchema),
  errors: [401, 409, 422],
});

export const discoveryOperations = [discoveryGet, discoveryPut, discoverySearch] as const;
