import { randomBytes } from "node:crypto";
import {
  errors,
  type FakeDiff,
  type FakeGitLabUser,
  type FakeProject,
  paginate,
  type Reply,
  reply,
  userBasic,
} from "./fake-gitlab-entities.ts";
import {
  allNotes,
  approvalsEntity,
  type Caller,
  DEVELOPER,
  type Discussion,
  diffEntity,
  discussionEntity,
  eligible,
  type Held,
  mrEntity,
  type Note,
  noteEntity,
} from "./fake-gitlab-mr-entities.ts";
import { hasLineCode, type Position, parsePosition } from "./fake-gitlab-position.ts";

/**
 * The merge-request routes of the fake: the merge request and its diffs, notes and discussions (a
 * plain note is an individual-note discussion, as GitLab stores it), diff notes checked against the
 * diff, resolving, approvals and award emoji on notes. Permissions follow GitLab's policies: notes by
 * anyone who can read the project, edits by the note's author only, resolving by a developer or the
 * merge request's author, approving by a developer member or the author (who is then refused by
 * the approval service, 401, as is a second approval).
 */

export interface Ask {
  method: string;
  /** the path after `/merge_requests/:iid`, split on "/" */
  rest: string[];
  params: Record<string, unknown>;
  url: URL;
}

const ROUTES = new Set([
  "GET ",
  "GET diffs",
  "GET approvals",
  "POST approve",
  "GET notes",
  "POST notes",
  "GET notes/:id",
  "PUT notes/:id",
  "GET notes/:id/award_emoji",
  "POST notes/:id/award_emoji",
  "GET discussions",
  "POST discussions",
  "GET discussions/:id",
  "PUT discussions/:id",
  "POST discussions/:id/notes",
]);

/** The route a request under `/merge_requests/:iid` names, if the fake answers it. */
export function mergeRequestRoute(method: string, rest: string[]): string | undefined {
  const [what, id, sub, ...more] = rest;
  const route = `${method} ${[what, id && ":id", sub].filter(Boolean).join("/")}`;
  return more.length === 0 && ROUTES.has(route) ? route : undefined;
}

const EMOJI_NAME = /^[a-z0-9_+-]+$/;

