// HTML shell of the status page (GET /). It holds no cluster data: the script fetches
// /v1/status from the node that served the page, so the shell is public even when auth is
// on (the data needs a token with `read`). Everything the page loads comes from this node.
export const STATUS_HTML = String.raw`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'">
<title>raftlock status</title>
<link rel="stylesheet" href="/ui/status.css">
<link rel="icon" href="data:,">
</head>
<body>
<header>
  <h1>raftlock <span id="cluster-name"></span></h1>
  <span class="live" id="live"><span class="dot"></span><span id="live-text">connecting…</span></span>
  <nav><a href="/docs">API docs</a><a href="/openapi.json">OpenAPI</a><a href="/metrics">Metrics</a></nav>
</header>
<main>
  <div class="banner" id="banner"></div>
  <form class="auth" id="auth"><span>This cluster needs a token with the <b>read</b> right.</span><input id="token" type="password" placeholder="bearer token" autocomplete="off"><button type="submit">Show</button></form>
  <div class="cards">
    <div class="card" id="card-leader"><div class="label">Leader</div><div class="value" id="leader-id">–</div><div class="sub" id="leader-term"></div></div>
    <div class="card"><div class="label">Leader changes</div><div class="value" id="changes-count">–</div><div class="sub">last hour</div></div>
    <div class="card"><div class="label">Sessions</div><div class="value" id="sessions-count">–</div><div class="sub">open</div></div>
    <div class="card"><div class="label">Locks held</div><div class="value" id="locks-count">–</div><div class="sub" id="delay-count"></div></div>
    <div class="card"><div class="label">Waiters</div><div class="value" id="waiters-count">–</div><div class="sub">queued acquires</div></div>
    <div class="card"><div class="label">Last token</div><div class="value" id="last-token">–</div><div class="sub">fencing</div></div>
  </div>
  <section>
    <h2>Members <span class="hint" id="members-hint"></span></h2>
    <table id="members"><thead><tr><th>Node</th><th>Role</th><th class="num">Term</th><th class="num">Commit</th><th class="num">Applied</th><th class="num">Lag</th><th>API</th></tr></thead><tbody></tbody></table>
  </section>
  <div class="cols">
    <section>
      <h2>Locks <span class="hint" id="locks-hint"></span><input id="lock-filter" type="search" placeholder="filter by name or owner"></h2>
      <table id="locks"><thead><tr><th>Name</th><th>Mode</th><th>Holder</th><th class="num">Token</th><th class="num">Held for</th><th class="num">Waiters</th></tr></thead><tbody></tbody></table>
      <div class="empty" id="locks-empty">No lock is held.</div>
    </section>
    <section>
      <h2>Leader changes <span class="hint" id="changes-hint"></span></h2>
      <ol class="changes" id="changes"></ol>
    </section>
  </div>
  <div class="cols">
    <section id="contended-section">
      <h2>Most contended locks <span class="hint" id="contended-hint"></span></h2>
      <table id="contended"><thead><tr><th>Name</th><th class="num">Waiters</th><th class="num">Longest wait</th><th>Holder</th></tr></thead><tbody></tbody></table>
      <div class="empty" id="contended-empty">Nobody waits for a lock.</div>
    </section>
    <section id="activity-section">
      <h2>Grants and waits <span class="hint" id="activity-hint">last minute</span></h2>
      <div class="chart"><svg id="activity-chart" viewBox="0 0 300 110" preserveAspectRatio="none" role="img" aria-label="grants per second and wait time, last minute"></svg></div>
      <div class="legend"><span class="key grants"></span>grants/s <span class="key wait"></span>average wait of the granted <span class="muted" id="activity-peak"></span></div>
    </section>
  </div>
  <section id="semaphores-section">
    <h2>Semaphores <span class="hint" id="semaphores-hint"></span></h2>
    <table id="semaphores"><thead><tr><th>Name</th><th>In use</th><th>Holders</th><th>Queue</th></tr></thead><tbody></tbody></table>
    <div class="empty" id="semaphores-empty">No semaphore is in use.</div>
  </section>
  <section id="elections-section">
    <h2>Elections <span class="hint" id="elections-hint"></span></h2>
    <table id="elections"><thead><tr><th>Name</th><th>Leader</th><th>Value</th><th class="num">Token</th><th class="num">Campaigners</th></tr></thead><tbody></tbody></table>
    <div class="empty" id="elections-empty">No election has a leader.</div>
  </section>
  <section>
    <h2>Live events <span class="hint" id="events-hint">GET /v1/watch on this node</span></h2>
    <ol class="changes events" id="events"></ol>
    <div class="empty" id="events-empty">No event since the page opened.</div>
  </section>
  <footer id="footer"></footer>
</main>
<script src="/ui/status.js" defer></script>
</body>
</html>
`;
