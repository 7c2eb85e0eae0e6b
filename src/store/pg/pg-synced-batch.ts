/**
 * One extended-protocol exchange ending in one Sync (node-postgres syncs each query), so the server flushes once. After
 * a failure it skips to the Sync: inside BEGIN the transaction is left aborted; outside, the batch is all or nothing.
 */
import pg from 'pg';
import Result from 'pg/lib/result.js';

/** One statement of a batch as it goes on the wire: a prepared name or none, its text, its converted values. */
export interface WireStatement {
  text: string;
  /** Prepared under this name on the connection (Parse sent once), or unnamed (parsed every time). */
  name?: string;
  values?: ReadonlyArray<string | Buffer | null>;
  /** Rows as arrays, and this statement's own type parsers (else the batch's): a reader's, as readPg asks for them. */
  rowMode?: 'array';
  types?: pg.CustomTypesConfig;
}

/** The protocol messages node-postgres's Connection sends, as this module uses them. */
interface WireConnection {
  parsedStatements: Record<string, string>;
  stream: { cork?: () => void; uncork?: () => void };
  parse(q: { text: string; name: string }): void;
  bind(c: { statement: string; values: ReadonlyArray<string | Buffer | null> }): void;
  describe(m: { type: 'P'; name: string }): void;
  execute(c: { portal: string }): void;
  close(m: { type: 'S'; name: string }): void;
  sync(): void;
}

/**
 * Names whose Parse went in a batch that failed at or before it: prepared or not, nobody knows (a statement that
 * failed as it ran was prepared). The next batch closes them first (closing a name that does not exist is no error).
 */
const doubtful = new WeakMap<WireConnection, Set<string>>();

/**
 * A node-postgres submittable: handed the connection when free (at once in pipeline mode), then the server's messages
 * until ReadyForQuery. A Query subclass, as pipeline mode refuses other submittables (Query's handleCopyData: a no-op).
 */
class SyncedBatch extends (pg.Query as unknown as new (config: { text: string }) => object) {
  private readonly results: Result[];
  private current = 0;
  private error: Error | null = null;
  /** Names first parsed by this batch, by the index of their statement. */
  private readonly parsedHere = new Map<number, string>();
  private connection: WireConnection | null = null;

  constructor(
    private readonly statements: readonly WireStatement[],
    types: pg.CustomTypesConfig | undefined,
    private readonly done: (err: Error | null, results: pg.QueryResult[]) => void,
  ) {
    super({ text: 'netingest synced batch' });
    this.results = statements.map((s) => new Result(s.rowMode, s.types ?? types));
  }

  submit(connection: WireConnection): null {
    this.connection = connection;
    const unsure = doubtful.get(connection);
    connection.stream.cork?.();
    try {
      for (const [i, s] of this.statements.entries()) {
        const name = s.name ?? '';
        if (name === '' || connection.parsedStatements[name] === undefined) {
          if (unsure?.delete(name)) connection.close({ type: 'S', name });
          connection.parse({ text: s.text, name });
          if (name !== '') {
            connection.parsedStatements[name] = s.text;
            this.parsedHere.set(i, name);
          }
        }
        connection.bind({ statement: name, values: s.values ?? [] });
        connection.describe({ type: 'P', name: '' });
        connection.execute({ portal: '' });
      }
      connection.sync();
    } finally {
      connection.stream.uncork?.();
    }
    return null;
  }

  handleRowDescription(msg: { fields: unknown[] }): void {
    this.results[this.current]!.addFields(msg.fields);
  }

  handleDataRow(msg: { fields: unknown[] }): void {
    const result = this.results[this.current]!;
    result.addRow(result.parseRow(msg.fields));
  }

  handleCommandComplete(msg: unknown): void {
    this.results[this.current++]!.addCommandComplete(msg);
  }

  handleEmptyQuery(): void {
    this.current++;
  }

  handlePortalSuspended(): void {
    // Not asked for: every Execute goes without a row limit.
  }

  /** A statement refused (the server skips to the Sync), or the connection lost. */
  handleError(err: Error): void {
    if (this.error) return;
    this.error = err;
    const connection = this.connection;
    if (connection) {
      // From the failed statement on, the names this batch parsed are prepared (parsed, then failed to run) or not.
      const unsure = doubtful.get(connection) ?? doubtful.set(connection, new Set()).get(connection)!;
      for (const [i, name] of this.parsedHere) {
        if (i < this.current) continue;
        delete connection.parsedStatements[name];
        unsure.add(name);
      }
    }
    this.done(err, []);
  }

  handleReadyForQuery(): void {
    if (!this.error) this.done(null, this.results as unknown as pg.QueryResult[]);
  }

  handleCopyInResponse(): void {
    this.handleError(new Error('internal: COPY in a synced batch'));
  }
}

/** Sends `statements` ending in one Sync: each one's result in order, or the first refusal (nothing after it ran). */
export function sendSynced(client: pg.ClientBase, statements: readonly WireStatement[], types?: pg.CustomTypesConfig): Promise<pg.QueryResult[]> {
  return new Promise((resolve, reject) => {
    // The client's own type parsers where the caller gives none, as its queries use.
    const ownTypes = types ?? (client as unknown as { _types?: pg.CustomTypesConfig })._types;
    const batch = new SyncedBatch(statements, ownTypes, (err, results) => (err ? reject(err) : resolve(results)));
    (client.query as unknown as (q: SyncedBatch) => unknown)(batch);
  });
}
