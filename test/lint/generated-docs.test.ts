import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ARCHITECTURE_DOC, withGeneratedRegions } from '../../scripts/architecture-tables.js';

const root = fileURLToPath(new URL('../..', import.meta.url));

describe('generated docs', () => {
  it(`${ARCHITECTURE_DOC} holds what the code generates (run npm run docs:generate)`, () => {
    const committed = readFileSync(join(root, ARCHITECTURE_DOC), 'utf8');
    const generated = withGeneratedRegions(root, committed);
    expect(
      generated === committed,
      `${ARCHITECTURE_DOC} differs from the code: run \`npm run docs:generate\` and commit the result`,
    ).toBe(true);
  });

  it('rewrites only the marked regions, and refuses a document that lacks one', () => {
    const document = [
      'prose before',
      '<!-- generated:errors -->',
      'stale',
      '<!-- /generated -->',
      'between',
      '<!-- generated:migrations -->',
      '<!-- /generated -->',
      '<!-- generated:modules -->',
      '<!-- /generated -->',
      'prose after',
      '',
    ].join('\n');
    const generated = withGeneratedRegions(root, document);
    expect(generated).not.toContain('stale');
    expect(generated).toMatch(/^prose before\n<!-- generated:errors -->\n\| Code +\| HTTP status/);
    expect(generated).toContain('| `GROUP_FULL`');
    expect(generated).toContain('| `0001_initial`');
    expect(generated).toContain('| `economy`');
    expect(generated).toContain('<!-- /generated -->\nbetween\n');
    expect(generated.endsWith('<!-- /generated -->\nprose after\n')).toBe(true);
    expect(() => withGeneratedRegions(root, 'no regions\n')).toThrow(
      'has no region <!-- generated:errors -->',
    );
  });
});
