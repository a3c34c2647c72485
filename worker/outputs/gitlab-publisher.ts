import { accessLevel, GitlabApiError, type GitlabClient } from "../../shared/codehost/gitlab.ts";
import { PublishError, redact } from "./attempt.ts";
import type { PullRef } from "./codehost.ts";
import type { Remote } from "./delivery.ts";
import { hasMarker, type Sealed } from "./render.ts";

/**
 * The merge request side of publishing, through gitbeaker: notes (comments, sticky and progress
 * notes, a review's summary), positioned discussions (a review's findings), replies in a
 * discussion, approvals. Only what svc's own user wrote is ever adopted or edited: a marker in a
 * note proves nothing, anyone on the merge request can write one.
 */
const PAGE = 100;
const MAX_PAGES = 20;

/** Turns a GitLab failure into a judged one; the token never reaches the message. */
export function gitlabFailure(error: unknown, token: string): PublishError {
  if (error instanceof PublishError) return error;
  const status = error instanceof GitlabApiError ? error.status : 0;
  const message = error instanceof GitlabApiError ? error.hostMessage : (error as Error).message;
  const retryAfter = error instanceof GitlabApiError ? error.retryAfter : undefined;
  return new PublishError({
    kind: status === 0 || status >= 500 || status === 429 ? "retry" : "final",
    status: status === 0 ? "network" : String(status),
    message: redact(message, [token]),
    ...(retryAfter !== undefined ? { retryAfter } : {}),
  });
}

export interface GitlabNote {
  id: number;
  body: string;
  type?: string | null;
  author: { id: number; username?: string };
  resolvable?: boolean;
  resolved?: boolean;
  resolved_by?: { id: number; username?: string } | null;
  system?: boolean;
  position?: {
    base_sha?: string;
    start_sha?: string;
    head_sha?: string;
    old_path?: string | null;
    new_path?: string | null;
    old_line?: number | null;
    new_line?: number | null;
  } | null;
}

export interface GitlabDiscussion {
  id: string;
  individual_note: boolean;
  notes: GitlabNote[];
}

/** A finding's place as GitLab's text position names it (`diff_refs` and the path and line on one side). */
export interface NotePosition {
  baseSha: string;
  startSha: string;
  headSha: string;
  positionType: "text";
  oldPath: string;
  newPath: string;
  newLine?: string;
  oldLine?: string;
}

export class GitlabPublisher {
  readonly kind = "gitlab";
  readonly #client: GitlabClient;
  readonly #token: string;
  readonly #web: string;
  #self: Promise<{ id: number; username: string }> | undefined;

  /** `web`: GitLab's web origin (and path), for links to notes */
  constructor(client: GitlabClient, token: string, web: string) {
    this.#client = client;
    this.#token = token;
    this.#web = web.replace(/\/+$/, "");
  }

  get token(): string {
    return this.#token;
  }

  async #call<T>(request: () => Promise<unknown>): Promise<T> {
    try {
      return (await request()) as T;
    } catch (error) {
      throw gitlabFailure(error, this.#token);
    }
  }

  /** svc's own GitLab user (`GET /user`), asked once per publisher. */
  self(): Promise<{ id: number; username: string }> {
    this.#self ??= this.#call<{ id: number; username: string }>(() => this.#client.Users.showCurrentUser());
    return this.#self;
  }

  project(ref: PullRef): string {
    return `${ref.owner}/${ref.repo}`;
  }

  noteUrl(ref: PullRef, id: number | string): string {
    return `${this.#web}/${this.project(ref)}/-/merge_requests/${ref.number}#note_${id}`;
  }

