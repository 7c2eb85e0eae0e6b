// node-postgres's own conversion of a parameter (lib/utils.js, exported by its package.json), undeclared by @types/pg.
declare module 'pg/lib/utils.js' {
  /** A value as node-postgres sends it: text, a Buffer or null; throws where it cannot (a BigInt in an object). */
  export function prepareValue(value: unknown): string | Buffer | null;
}

// node-postgres's result of one statement (lib/result.js), which pg-synced-batch.ts fills from the server's messages.
declare module 'pg/lib/result.js' {
  export default class Result {
    constructor(rowMode: 'array' | undefined, types: unknown);
    addFields(fields: unknown[]): void;
    parseRow(fields: unknown[]): unknown;
    addRow(row: unknown): void;
    addCommandComplete(msg: unknown): void;
  }
}

// The password file's reader node-postgres itself depends on (brianc/node-postgres's pgpass), untyped.
declare module 'pgpass' {
  /** Calls back with the password ~/.pgpass (or PGPASSFILE) holds for the connection, or undefined. */
  export default function pgPass(connection: unknown, callback: (password: string | undefined) => void): void;
}
