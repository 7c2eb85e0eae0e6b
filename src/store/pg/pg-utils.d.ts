// node-postgres's own conversion of a parameter (its lib/utils.js, exported by its package.json's "./lib/*.js"),
// which @types/pg does not declare.
declare module 'pg/lib/utils.js' {
  /** A value as node-postgres sends it: text, a Buffer or null; throws where it cannot (a BigInt in an object). */
  export function prepareValue(value: unknown): string | Buffer | null;
}
