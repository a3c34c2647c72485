import type { Diagnostic } from "../shared/diagnostics.ts";
import type { Queryable } from "./queryable.ts";

/**
 * What svc did for a repository and its pull requests, read from the triggers' payloads the way
 * worker/event/context.ts reads them: `repository.full_name` (GitHub), `project.path_with_namespace`
 * (GitLab), else a top-level or `args` `repo` (bearer webhooks and fires). Pull requests are
 * `pull_request.number`, `issue.number` of a comment on a pull request, or a GitLab merge
 * request's `iid` (its own event's `object_attributes`, a note's `merge_request`).
 */
export const REPO = `coalesce(t.payload #>> '{repository,full_name}', t.payload #>> '{project,path_with_namespace}',
  t.payload ->> 'repo', t.payload #>> '{args,repo}')`;
const PULL = `coalesce(t.payload #>> '{pull_request,number}',
  CASE WHEN t.payload #> '{issue,pull_request}' IS NOT NULL THEN t.payload #>> '{issue,number}' END,
  CASE WHEN t.payload ->> 'object_kind' = 'merge_request' THEN t.payload #>> '{object_attributes,iid}' END,
  t.payload #>> '{merge_request,iid}')`;

export interface LastRun {
  repo: string;
  trigger: string;
  kind: string;
  eventName: string;
  status: string;
  at: Date;
}

/**
 * The newest trigger of each of `repos` (those without any are absent). Each repository walks the
 * triggers newest first (the `triggers_created_at` index) until one names it, so an active
 * repository costs a short walk; one svc never ran for reads the whole table.
 */
export async function lastRunPerRepo(db: Queryable, repos: string[]): Promise<Map<string, LastRun>> {
  if (repos.length === 0) return new Map();
  const { rows } = await db.query<LastRun>(
    `SELECT r.repo, x.trigger, x.kind, x."eventName", x.status, x.at
       FROM unnest($1::text[]) AS r(repo)
       JOIN LATERAL (
         SELECT t.id AS trigger, t.kind, t.event_name AS "eventName", t.status, t.created_at AS at
           FROM svc.triggers t WHERE ${REPO} = r.repo
          ORDER BY t.created_at DESC, t.id DESC LIMIT 1) x ON true`,
    [repos],
  );
  return new Map(rows.map((row) => [row.repo, row]));
}

export interface PullRun {
  number: number;
  pipeline: string;
  pipelineVersion: string | null;
  trigger: string;
  invocation: string;
  status: string;
  diagnostic: Diagnostic | null;
  /** URLs of the outputs the run published (comments, reviews, chat messages) */
  outputs: string[];
  at: Date;
}

/** Every run svc made for these pull requests of `repo`, newest first. */
export async function runsForPulls(db: Queryable, repo: string, numbers: number[]): Promise<PullRun[]> {
  if (numbers.length === 0) return [];
  const { rows } = await db.query<PullRun>(
    `SELECT (${PULL})::int AS number, w.pipeline, w.pipeline_version AS "pipelineVersion", t.id AS trigger,
            i.id AS invocation, i.status, i.diagnostic, w.created_at AS at,
            ARRAY(SELECT d.remote_url FROM svc.output_deliveries d
                   WHERE d.invocation_id = i.id AND d.status = 'sent' AND d.remote_url IS NOT NULL
                   ORDER BY d.output_key) AS outputs
       FROM svc.triggers t
       JOIN svc.workloads w ON w.trigger_id = t.id
       JOIN svc.invocations i ON i.workload_id = w.id
      WHERE ${REPO} = $1 AND (${PULL}) = ANY($2::text[])
      ORDER BY w.created_at DESC, i.created_at DESC`,
    [repo, numbers.map(String)],
  );
  return rows;
}
