/**
 * The storing floor of the pipeline bench: a hand-written loop that does only what the issue asks to keep of
 * each post-details answer, with nothing of the pipeline's machinery. Per answer: the bare undici call,
 * `JSON.parse`, then in one group transaction on the same thread the normalized post row (upsert on its id)
 * and its media rows, the raw body, the task's status and the api_calls row, over a schema with no index
 * beyond the keys those statements need. Each slot is held until its answer is committed, as the pipeline
 * holds it (the crash promise: a kill repeats at most `concurrency` calls). No validation, no ledger planning,
 * no credit guard, rate gate or retries: what the pipeline adds to this is the price of those.
 */
import Database from 'better-sqlite3';
import { Agent, request } from 'undici';

const SCHEMA = `
  CREATE TABLE tasks (id INTEGER PRIMARY KEY, status TEXT NOT NULL);
  CREATE TABLE posts (id INTEGER PRIMARY KEY, post_id TEXT NOT NULL UNIQUE, url TEXT NOT NULL, author_name TEXT,
    author_url TEXT, text_content TEXT, reactions INTEGER, comments_count INTEGER, updated_at TEXT NOT NULL);
  CREATE TABLE post_media (post_id TEXT NOT NULL, position INTEGER NOT NULL, url TEXT, PRIMARY KEY (post_id, position));
  CREATE TABLE raw_responses (id INTEGER PRIMARY KEY, task_id INTEGER NOT NULL, body TEXT NOT NULL);
  CREATE TABLE api_calls (id INTEGER PRIMARY KEY, task_id INTEGER NOT NULL, status INTEGER NOT NULL, latency_ms REAL,
    credits_used REAL, credits_remaining REAL, at TEXT NOT NULL);`;

interface Answer {
  taskId: number;
  path: string;
  status: number;
  latencyMs: number;
  body: string;
  /** Parsed and deliberately not validated: the floor skips what zod costs the pipeline. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- see the line above
  json: any;
  committed: () => void;
}

/** Calls, parses and durably stores each answer of `paths` as the issue asks, `concurrency` calls at a time. */
export async function storingFloor(
  origin: string,
  paths: readonly string[],
  concurrency: number,
  headers: Record<string, string>,
  dbFile: string,
): Promise<void> {
  const db = new Database(dbFile);
  // The pragmas the pipeline's own connections use (src/store/connection.ts).
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.exec(SCHEMA);
  const fill = db.prepare("INSERT INTO tasks (id, status) VALUES (?, 'pending')");
  db.transaction(() => paths.forEach((_, i) => fill.run(i + 1)))();
  const upsertPost = db.prepare(`INSERT INTO posts (post_id, url, author_name, author_url, text_content, reactions,
    comments_count, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (post_id) DO UPDATE SET url = excluded.url,
    author_name = excluded.author_name, author_url = excluded.author_url, text_content = excluded.text_content,
    reactions = excluded.reactions, comments_count = excluded.comments_count, updated_at = excluded.updated_at`);
  const deleteMedia = db.prepare('DELETE FROM post_media WHERE post_id = ?');
  const insertMedia = db.prepare('INSERT INTO post_media (post_id, position, url) VALUES (?, ?, ?)');
  const insertRaw = db.prepare('INSERT INTO raw_responses (task_id, body) VALUES (?, ?)');
  const insertCall = db.prepare(
    'INSERT INTO api_calls (task_id, status, latency_ms, credits_used, credits_remaining, at) VALUES (?, ?, ?, ?, ?, ?)',
  );
  const settleTask = db.prepare('UPDATE tasks SET status = ? WHERE id = ?');
  const commit = db.transaction((batch: Answer[], at: string) => {
    for (const a of batch) {
      const j = a.json;
      if (a.status === 200) {
        upsertPost.run(j.PostId, a.path, j.author?.name, j.author?.network_url,
          j.post?.text_content, j.engagement?.reactions, j.engagement?.comments_count, at);
        deleteMedia.run(j.PostId);
        (j.post?.post_media_url ?? []).forEach((u: string, i: number) => insertMedia.run(j.PostId, i + 1, u));
        insertRaw.run(a.taskId, a.body);
      }
      insertCall.run(a.taskId, a.status, a.latencyMs, j.credits_used ?? null, j.credits_remaining ?? null, at);
      settleTask.run(a.status === 200 ? 'done' : 'not_found', a.taskId);
    }
  });

  let gathered: Answer[] = [];
  let scheduled = false;
  const flush = () => {
    scheduled = false;
    const batch = gathered;
    gathered = [];
    commit(batch, new Date().toISOString());
    for (const a of batch) a.committed();
  };
  const store = (answer: Omit<Answer, 'committed'>) =>
    new Promise<void>((committed) => {
      gathered.push({ ...answer, committed });
      if (!scheduled) {
        scheduled = true;
        setImmediate(flush);
      }
    });

  const dispatcher = new Agent({ connections: concurrency });
  let next = 0;
  const worker = async () => {
    while (next < paths.length) {
      const taskId = ++next;
      const started = performance.now();
      const path = paths[taskId - 1]!;
      const res = await request(origin + path, { dispatcher, headers });
      const body = await res.body.text();
      if (res.statusCode !== 200 && res.statusCode !== 404) throw new Error(`storing floor: status ${res.statusCode}`);
      await store({ taskId, path, status: res.statusCode, latencyMs: performance.now() - started, body, json: JSON.parse(body) });
    }
  };
  try {
    await Promise.all(Array.from({ length: concurrency }, worker));
    const settled = (db.prepare("SELECT count(*) AS n FROM tasks WHERE status <> 'pending'").get() as { n: number }).n;
    if (settled !== paths.length) throw new Error(`storing floor: ${settled} of ${paths.length} tasks settled`);
  } finally {
    await dispatcher.close();
    db.close();
  }
}
