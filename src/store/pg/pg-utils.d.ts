// node-postgres's own conversion of a parameter (its lib/utils.js, exported by its package.json's "./lib/*.js"),
// which @types/pg does not declare.
declare module 'pg/lib/utils.js' {
  /** A value as node-postgres sends it: text, a Buffer or null; throws where it cannot (a BigInt in an object). */
  export function prepareValue(value: unknown): string | Buffer | null;
}

// node-postgres's result of one statement (its lib/result.js), which a synced batch (pg-synced-batch.ts) fills
// from the server's messages as node-postgres's own queries do.
declare module 'pg/lib/result.js' {
  export default class Result {
    constructor(rowMode: 'array' | undefined, types: unknown);
    command: string | null;
    rowCount: number | null;
    rows: unknown[];
    addFields(fields: unknown[]): void;
    parseRow(fields: unknown[]): unknown;
    addRow(row: unknown): void;
    addCommandComplete(msg: unknown): void;
  }
}
