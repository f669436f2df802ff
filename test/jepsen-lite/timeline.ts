// timeline.html: one self-contained page a person can open. Top: every operation per
// client process over time (a bar from invoke to completion, coloured by outcome), fault
// windows shaded and labelled, as Jepsen's timeline; below: acquire latency over time on a
// log scale (Jepsen's latency plot). Hover a bar for the operation.
import { writeFileSync } from 'node:fs';
import type { Op } from '../checkers/history/history.js';
import type { FaultRecord } from '../checkers/history/index.js';
import { maxOf } from '../support/extrema.js';

const COLORS: Record<string, string> = { ok: '#2e9d4f', fail: '#d9534f', info: '#f0ad4e' };
const FAULT_COLORS: Record<string, string> = { partition: '#5b8def', kill: '#c0392b', pause: '#8e44ad', 'pause-client': '#e67e22', packet: '#16a085', unsynced: '#7f1d1d' };

const esc = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

function faultColor(v: string): string {
  const c = v.startsWith('partition') ? 'partition' : v.startsWith('kill') ? 'kill' : v === 'pause-client' ? 'pause-client' : v.startsWith('pause') ? 'pause' : v;
  return FAULT_COLORS[c] ?? '#999';
}

export function timelineSvg(ops: readonly Op[], faults: readonly FaultRecord[]): string {
  const procs = [...new Set(ops.map((o) => o.process))].sort((a, b) => (a === 'probe' ? 1 : b === 'probe' ? -1 : a.localeCompare(b, 'en', { numeric: true })));
  const end = Math.max(maxOf(ops.map((o) => o.completedAt), 1), maxOf(faults.map((f) => f.end)));
  const pxPerS = Math.max(12, Math.min(60, 2400 / (end / 1000)));
  const left = 60;
  const top = 40;
  const lane = 22;
  const width = left + (end / 1000) * pxPerS + 20;
  const x = (t: number): number => left + (t / 1000) * pxPerS;
  const laneH = procs.length * lane;
  const latTop = top + laneH + 50;
  const latH = 160;
  const height = latTop + latH + 40;
  const out: string[] = [];
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${width.toFixed(0)}" height="${height}" font-family="sans-serif" font-size="11">`);
  // fault windows
  for (const f of faults) {
    out.push(`<rect x="${x(f.start).toFixed(1)}" y="${top - 18}" width="${Math.max(1, x(f.end) - x(f.start)).toFixed(1)}" height="${latTop + latH - top + 18}" fill="${faultColor(f.variant)}" opacity="0.13"><title>${esc(`${f.variant}: ${f.detail} [${(f.start / 1000).toFixed(2)}s – ${(f.end / 1000).toFixed(2)}s]`)}</title></rect>`);
    out.push(`<text x="${(x(f.start) + 2).toFixed(1)}" y="${top - 6}" fill="${faultColor(f.variant)}">${esc(f.variant)}</text>`);
  }
  // time axis
  const stepS = pxPerS >= 30 ? 5 : pxPerS >= 15 ? 10 : 30;
  for (let s = 0; s <= end / 1000; s += stepS) {
    out.push(`<line x1="${x(s * 1000).toFixed(1)}" y1="${top}" x2="${x(s * 1000).toFixed(1)}" y2="${latTop + latH}" stroke="#ddd"/>`);
    out.push(`<text x="${x(s * 1000).toFixed(1)}" y="${latTop + latH + 14}" text-anchor="middle" fill="#555">${s}s</text>`);
  }
  // lanes
  procs.forEach((p, i) => {
    const y = top + i * lane;
    out.push(`<text x="4" y="${y + 14}" fill="#333">${esc(p)}</text>`);
    out.push(`<line x1="${left}" y1="${y + lane - 1}" x2="${width - 10}" y2="${y + lane - 1}" stroke="#eee"/>`);
  });
  for (const o of ops) {
    const i = procs.indexOf(o.process);
    const y = top + i * lane + (o.f === 'keepalive' ? 15 : o.f.startsWith('res-') ? 10 : 2);
    const h = o.f === 'keepalive' ? 4 : o.f.startsWith('res-') ? 4 : 8;
    const w = Math.max(1, x(o.completedAt) - x(o.invoke));
    const title = `${o.id} ${o.f} ${o.type} ${JSON.stringify(o.input)} → ${JSON.stringify(o.output)} [${o.invoke.toFixed(1)}–${o.completedAt.toFixed(1)} ms]`;
    out.push(`<rect x="${x(o.invoke).toFixed(1)}" y="${y}" width="${w.toFixed(1)}" height="${h}" fill="${COLORS[o.type]}"${o.f === 'acquire' ? '' : ' opacity="0.6"'}><title>${esc(title)}</title></rect>`);
  }
  // acquire latency, log scale 1 ms … 10 s
  out.push(`<text x="4" y="${latTop - 8}" fill="#333">acquire latency (log, 1 ms – 10 s)</text>`);
  const ly = (ms: number): number => latTop + latH - (Math.log10(Math.max(1, Math.min(10_000, ms))) / 4) * latH;
  for (const ms of [1, 10, 100, 1000, 10000]) out.push(`<text x="${left - 4}" y="${ly(ms) + 4}" text-anchor="end" fill="#777">${ms >= 1000 ? `${ms / 1000}s` : `${ms}ms`}</text><line x1="${left}" y1="${ly(ms)}" x2="${width - 10}" y2="${ly(ms)}" stroke="#eee"/>`);
  for (const o of ops) {
    if (o.f !== 'acquire') continue;
    out.push(`<circle cx="${x(o.invoke).toFixed(1)}" cy="${ly(o.completedAt - o.invoke).toFixed(1)}" r="2" fill="${COLORS[o.type]}"/>`);
  }
  out.push('</svg>');
  return out.join('\n');
}

export function writeTimeline(file: string, ops: readonly Op[], faults: readonly FaultRecord[], summary: { valid: boolean; seed: number; nodes: number; violations: string[] }): void {
  const legend = Object.entries(COLORS).map(([k, c]) => `<span style="color:${c}">■</span> ${k}`).join(' &nbsp; ');
  const faultLegend = Object.entries(FAULT_COLORS).map(([k, c]) => `<span style="color:${c}">■</span> ${k}`).join(' &nbsp; ');
  const html = `<!doctype html><meta charset="utf-8"><title>jepsen-lite seed ${summary.seed}</title>
<body style="font-family:sans-serif;margin:12px">
<h3>jepsen-lite — seed ${summary.seed}, ${summary.nodes} nodes — ${summary.valid ? '<span style="color:#2e9d4f">valid</span>' : '<span style="color:#d9534f">INVALID</span>'}</h3>
<p>ops: ${legend} &nbsp; | &nbsp; faults (shaded): ${faultLegend}. Tall bars: lock ops; thin: the fenced resource; bottom strip: keepalives. Hover for details.</p>
${summary.violations.length ? `<pre style="color:#d9534f;white-space:pre-wrap">${esc(summary.violations.slice(0, 20).join('\n'))}</pre>` : ''}
<div style="overflow-x:auto">${timelineSvg(ops, faults)}</div>
</body>`;
  writeFileSync(file, html);
}
