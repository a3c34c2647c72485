import { marked } from "marked";
import { escapeHtml } from "../../../ingress/ui/html.ts";
import type { FakeGitHub } from "../outputs/fake-github.ts";

/**
 * A pull request's conversation as github.com lays it out, built from what svc posted to the
 * loopback GitHub: its issue comments (the sticky comment among them) and its reviews with their
 * inline comments, each body rendered from Markdown as GitHub renders it (HTML comments such as
 * svc's markers stay invisible, `<sub>` is kept). It exists to put svc's own words in front of a
 * real browser for a screenshot; it judges nothing.
 */
export function conversationPage(github: FakeGitHub, pull: string, title: string): string {
  type Entry = { id: number; user: { login: string }; body: string; [field: string]: unknown };
  const issueComments = (github.comments.get(pull) ?? []) as Entry[];
  const reviews = (github.reviews.get(pull) ?? []) as Entry[];
  const inline = (github.reviewComments.get(pull) ?? []) as Entry[];
  const entries = [
    ...issueComments.map((comment) => ({ id: comment.id, html: box(comment, "commented") })),
    ...reviews.map((review) => ({
      id: review.id,
      html:
        box(review, "reviewed") +
        inline
          .filter((comment) => comment.pull_request_review_id === review.id)
          .map(
            (comment) =>
              `<div class="inline"><div class="path">${escapeHtml(String(comment.path))} line ${escapeHtml(String(comment.line ?? comment.original_line))}</div>${box(comment, "commented")}</div>`,
          )
          .join(""),
    })),
  ].sort((a, b) => a.id - b.id);
  return `<!doctype html><html><head><meta charset="utf-8"><title>${escapeHtml(title)}</title><style>${STYLE}</style></head>
<body><main><h1>${escapeHtml(title)} <span class="number">#${escapeHtml(pull.split("#")[1] ?? "")}</span></h1>
${entries.map((entry) => entry.html).join("\n")}</main></body></html>`;
}

function box(entry: { user: { login: string }; body: string }, verb: string): string {
  return `<section class="comment"><header><b>${escapeHtml(entry.user.login)}</b> ${verb}</header>
<div class="markdown">${marked.parse(entry.body ?? "", { async: false, gfm: true })}</div></section>`;
}

const STYLE = `
body { font: 14px/1.5 -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; color: #1f2328; background: #fff; margin: 0; }
main { max-width: 880px; margin: 24px auto; padding: 0 16px; }
h1 { font-weight: 400; font-size: 26px; } .number { color: #59636e; }
.comment { border: 1px solid #d1d9e0; border-radius: 6px; margin: 16px 0; }
.comment header { background: #f6f8fa; border-bottom: 1px solid #d1d9e0; padding: 8px 16px; border-radius: 6px 6px 0 0; color: #59636e; }
.comment header b { color: #1f2328; }
.markdown { padding: 12px 16px; } .markdown p { margin: 0 0 10px; }
.markdown hr { border: 0; border-top: 1px solid #d1d9e0; margin: 12px 0; }
.markdown sub { color: #59636e; }
.markdown code { background: #eff1f3; padding: 1px 4px; border-radius: 4px; font-size: 85%; }
.inline { margin-left: 40px; } .path { font-family: ui-monospace, monospace; font-size: 12px; color: #59636e; margin-top: 8px; }
`;
