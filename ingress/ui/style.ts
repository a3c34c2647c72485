/** The one stylesheet of the pages, served from `/ui/style.css` so the CSP needs no inline style. */
export const STYLESHEET = `
:root { color-scheme: light; --fg: #1d2330; --muted: #5d6675; --line: #d9dee7; --bg: #f6f7f9; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, sans-serif; color: var(--fg); background: var(--bg); }
header.top { background: #1d2330; color: #fff; padding: 10px 24px; display: flex; gap: 24px; align-items: center; }
header.top a { color: #fff; text-decoration: none; }
header.top .brand { font-weight: 700; }
header.top form { margin-left: auto; }
main { max-width: 1100px; margin: 0 auto; padding: 20px 24px 48px; }
h1 { font-size: 20px; margin: 0 0 4px; }
h2 { font-size: 16px; margin: 24px 0 8px; }
h3 { font-size: 14px; margin: 12px 0 6px; }
code, pre { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 12.5px; }
pre { background: #fff; border: 1px solid var(--line); padding: 10px; overflow: auto; max-height: 420px; white-space: pre-wrap; word-break: break-word; }
section.card { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 12px 16px; margin: 12px 0; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 4px 16px; margin: 8px 0; }
dl.facts dt { color: var(--muted); }
dl.facts dd { margin: 0; }
table { border-collapse: collapse; width: 100%; background: #fff; }
th, td { text-align: left; padding: 6px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { color: var(--muted); font-weight: 600; }
.status { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: 12px; font-weight: 600; background: #e6e9ef; }
.status-completed { background: #d7f2df; color: #135c2b; }
.status-error, .status-failed, .status-cancelled { background: #fbdada; color: #8a1c1c; }
.status-running, .status-queued { background: #dde8fb; color: #1c3f8a; }
.diagnostic { border-left: 4px solid #c62828; background: #fff4f4; padding: 8px 12px; margin: 8px 0; }
.diagnostic code { font-weight: 700; }
.muted { color: var(--muted); }
svg.timeline { width: 100%; height: 14px; display: block; }
svg.chart { max-width: 100%; height: auto; background: #fff; border: 1px solid var(--line); border-radius: 6px; }
p.verdict { font-weight: 600; }
td.notes { white-space: pre-wrap; word-break: break-word; }
svg.timeline rect.track { fill: #eef0f4; }
svg.timeline rect.bar { fill: #4a78d0; }
svg.timeline rect.bar-failed { fill: #c62828; }
tr.subtask td:nth-child(2) { padding-left: 1.5em; }
form.filters { display: flex; gap: 12px; align-items: end; margin: 12px 0; }
form.filters label, form.login label { display: flex; flex-direction: column; gap: 2px; color: var(--muted); }
input, select, button { font: inherit; padding: 4px 8px; }
form.login { max-width: 420px; display: flex; flex-direction: column; gap: 12px; }
p.error { color: #8a1c1c; }
details > summary { cursor: pointer; color: #1c3f8a; }
.placeholder { color: var(--muted); font-style: italic; }
`;