  #remote(ref: PullRef, note: { id: number }): Remote {
    return { id: String(note.id), url: this.noteUrl(ref, note.id) };
  }

  async postComment(ref: PullRef, body: string): Promise<Remote> {
    const note = await this.#call<GitlabNote>(() =>
      this.#client.MergeRequestNotes.create(this.project(ref), ref.number, body),
    );
    return this.#remote(ref, note);
  }

  /** Edits a note (`PUT …/notes/:id`); GitLab answers 403 for another user's note, 404 for one gone. */
  async updateComment(ref: PullRef, noteId: string, body: string): Promise<Remote> {
    const note = await this.#call<GitlabNote>(() =>
      this.#client.MergeRequestNotes.edit(this.project(ref), ref.number, Number(noteId), { body }),
    );
    return this.#remote(ref, note);
  }

  async notes(ref: PullRef): Promise<GitlabNote[]> {
    return this.#call<GitlabNote[]>(() =>
      this.#client.MergeRequestNotes.all(this.project(ref), ref.number, {
        sort: "asc",
        orderBy: "created_at",
        perPage: PAGE,
        maxPages: MAX_PAGES,
      }),
    );
  }

  /** svc's own note carrying this run's marker (an answer lost after GitLab wrote it). */
  async findComment(ref: PullRef, run: Sealed, key: string): Promise<Remote | undefined> {
    const me = await this.self();
    const found = (await this.notes(ref)).find(
      (note) => note.author.id === me.id && hasMarker(note.body, run, key),
    );
    return found && this.#remote(ref, found);
  }

  async discussions(ref: PullRef): Promise<GitlabDiscussion[]> {
    return this.#call<GitlabDiscussion[]>(() =>
      this.#client.MergeRequestDiscussions.all(this.project(ref), ref.number, {
        perPage: PAGE,
        maxPages: MAX_PAGES,
      }),
    );
  }

  async mergeRequest(
    ref: PullRef,
  ): Promise<{ sha: string; diff_refs: { base_sha: string; start_sha: string; head_sha: string } | null }> {
    return this.#call(() => this.#client.MergeRequests.show(this.project(ref), ref.number));
  }

  /** The merge request's changed files as a unified `patch` each, GitHub's shape for diff-lines.ts. */
  async listFiles(ref: PullRef): Promise<{ filename: string; previous?: string; patch?: string }[]> {
    const diffs = await this.#call<{ old_path: string; new_path: string; diff?: string }[]>(() =>
      this.#client.MergeRequests.allDiffs(this.project(ref), ref.number, {
        perPage: PAGE,
        maxPages: MAX_PAGES,
      }),
    );
    return diffs.map((diff) => ({
      filename: diff.new_path,
      previous: diff.old_path,
      ...(diff.diff ? { patch: diff.diff } : {}),
    }));
  }

  /** Opens a positioned discussion: its first note as the remote, and the discussion's id. */
  async createDiscussion(
    ref: PullRef,
    body: string,
    position: NotePosition,
  ): Promise<Remote & { discussionId: string }> {
    const discussion = await this.#call<GitlabDiscussion>(() =>
      this.#client.MergeRequestDiscussions.create(this.project(ref), ref.number, body, {
        position: position as never,
      }),
    );
    return { ...this.#remote(ref, discussion.notes[0]!), discussionId: discussion.id };
  }

  async resolveDiscussion(ref: PullRef, discussionId: string): Promise<void> {
    await this.#call(() =>
      this.#client.MergeRequestDiscussions.resolve(this.project(ref), ref.number, discussionId, true),
    );
  }

  async approve(ref: PullRef, sha: string): Promise<void> {
    await this.#call(() =>
      this.#client.MergeRequestApprovals.approve(this.project(ref), ref.number, sha ? { sha } : {}),
    );
  }

  /**
   * A reply in the discussion holding the note `noteId` (what an agent's `in_reply_to` names: the
   * note it answers, as on GitHub).
   */
  async postReply(ref: PullRef, noteId: number, body: string): Promise<Remote> {
    const discussion = (await this.discussions(ref)).find((entry) =>
      entry.notes.some((note) => note.id === noteId),
    );
    if (!discussion)
      throw new PublishError({
        kind: "final",
        status: "404",
        message: `no discussion on ${this.project(ref)}!${ref.number} holds note ${noteId}`,
      });
    const note = await this.#call<GitlabNote>(() =>
      this.#client.MergeRequestDiscussions.addNote(this.project(ref), ref.number, discussion.id, body),
    );
    return this.#remote(ref, note);
  }

  /** svc's own reply carrying this run's marker, in any discussion. */
  async findReply(ref: PullRef, run: Sealed, key: string): Promise<Remote | undefined> {
    const me = await this.self();
    for (const discussion of await this.discussions(ref))
      for (const note of discussion.notes)
        if (note.author.id === me.id && hasMarker(note.body, run, key)) return this.#remote(ref, note);
    return undefined;
  }

  /** The award emoji on a merge request's note (`GET …/notes/:note_id/award_emoji`). */
  async noteAwards(
    ref: PullRef,
    noteId: number,
  ): Promise<{ name: string; user: { id: number; username?: string } }[]> {
    return this.#call(() =>
      this.#client.MergeRequestNoteAwardEmojis.all(this.project(ref), ref.number, noteId, {
        perPage: PAGE,
        maxPages: MAX_PAGES,
      }),
    );
  }

  /** A user's access level on the project (inherited memberships included), undefined for none. */
  async accessLevel(ref: PullRef, userId: number): Promise<number | undefined> {
    return this.#call(() => accessLevel(this.#client, this.project(ref), userId));
  }

  /** Award emoji on a note (GitLab's reactions): `eyes`, `thumbsdown`. */
  async award(ref: PullRef, noteId: number, name: string): Promise<void> {
    await this.#call(() =>
      this.#client.MergeRequestNoteAwardEmojis.award(this.project(ref), ref.number, noteId, name),
    );
  }
}
