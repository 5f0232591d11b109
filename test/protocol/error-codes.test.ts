import { describe, expect, it } from 'vitest';
import { ErrorCode, errorParts, httpStatusByCode } from '../../protocol/errors.js';

describe('error codes', () => {
  const declared = Object.values(errorParts).flatMap((part) => Object.keys(part));

  it('assembles every code the parts declare, each declared by one part only', () => {
    expect(new Set(declared).size).toBe(declared.length);
    expect(Object.keys(ErrorCode)).toEqual(declared);
  });

  it('names each code by itself and gives each an HTTP error status', () => {
    for (const code of declared) {
      expect(ErrorCode[code as ErrorCode]).toBe(code);
      expect(code).toMatch(/^[A-Z][A-Z0-9_]*$/);
      const status = httpStatusByCode[code as ErrorCode];
      expect(Number.isInteger(status) && status >= 400 && status <= 599, `${code}: ${status}`).toBe(true);
    }
    expect(Object.keys(httpStatusByCode)).toEqual(declared);
  });

  it('keeps INTERNAL the last code, where new parts go before it', () => {
    expect(declared.at(-1)).toBe('INTERNAL');
  });
});
