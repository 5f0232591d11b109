/**
 * Central lists assembled from the parts each domain declares (error codes here in protocol/,
 * settings in src/config.ts), so adding a domain adds a part instead of editing a shared table.
 */

/** The intersection of a union's members: every part's entries in one type. */
type AllOf<Union> = (Union extends unknown ? (part: Union) => void : never) extends (part: infer All) => void
  ? All
  : never;

/**
 * One object with the entries of every part, in the parts' order. Two parts declaring one name
 * would silently replace one entry with the other, so that throws at import time, naming both.
 */
export function mergeParts<Parts extends Record<string, object>>(parts: Parts): AllOf<Parts[keyof Parts]> {
  const merged: Record<string, unknown> = {};
  const declaredBy = new Map<string, string>();
  for (const [part, entries] of Object.entries(parts)) {
    for (const [name, value] of Object.entries(entries)) {
      const earlier = declaredBy.get(name);
      if (earlier !== undefined) throw new Error(`${name} is declared by both ${earlier} and ${part}`);
      declaredBy.set(name, part);
      merged[name] = value;
    }
  }
  return merged as AllOf<Parts[keyof Parts]>;
}
