import { describe, expect, it } from 'vitest';
import { namedSql, valuesOf } from '../../src/platform/named-sql.js';

describe('named SQL parameters', () => {
  it('numbers each name in order of first use and binds a repeated name once', () => {
    const statement = namedSql<{ id: string; at: Date }>(
      'update t set a = :at, b = :at where id = :id and c < :at',
    );
    expect(statement.text).toBe('update t set a = $1, b = $1 where id = $2 and c < $1');
    const at = new Date(0);
    expect(valuesOf(statement, { id: 'x', at })).toEqual([at, 'x']);
  });

  it('leaves ::type casts alone', () => {
    const statement = namedSql<{ doc: string }>("select :doc::jsonb, '{}'::jsonb, now()::text");
    expect(statement.text).toBe("select $1::jsonb, '{}'::jsonb, now()::text");
  });

  it('binds a null but refuses a missing value', () => {
    const statement = namedSql<{ a: string | null; b?: string }>('select :a, :b');
    expect(valuesOf(statement, { a: null, b: 'x' })).toEqual([null, 'x']);
    expect(() => valuesOf(statement, { a: null })).toThrow(/no value for :b/);
  });

  it('refuses a statement that names no parameter', () => {
    expect(() => namedSql('select 1')).toThrow(/names no parameter/);
  });
});
