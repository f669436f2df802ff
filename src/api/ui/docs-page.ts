// GET /docs: the OpenAPI document rendered as one self-contained HTML page on the server
// (no script, no CDN — Swagger UI or Redoc would pull megabytes from outside). Every value
// is escaped; the page links to /openapi.json for generators.
type Json = Record<string, unknown>;

const esc = (s: unknown): string => String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string);

function refName(schema: unknown): string | null {
  const r = (schema as { $ref?: unknown } | undefined)?.$ref;
  return typeof r === 'string' ? r.replace('#/components/schemas/', '') : null;
}

function schemaLink(schema: unknown): string {
  const n = refName(schema);
  return n ? `<a href="#schema-${esc(n)}">${esc(n)}</a>` : `<code>${esc(JSON.stringify(schema))}</code>`;
}

function paramRows(params: Json[]): string {
  if (params.length === 0) return '';
  const rows = params.map((p) => `<tr><td><code>${esc(p['name'])}</code></td><td>${esc(p['in'])}</td><td>${p['required'] ? 'yes' : ''}</td><td><code>${esc(JSON.stringify(p['schema']))}</code>${p['description'] ? `<div class="d">${esc(p['description'])}</div>` : ''}</td></tr>`);
  return `<table><tr><th>parameter</th><th>in</th><th>required</th><th>schema</th></tr>${rows.join('')}</table>`;
}

function operationHtml(path: string, method: string, op: Json): string {
  const body = op['requestBody'] as Json | undefined;
  const bodyJson = (body?.['content'] as Json | undefined)?.['application/json'] as Json | undefined;
  const responses = Object.entries((op['responses'] as Json | undefined) ?? {}).map(([status, r]) => {
    const content = ((r as Json)['content'] as Json | undefined) ?? {};
    const [type, c] = Object.entries(content)[0] ?? [];
    const example = (c as Json | undefined)?.['example'];
    return `<tr><td class="st s${esc(status[0])}">${esc(status)}</td><td>${esc((r as Json)['description'])}</td><td>${type === 'application/json' ? schemaLink((c as Json)['schema']) : esc(type ?? '')}${example !== undefined ? `<pre>${esc(JSON.stringify(example, null, 2))}</pre>` : ''}</td></tr>`;
  });
  return `<details class="op" id="op-${esc(op['operationId'])}">
<summary><span class="m ${esc(method)}">${esc(method.toUpperCase())}</span><code class="p">${esc(path)}</code><span class="s">${esc(op['summary'])}</span></summary>
<div class="b">${op['description'] ? `<p>${esc(op['description'])}</p>` : ''}
${paramRows((op['parameters'] as Json[] | undefined) ?? [])}
${bodyJson ? `<h4>Request body${body?.['required'] ? '' : ' (optional)'}: ${schemaLink(bodyJson['schema'])}</h4>${bodyJson['example'] !== undefined ? `<pre>${esc(JSON.stringify(bodyJson['example'], null, 2))}</pre>` : ''}` : ''}
<h4>Responses</h4><table><tr><th>status</th><th>meaning</th><th>body</th></tr>${responses.join('')}</table></div>
</details>`;
}

const CSS = `body{margin:0;font:14px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,Arial,sans-serif;color:#1d2330;background:#f6f7f9}
header{padding:16px 28px;background:#fff;border-bottom:1px solid #e4e7ec;display:flex;gap:16px;align-items:baseline}
header h1{margin:0;font-size:19px}header a{color:#2f5bea;text-decoration:none}main{max-width:1080px;margin:0 auto;padding:18px 28px 48px}
h2{margin:26px 0 8px;font-size:16px;text-transform:capitalize}code,pre{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12.5px}
pre{background:#f1f3f7;padding:8px 10px;border-radius:6px;overflow:auto;margin:6px 0}
.op{background:#fff;border:1px solid #e4e7ec;border-radius:8px;margin:6px 0}.op summary{cursor:pointer;padding:9px 12px;display:flex;gap:12px;align-items:center}
.op .b{padding:4px 14px 12px;border-top:1px solid #e4e7ec}.m{font-weight:700;font-size:12px;min-width:58px;text-align:center;padding:2px 0;border-radius:4px;color:#fff}
.get{background:#2f5bea}.post{background:#12805c}.delete{background:#c01c28}.p{font-weight:600}.s{color:#667085}
table{border-collapse:collapse;width:100%;margin:6px 0}th,td{text-align:left;padding:5px 8px;border-bottom:1px solid #eef0f4;vertical-align:top}
th{color:#667085;font-weight:500;font-size:12px}.d{color:#667085;font-size:12px}.st{font-weight:700}.s2{color:#12805c}.s4{color:#b54708}.s5{color:#c01c28}
h4{margin:12px 0 4px;font-size:13px}`;

export function docsHtml(doc: Json): string {
  const info = doc['info'] as Json;
  const paths = doc['paths'] as Record<string, Record<string, Json>>;
  const byTag = new Map<string, string[]>();
  for (const [path, ops] of Object.entries(paths)) {
    for (const [method, op] of Object.entries(ops)) {
      const tag = ((op['tags'] as string[] | undefined) ?? ['other'])[0] as string;
      byTag.set(tag, [...(byTag.get(tag) ?? []), operationHtml(path, method, op)]);
    }
  }
  const sections = [...byTag].map(([tag, ops]) => `<h2>${esc(tag)}</h2>${ops.join('\n')}`).join('\n');
  const schemas = Object.entries(((doc['components'] as Json)['schemas'] as Json) ?? {})
    .map(([name, s]) => `<details class="op" id="schema-${esc(name)}"><summary><code class="p">${esc(name)}</code></summary><div class="b"><pre>${esc(JSON.stringify(s, null, 2))}</pre></div></details>`)
    .join('\n');
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<title>raftlock API ${esc(info['version'])}</title><style>${CSS}</style></head><body>
<header><h1>raftlock API <small>${esc(info['version'])}</small></h1><a href="/openapi.json">openapi.json</a><a href="/">status page</a></header>
<main><p>${esc(info['description'])}</p><p>Send <code>Authorization: Bearer &lt;token&gt;</code> when the cluster has auth on. Every error is <code>{"error":{"code","message"}}</code>.</p>
${sections}<h2>schemas</h2>${schemas}</main></body></html>`;
}
