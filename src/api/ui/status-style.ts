// CSS of the status page (GET /ui/status.css). Embedded as a string so `npm ci`'s tsc
// build ships it with no copy step; system fonts only: the page makes no outside request.
export const STATUS_CSS = String.raw`
:root {
  --bg: #f6f7f9; --panel: #ffffff; --text: #1d2330; --muted: #667085; --line: #e4e7ec;
  --accent: #2f5bea; --ok: #12805c; --ok-bg: #e5f6ef; --warn: #b54708; --warn-bg: #fef0e3;
  --bad: #c01c28; --bad-bg: #fdecec; --idle-bg: #eef0f4;
  --mono: ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace;
}
@media (prefers-color-scheme: dark) {
  :root { --bg: #12151b; --panel: #1a1f27; --text: #e6e8ee; --muted: #98a1b3; --line: #2a313c;
    --accent: #7d9bff; --ok: #4fd1a1; --ok-bg: #173a2f; --warn: #f5a35c; --warn-bg: #3b2a18;
    --bad: #ff7b83; --bad-bg: #3d1c20; --idle-bg: #252b35; }
}
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--text); font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
header { display: flex; align-items: center; gap: 16px; padding: 14px 28px; background: var(--panel); border-bottom: 1px solid var(--line); }
header h1 { font-size: 18px; margin: 0; letter-spacing: .2px; }
header h1 span { color: var(--muted); font-weight: 400; }
header nav { margin-left: auto; display: flex; gap: 14px; }
header nav a { color: var(--accent); text-decoration: none; }
header nav a:hover { text-decoration: underline; }
.live { display: inline-flex; align-items: center; gap: 6px; color: var(--muted); font-size: 13px; }
.dot { width: 9px; height: 9px; border-radius: 50%; background: var(--muted); }
.live.ok .dot { background: var(--ok); box-shadow: 0 0 0 3px var(--ok-bg); }
.live.bad .dot { background: var(--bad); box-shadow: 0 0 0 3px var(--bad-bg); }
main { max-width: 1180px; margin: 0 auto; padding: 22px 28px 40px; }
.banner { display: none; margin-bottom: 16px; padding: 10px 14px; border-radius: 8px; background: var(--bad-bg); color: var(--bad); }
.banner.show { display: block; }
.banner a { color: inherit; }
.cards { display: grid; grid-template-columns: repeat(6, minmax(0, 1fr)); gap: 12px; margin-bottom: 18px; }
@media (max-width: 900px) { .cards { grid-template-columns: repeat(3, minmax(0, 1fr)); } }
.card { background: var(--panel); border: 1px solid var(--line); border-radius: 10px; padding: 12px 14px; }
.card .label { color: var(--muted); font-size: 12px; text-transform: uppercase; letter-spacing: .6px; }
.card .value { font-size: 22px; font-weight: 600; margin-top: 2px; font-variant-numeric: tabular-nums; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
.card .sub { color: var(--muted); font-size: 12px; }
.card.leaderless .value { color: var(--bad); }
section { background: var(--panel); border: 1px solid var(--line); border-radius: 10px; margin-bottom: 18px; overflow-x: auto; min-width: 0; }
.sid { margin-left: 8px; font-size: 12px; }
section > h2 { display: flex; align-items: baseline; gap: 10px; margin: 0; padding: 12px 16px; font-size: 15px; border-bottom: 1px solid var(--line); }
section > h2 .hint { color: var(--muted); font-weight: 400; font-size: 12px; }
section > h2 input { margin-left: auto; font: inherit; font-size: 13px; padding: 4px 8px; border: 1px solid var(--line); border-radius: 6px; background: var(--bg); color: var(--text); width: 220px; }
table { width: 100%; border-collapse: collapse; }
th, td { text-align: left; padding: 8px 16px; border-bottom: 1px solid var(--line); white-space: nowrap; }
th { color: var(--muted); font-weight: 500; font-size: 12px; text-transform: uppercase; letter-spacing: .5px; }
tr:last-child td { border-bottom: 0; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
td.mono { font-family: var(--mono); font-size: 12.5px; }
td.name { max-width: 320px; overflow: hidden; text-overflow: ellipsis; }
td.value { max-width: 360px; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
td.muted { color: var(--muted); }
.not-ready { color: var(--warn); font-size: 12px; margin-top: 2px; }
.badge { display: inline-block; padding: 1px 8px; border-radius: 999px; font-size: 12px; font-weight: 600; background: var(--idle-bg); color: var(--muted); }
.badge.leader { background: var(--ok-bg); color: var(--ok); }
.badge.candidate { background: var(--warn-bg); color: var(--warn); }
.badge.unreachable { background: var(--bad-bg); color: var(--bad); }
.lag-high { color: var(--warn); font-weight: 600; }
.empty { padding: 16px; color: var(--muted); }
.cols { display: grid; grid-template-columns: 2fr 1fr; gap: 18px; }
@media (max-width: 900px) { .cols { grid-template-columns: 1fr; } }
.cols section { margin-bottom: 0; }
.cols + section { margin-top: 18px; }
ol.changes { list-style: none; margin: 0; padding: 6px 0; max-height: 330px; overflow-y: auto; }
ol.changes li { display: flex; gap: 10px; padding: 5px 16px; }
ol.changes .when { color: var(--muted); font-variant-numeric: tabular-nums; min-width: 72px; }
ol.changes .none { color: var(--bad); }
.auth { display: none; margin-bottom: 16px; padding: 14px 16px; border-radius: 10px; background: var(--panel); border: 1px solid var(--line); }
.auth.show { display: flex; gap: 10px; align-items: center; }
.auth input { flex: 1; font: inherit; padding: 6px 8px; border: 1px solid var(--line); border-radius: 6px; background: var(--bg); color: var(--text); }
.auth button { font: inherit; padding: 6px 14px; border: 0; border-radius: 6px; background: var(--accent); color: #fff; cursor: pointer; }
.cols + section { margin-top: 18px; }
.who { display: block; }
.badge.shared { background: var(--ok-bg); color: var(--ok); }
.meter { display: inline-block; vertical-align: middle; width: 80px; height: 8px; margin-left: 8px; border-radius: 4px; background: var(--idle-bg); overflow: hidden; }
.meter > span { display: block; height: 100%; background: var(--accent); }
.meter.full > span { background: var(--warn); }
td.queue .who { color: var(--muted); }
footer { color: var(--muted); font-size: 12px; text-align: center; margin-top: 8px; }
.cols + .cols { margin-top: 18px; }
.chart { padding: 10px 16px 0; }
.chart svg { display: block; width: 100%; height: 150px; }
.chart rect.grants { fill: var(--accent); opacity: .75; }
.chart polyline.wait { fill: none; stroke: var(--warn); stroke-width: 1.6; vector-effect: non-scaling-stroke; }
.chart line.axis { stroke: var(--line); stroke-width: 1; vector-effect: non-scaling-stroke; }
.legend { display: flex; align-items: center; gap: 6px; padding: 6px 16px 12px; color: var(--muted); font-size: 12px; flex-wrap: wrap; }
.legend .key { display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin-left: 8px; }
.legend .key.grants { background: var(--accent); }
.legend .key.wait { background: var(--warn); }
`;