export function mergeRequests(options: {
  projects: FakeProject[];
  origin: () => string;
  userOf: (id: number) => FakeGitLabUser;
}) {
  let nextNote = 3001;
  let nextAward = 7001;
  // copies, so a push changes the fake's merge request and not the test's fixture
  const held = new Map<string, Held>();
  for (const project of options.projects)
    for (const given of project.mergeRequests) {
      const mr = structuredClone(given);
      held.set(`${project.id}!${mr.iid}`, {
        project,
        mr,
        id: mr.id ?? project.id * 1000 + mr.iid,
        discussions: [],
        approvals: [],
        awards: [],
      });
    }
  const now = () => new Date().toISOString();
  const find = (project: FakeProject, iid: number) => held.get(`${project.id}!${iid}`);
  const byPath = (projectPath: string, iid: number) => {
    const project = options.projects.find((p) => p.path_with_namespace === projectPath);
    const found = project && find(project, iid);
    if (!found) throw new Error(`fake GitLab holds no merge request ${projectPath}!${iid}`);
    return found;
  };

  /** `body` as Grape and the note model check it: absent → "body is missing", blank → can't be blank. */
  const bodyOf = (params: Record<string, unknown>): string | Reply => {
    const body = params.body;
    if (body === undefined || body === null) return errors.invalid("body is missing");
    const text = typeof body === "string" ? body : String(body);
    return text.trim() === "" ? errors.badNote("note", ["can't be blank"]) : text;
  };
  const newNote = (type: Note["type"], body: string, author: FakeGitLabUser, position?: Position): Note => {
    const at = now();
    return {
      id: nextNote++,
      type,
      body,
      author,
      created_at: at,
      updated_at: at,
      ...(position ? { position } : {}),
      resolved: false,
      resolved_by: null,
      resolved_at: null,
    };
  };
  const open = (state: Held, notes: Note[], individual: boolean) => {
    const discussion = { id: randomBytes(20).toString("hex"), individual_note: individual, notes };
    state.discussions.push(discussion);
    return discussion;
  };

  const answer = (project: FakeProject, iid: number, ask: Ask, caller: Caller): Reply => {
    const state = find(project, iid);
    if (!state) return errors.recordNotFound();
    const origin = options.origin();
    const { method, rest, params, url } = ask;
    const id = rest[1];
    switch (mergeRequestRoute(method, rest)) {
      case "GET ":
        return reply(200, mrEntity(state, caller, origin, options.userOf(state.mr.author_id)));
      case "GET diffs":
        return paginate(state.mr.diffs.map(diffEntity), url, origin);
      case "GET approvals":
        return reply(200, approvalsEntity(state, caller, origin));
      case "POST approve": {
        // the policy first (403), then the sha (409), then the approval service's refusal (401)
        const isAuthor = caller.user.id === state.mr.author_id;
        if (caller.level < DEVELOPER && !(isAuthor && caller.level > 0)) return errors.forbidden();
        const head = state.mr.diff_refs.head_sha;
        if (typeof params.sha === "string" && params.sha !== head)
          return reply(409, { message: `SHA does not match HEAD of source branch: ${head}` });
        if (!eligible(state, caller)) return errors.unauthorized();
        state.approvals.push({ user: caller.user, approved_at: now() });
        return reply(201, approvalsEntity(state, caller, origin));
      }
      case "GET notes": {
        const sort = (params.sort as string | undefined) ?? "desc";
        const orderBy = (params.order_by as string | undefined) ?? "created_at";
        if (!["asc", "desc"].includes(sort)) return errors.invalid("sort does not have a valid value");
        if (!["created_at", "updated_at"].includes(orderBy))
          return errors.invalid("order_by does not have a valid value");
        const key = orderBy as "created_at" | "updated_at";
        const sign = sort === "asc" ? 1 : -1;
        // GitLab breaks ties on id in the same direction; notes made in one millisecond stay in order
        const sorted = allNotes(state).sort((a, b) => sign * (a[key].localeCompare(b[key]) || a.id - b.id));
        return paginate(
          sorted.map((note) => noteEntity(state, note, origin)),
          url,
          origin,
        );
      }
      case "POST notes": {
        const body = bodyOf(params);
        if (typeof body !== "string") return body;
        const note = newNote(null, body, caller.user);
        open(state, [note], true);
        return reply(201, noteEntity(state, note, origin));
      }
      case "GET notes/:id":
      case "PUT notes/:id": {
        const note = allNotes(state).find((candidate) => String(candidate.id) === id);
        if (!note) return errors.recordNotFound();
        if (method === "GET") return reply(200, noteEntity(state, note, origin));
        if (note.author.id !== caller.user.id) return errors.forbidden();
        if (params.body !== undefined) {
          if (typeof params.body !== "string" || params.body.trim() === "")
            return errors.invalid("body is empty");
          note.body = params.body;
          note.updated_at = now();
        }
        return reply(200, noteEntity(state, note, origin));
      }
      case "GET notes/:id/award_emoji":
      case "POST notes/:id/award_emoji": {
        const note = allNotes(state).find((candidate) => String(candidate.id) === id);
        if (!note) return errors.recordNotFound();
        const award = (given: Held["awards"][number]) => ({
          id: given.id,
          name: given.name,
          user: userBasic(given.user, origin),
          created_at: given.created_at,
          updated_at: given.created_at,
          awardable_id: note.id,
          awardable_type: "Note",
          url: null,
        });
        if (method === "GET")
          return paginate(state.awards.filter((given) => given.note_id === note.id).map(award), url, origin);
        const name = params.name;
        if (typeof name !== "string" || name === "") return errors.invalid("name is missing");
        // GitLab reports the award's validation errors through not_found!, hence these odd 404s
        if (!EMOJI_NAME.test(name)) return errors.notFound("Award Emoji Name is not a valid emoji name");
        const taken = state.awards.some(
          (given) => given.note_id === note.id && given.name === name && given.user.id === caller.user.id,
        );
        if (taken) return errors.notFound("Award Emoji Name has already been taken");
        const given = { id: nextAward++, name, user: caller.user, note_id: note.id, created_at: now() };
        state.awards.push(given);
        return reply(201, award(given));
      }
      case "GET discussions":
        return paginate(
          state.discussions.map((discussion) => discussionEntity(state, discussion, origin)),
          url,
          origin,
        );
      case "POST discussions": {
        const body = bodyOf(params);
        if (typeof body !== "string") return body;
        if (params.position === undefined) {
          const discussion = open(state, [newNote("DiscussionNote", body, caller.user)], false);
          return reply(201, discussionEntity(state, discussion, origin));
        }
        const position = parsePosition(params.position);
        if ("status" in position) return position;
        if (!hasLineCode(state.mr, position))
          return errors.badNote("line_code", ["can't be blank", "must be a valid line code"]);
        const discussion = open(state, [newNote("DiffNote", body, caller.user, position)], false);
        return reply(201, discussionEntity(state, discussion, origin));
      }
      case "GET discussions/:id":
      case "PUT discussions/:id":
      case "POST discussions/:id/notes": {
        const discussion = state.discussions.find((candidate) => candidate.id === id);
        if (!discussion) return errors.notFound("Discussion");
        if (method === "GET") return reply(200, discussionEntity(state, discussion, origin));
        if (method === "PUT") return resolve(state, discussion, params, caller);
        const body = bodyOf(params);
        if (typeof body !== "string") return body;
        const first = discussion.notes[0]!;
        // replying to a plain note turns it into a (resolvable) discussion, as GitLab does
        if (discussion.individual_note) {
          discussion.individual_note = false;
          first.type = "DiscussionNote";
        }
        const type = first.type === "DiffNote" ? "DiffNote" : "DiscussionNote";
        const note = newNote(type, body, caller.user, first.position);
        note.resolved = first.resolved;
        note.resolved_by = first.resolved_by;
        note.resolved_at = first.resolved_at;
        discussion.notes.push(note);
        return reply(201, noteEntity(state, note, origin));
      }
      default:
        return errors.noRoute();
    }
  };

  const resolve = (state: Held, discussion: Discussion, params: Record<string, unknown>, caller: Caller) => {
    const origin = options.origin();
    const given = params.resolved;
    if (given === undefined) return errors.invalid("resolved is missing");
    const resolved =
      given === true || given === "true" ? true : given === false || given === "false" ? false : null;
    if (resolved === null) return errors.invalid("resolved is invalid");
    const mayResolve = caller.level >= DEVELOPER || caller.user.id === state.mr.author_id;
    if (discussion.individual_note || !mayResolve) return errors.forbidden();
    const at = now();
    for (const note of discussion.notes) {
      note.resolved = resolved;
      note.resolved_by = resolved ? caller.user : null;
      note.resolved_at = resolved ? at : null;
    }
    return reply(200, discussionEntity(state, discussion, origin));
  };

  return {
    answer,
    notes: (projectPath: string, iid: number) => {
      const state = byPath(projectPath, iid);
      return allNotes(state).map((note) => noteEntity(state, note, options.origin()));
    },
    discussions: (projectPath: string, iid: number) => {
      const state = byPath(projectPath, iid);
      return state.discussions.map((discussion) => discussionEntity(state, discussion, options.origin()));
    },
    approvals: (projectPath: string, iid: number) =>
      byPath(projectPath, iid).approvals.map((approval) => approval.user.username),
    awards: (projectPath: string, iid: number) =>
      byPath(projectPath, iid).awards.map((given) => ({
        note_id: given.note_id,
        name: given.name,
        user: given.user.username,
      })),
    push: (projectPath: string, iid: number, version: { head_sha: string; diffs: FakeDiff[] }) => {
      const { mr } = byPath(projectPath, iid);
      mr.diff_refs = { ...mr.diff_refs, head_sha: version.head_sha };
      mr.diffs = structuredClone(version.diffs);
    },
  };
}
