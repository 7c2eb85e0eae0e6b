/**
 * Warns when every answer of a job was a 404 where its spec says notFound.ambiguous: a wrong API URL's gateway 404
 * looks the same, settling every task with exit 0 and no data. The outcome stands: a search can truly find nothing.
 */
import { bodyExcerpt } from '../api/redact.ts';
import type { Operation } from '../spec/types.ts';
import { specOf } from '../operations/index.ts';
import type { TaskOutcome } from './task-executor.ts';
import type { NotFoundOnlyWarning } from './run-summary.ts';

/** Longest excerpt of the 404 body's message carried by the warning. */
const MESSAGE_EXCERPT_CHARS = 120;

/** Counts the answers of one job in one run, and whether any of them held data. */
export class NotFoundOnlyWatch {
  private notFound = 0;
  private answeredWithData = false;
  private firstMessage: string | null = null;

  constructor(
    private readonly operation: Operation,
    private readonly minAnswers: number,
    /** Kept out of the excerpt whatever their length (the API token). */
    private readonly secrets: readonly string[],
  ) {}

  /** Takes the outcome of a task that got an answer or failed; only answers (200 or 404) count. */
  record(outcome: TaskOutcome): void {
    if (outcome.kind === 'done') this.answeredWithData = true;
    else if (outcome.kind === 'not_found') {
      this.notFound += 1;
      this.firstMessage ??= outcome.message;
    }
  }

  /** The warning for `job`, or null when it got data, too few answers, or its operation's 404 is unambiguous. */
  warning(job: string): NotFoundOnlyWarning | null {
    if (!specOf(this.operation).notFound.ambiguous || this.answeredWithData || this.notFound < this.minAnswers) return null;
    const bodyMessage = this.firstMessage === null ? null : bodyExcerpt(this.firstMessage, this.secrets, MESSAGE_EXCERPT_CHARS);
    const body = bodyMessage === null ? 'no message' : `message ${JSON.stringify(bodyMessage)}`;
    return {
      code: 'NOT_FOUND_ONLY',
      answers: this.notFound,
      status: 404,
      bodyMessage,
      message:
        `job ${job} (${this.operation}): all ${this.notFound} answers were 404 not found (${body}); ` +
        'if these inputs do exist, check the API URL (NETINGEST_API_URL or --api-url): ' +
        "a web server's or gateway's 404 for a wrong path looks the same for this operation",
    };
  }
}
