import {
  CREATED_AT,
  type FakeDiff,
  type FakeGitLabUser,
  type FakeMergeRequest,
  type FakeProject,
  userBasic,
} from "./fake-gitlab-entities.ts";
import type { Position } from "./fake-gitlab-position.ts";

/**
 * The merge-request fake's state and how GitLab's API shows it: notes (Entities::Note, whose
 * resolved fields exist only on resolvable notes), discussions, the merge request, its approvals
 * (the EE shape, which svc reads on gitlab.com) and its diffs.
 */

/** Who is asking, and their access level in the project (0: not a member). */
export interface Caller {
  user: FakeGitLabUser;
  level: number;
}

/** A note as GitLab's API shows it (Entities::Note); `resolved*` only on resolvable notes. */
export interface GitLabNote {
  id: number;
  type: null | "DiscussionNote" | "DiffNote";
  body: string;
  author: { id: number; username: string; name: string };
  created_at: string;
  updated_at: string;
  system: boolean;
  noteable_id: number;
  noteable_type: "MergeRequest";
  noteable_iid: number;
  resolvable: boolean;
  resolved?: boolean;
  resolved_by?: { id: number; username: string } | null;
  position?: Position;
  [field: string]: unknown;
}

export interface GitLabDiscussion {
  id: string;
  individual_note: boolean;
  notes: GitLabNote[];
}

/** The fake's record of a note: real users and positions, turned into GitLab's shape on the way out. */
export interface Note {
  id: number;
  type: null | "DiscussionNote" | "DiffNote";
  body: string;
  author: FakeGitLabUser;
  created_at: string;
  updated_at: string;
  position?: Position;
  resolved: boolean;
  resolved_by: FakeGitLabUser | null;
  resolved_at: string | null;
}

export interface Discussion {
  id: string;
  individual_note: boolean;
  notes: Note[];
}

/** One merge request as the fake holds it: a copy of the fixture, which `push` changes. */
export interface Held {
  project: FakeProject;
  mr: FakeMergeRequest;
  id: number;
  discussions: Discussion[];
  approvals: { user: FakeGitLabUser; approved_at: string }[];
  awards: { id: number; name: string; user: FakeGitLabUser; note_id: number; created_at: string }[];
}

export const DEVELOPER = 30;

/** Every note of the merge request, discussion replies included, in the order posted. */
export function allNotes(state: Held): Note[] {
  return state.discussions.flatMap((discussion) => discussion.notes).sort((a, b) => a.id - b.id);
}

export function noteEntity(state: Held, note: Note, origin: string): GitLabNote {
  // only discussion notes are resolvable; GitLab leaves the resolved fields out of the others
  const resolvable = note.type !== null;
  return {
    id: note.id,
    type: note.type,
    body: note.body,
    attachment: null,
    author: userBasic(note.author, origin),
    created_at: note.created_at,
    updated_at: note.updated_at,
    system: false,
    noteable_id: state.id,
    noteable_type: "MergeRequest",
    project_id: state.project.id,
    ...(note.type === "DiffNote" ? { commit_id: null, position: note.position } : {}),
    resolvable,
    ...(resolvable
      ? {
          resolved: note.resolved,
          resolved_by: note.resolved_by && userBasic(note.resolved_by, origin),
          resolved_at: note.resolved_at,
        }
      : {}),
    suggestions: [],
    confidential: false,
    internal: false,
    imported: false,
    imported_from: "none",
    noteable_iid: state.mr.iid,
    commands_changes: {},
  };
}
export function discussionEntity(state: Held, discussion: Discussion, origin: string): GitLabDiscussion {
  return {
    id: discussion.id,
    individual_note: discussion.individual_note,
    notes: discussion.notes.map((note) => noteEntity(state, note, origin)),
  };
}

export function mrEntity(state: Held, caller: Caller, origin: string, author: FakeGitLabUser) {
  const { mr, project } = state;
  const path = project.path_with_namespace;
  const blocking = state.discussions.some(
    (discussion) => !discussion.individual_note && discussion.notes.some((note) => !note.resolved),
  );
  return {
    id: state.id,
    iid: mr.iid,
    project_id: project.id,
    title: mr.title ?? `Merge request !${mr.iid}`,
    description: "",
    state: "opened",
    created_at: CREATED_AT,
    updated_at: CREATED_AT,
    merged_by: null,
    merge_user: null,
    merged_at: null,
    closed_by: null,
    closed_at: null,
    target_branch: mr.target_branch,
    source_branch: mr.source_branch,
    user_notes_count: allNotes(state).length,
    upvotes: 0,
    downvotes: 0,
    author: userBasic(author, origin),
    assignees: [],
    assignee: null,
    reviewers: [],
    source_project_id: mr.source_project_id ?? project.id,
    target_project_id: project.id,
    labels: [],
    draft: false,
    work_in_progress: false,
    milestone: null,
    merge_when_pipeline_succeeds: false,
    merge_status: "can_be_merged",
    detailed_merge_status: "mergeable",
    sha: mr.diff_refs.head_sha,
    merge_commit_sha: null,
    squash_commit_sha: null,
    discussion_locked: null,
    should_remove_source_branch: null,
    force_remove_source_branch: false,
    reference: `!${mr.iid}`,
    references: { short: `!${mr.iid}`, relative: `!${mr.iid}`, full: `${path}!${mr.iid}` },
    web_url: `${origin}/${path}/-/merge_requests/${mr.iid}`,
    squash: false,
    has_conflicts: false,
    blocking_discussions_resolved: !blocking,
    changes_count: String(mr.diffs.length),
    diff_refs: { ...mr.diff_refs },
    first_contribution: false,
    user: { can_merge: caller.level >= DEVELOPER },
  };
}

/** Whether the approval service would take this user's approval now. */
export function eligible(state: Held, caller: Caller): boolean {
  return (
    caller.level >= DEVELOPER &&
    caller.user.id !== state.mr.author_id &&
    !state.approvals.some((approval) => approval.user.id === caller.user.id)
  );
}

export function approvalsEntity(state: Held, caller: Caller, origin: string) {
  return {
    id: state.id,
    iid: state.mr.iid,
    project_id: state.project.id,
    title: state.mr.title ?? `Merge request !${state.mr.iid}`,
    description: "",
    state: "opened",
    created_at: CREATED_AT,
    updated_at: CREATED_AT,
    merge_status: "can_be_merged",
    approved: state.approvals.length > 0,
    approvals_required: 0,
    approvals_left: 0,
    require_password_to_approve: false,
    approved_by: state.approvals.map((approval) => ({
      user: userBasic(approval.user, origin),
      approved_at: approval.approved_at,
    })),
    suggested_approvers: [],
    approvers: [],
    approver_groups: [],
    user_has_approved: state.approvals.some((approval) => approval.user.id === caller.user.id),
    user_can_approve: eligible(state, caller),
    approval_rules_left: [],
    has_approval_rules: false,
    merge_request_approvers_available: false,
    multiple_approval_rules_available: false,
    invalid_approvers_rules: [],
  };
}

export function diffEntity(diff: FakeDiff) {
  const mode = "100644";
  return {
    old_path: diff.old_path,
    new_path: diff.new_path,
    a_mode: diff.new_file ? "0" : mode,
    b_mode: diff.deleted_file ? "0" : mode,
    new_file: diff.new_file ?? false,
    renamed_file: diff.renamed_file ?? false,
    deleted_file: diff.deleted_file ?? false,
    generated_file: false,
    diff: diff.diff,
  };
}
