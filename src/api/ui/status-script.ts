// Browser script of the status page (GET /ui/status.js): polls /v1/status on the node
// that served the page every second (no reload, paused while the tab is hidden) and
// renders with textContent only — lock names and owners are client-supplied strings and
// must never become markup. Plain ES2017, no framework, no outside request.
// (Embedded as a string for the build; it is written without template literals.)
export const STATUS_JS = String.raw`(function () {
  'use strict';
  var POLL_MS = 1000;
  var TIMEOUT_MS = 3000;
  var $ = function (id) { return document.getElementById(id); };
  var token = sessionStorage.getItem('raftlock-token') || '';
  var last = null;
  var lastOk = 0;
  var timer = null;
  var inflight = false;

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function num(n) { return n === null || n === undefined ? '–' : Number(n).toLocaleString('en-US'); }
  function dur(ms) {
    if (ms < 0) ms = 0;
    var s = Math.floor(ms / 1000);
    if (s < 60) return s + 's';
    var m = Math.floor(s / 60);
    if (m < 60) return m + 'm ' + (s % 60) + 's';
    var h = Math.floor(m / 60);
    if (h < 48) return h + 'h ' + (m % 60) + 'm';
    return Math.floor(h / 24) + 'd ' + (h % 24) + 'h';
  }
  function clock(ms) { return new Date(ms).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit' }); }
  function setText(id, v) { var e = $(id); if (e.textContent !== String(v)) e.textContent = String(v); }

  function live(ok, text) {
    $('live').className = 'live ' + (ok ? 'ok' : 'bad');
    setText('live-text', text);
  }

  function renderMembers(s) {
    var body = $('members').tBodies[0];
    body.textContent = '';
    s.members.forEach(function (m) {
      var tr = el('tr');
      tr.setAttribute('data-member', m.id);
      tr.setAttribute('data-role', m.role);
      var idCell = el('td', 'mono', m.id + (m.id === s.node.node_id ? ' (this node)' : ''));
      tr.appendChild(idCell);
      var roleCell = el('td');
      roleCell.appendChild(el('span', 'badge ' + m.role, m.role));
      // why the member is not ready, in its own words (e.g. "bootstrapping: waiting for n4")
      if (m.not_ready) roleCell.appendChild(el('div', 'muted not-ready', m.not_ready));
      tr.appendChild(roleCell);
      tr.appendChild(el('td', 'num', num(m.term)));
      tr.appendChild(el('td', 'num', num(m.commit_index)));
      tr.appendChild(el('td', 'num', num(m.applied_index)));
      var lag = el('td', 'num' + (m.lag !== null && m.lag > 100 ? ' lag-high' : ''), num(m.lag));
      tr.appendChild(lag);
      var api = el('td', 'mono muted', m.api);
      if (m.error) api.title = m.error;
      tr.appendChild(api);
      body.appendChild(tr);
    });
    setText('members-hint', s.members.length + ' members · answered by ' + s.node.node_id);
  }

  function renderLocks(s) {
    var body = $('locks').tBodies[0];
    var f = ($('lock-filter').value || '').toLowerCase();
    body.textContent = '';
    var shown = 0;
    s.locks.forEach(function (l) {
      // every holder, in grant order (a shared lock has several; a server of an earlier
      // version sends only the one holder's fields)
      var holders = l.holders || [{ session_id: l.session_id, owner: l.owner, fencing_token: l.fencing_token }];
      var mode = l.mode || 'exclusive';
      if (f && l.name.toLowerCase().indexOf(f) < 0 && !holders.some(function (h) { return h.owner.toLowerCase().indexOf(f) >= 0; })) return;
      shown++;
      var tr = el('tr');
      tr.setAttribute('data-lock', l.name);
      tr.setAttribute('data-mode', mode);
      var name = el('td', 'mono name', l.name);
      name.title = l.name;
      tr.appendChild(name);
      var modeCell = el('td');
      modeCell.appendChild(el('span', 'badge ' + mode, mode === 'shared' ? 'shared · ' + holders.length : 'exclusive'));
      tr.appendChild(modeCell);
      var holder = el('td');
      holders.forEach(function (h) { holder.appendChild(who(h.owner, h.session_id, null)); });
      tr.appendChild(holder);
      var tok = el('td', 'num mono', holders.map(function (h) { return h.fencing_token; }).join(', '));
      tok.setAttribute('data-token', String(l.fencing_token));
      tr.appendChild(tok);
      var held = el('td', 'num', (l.held_since_exact ? '' : '≥ ') + dur(s.generated_at_ms - l.held_since_ms));
      if (!l.held_since_exact) held.title = 'held since before this node started watching';
      tr.appendChild(held);
      tr.appendChild(el('td', 'num', num(l.waiters)));
      body.appendChild(tr);
    });
    $('locks-empty').style.display = shown === 0 ? 'block' : 'none';
    $('locks-empty').textContent = s.locks.length === 0 ? 'No lock is held.' : 'No lock matches the filter.';
    setText('locks-hint', s.locks_truncated ? 'first ' + s.locks.length + ' of ' + num(s.observations.locks_held) : num(s.locks.length) + ' held');
  }

  /** one holder or waiter: owner, shortened session id, and an optional note */
  function who(owner, sessionId, note) {
    var line = el('span', 'who');
    line.setAttribute('data-session', sessionId);
    line.appendChild(el('span', null, owner || '(no owner)'));
    var sid = el('span', 'mono muted sid', sessionId.length > 12 ? sessionId.slice(0, 8) + '…' : sessionId);
    sid.title = 'session ' + sessionId;
    line.appendChild(sid);
    if (note) line.appendChild(el('span', 'muted sid', note));
    return line;
  }

  function renderSemaphores(s) {
    var sems = s.semaphores || [];
    var body = $('semaphores').tBodies[0];
    var f = ($('lock-filter').value || '').toLowerCase();
    body.textContent = '';
    var shown = 0;
    sems.forEach(function (m) {
      if (f && m.name.toLowerCase().indexOf(f) < 0 && !m.holders.some(function (h) { return h.owner.toLowerCase().indexOf(f) >= 0; })) return;
      shown++;
      var tr = el('tr');
      tr.setAttribute('data-semaphore', m.name);
      var name = el('td', 'mono name', m.name);
      name.title = m.name;
      tr.appendChild(name);
      var use = el('td', 'num');
      use.setAttribute('data-in-use', m.in_use + '/' + m.limit);
      use.appendChild(el('span', null, m.in_use + ' / ' + m.limit));
      var meter = el('span', 'meter' + (m.in_use >= m.limit ? ' full' : ''));
      var fill = el('span');
      fill.style.width = Math.min(100, Math.round(100 * m.in_use / Math.max(1, m.limit))) + '%';
      meter.appendChild(fill);
      use.appendChild(meter);
      tr.appendChild(use);
      var holders = el('td');
      m.holders.forEach(function (h) { holders.appendChild(who(h.owner, h.session_id, '×' + h.permits + ' · token ' + h.fencing_token)); });
      tr.appendChild(holders);
      var queue = el('td', 'queue');
      queue.setAttribute('data-waiting', String(m.waiters.length));
      queue.appendChild(el('span', null, m.waiters.length === 0 ? 'empty' : m.waiters.length + ' waiting'));
      m.waiters.slice(0, 5).forEach(function (w) { queue.appendChild(who(w.owner, w.session_id, '#' + w.position + ' wants ' + w.permits)); });
      if (m.waiters.length > 5) queue.appendChild(el('span', 'who', '…'));
      tr.appendChild(queue);
      body.appendChild(tr);
    });
    $('semaphores-empty').style.display = shown === 0 ? 'block' : 'none';
    $('semaphores-empty').textContent = sems.length === 0 ? 'No semaphore is in use.' : 'No semaphore matches the filter.';
    setText('semaphores-hint', s.semaphores_truncated ? 'first ' + sems.length : num(sems.length) + ' in use');
  }

  function renderElections(s) {
    var els = s.elections || [];
    var body = $('elections').tBodies[0];
    var f = ($('lock-filter').value || '').toLowerCase();
    body.textContent = '';
    var shown = 0;
    els.forEach(function (e) {
      if (f && e.name.toLowerCase().indexOf(f) < 0 && e.leader.owner.toLowerCase().indexOf(f) < 0 && e.leader.value.toLowerCase().indexOf(f) < 0) return;
      shown++;
      var tr = el('tr');
      tr.setAttribute('data-election', e.name);
      var name = el('td', 'mono name', e.name);
      name.title = e.name;
      tr.appendChild(name);
      var leader = el('td');
      leader.appendChild(who(e.leader.owner, e.leader.session_id, null));
      tr.appendChild(leader);
      // a value is up to 4 KiB of client text: shown shortened, whole in the tooltip
      var value = el('td', 'mono value', e.leader.value.length > 80 ? e.leader.value.slice(0, 77) + '…' : e.leader.value);
      value.title = e.leader.value;
      value.setAttribute('data-value', e.leader.value);
      tr.appendChild(value);
      var tok = el('td', 'num mono', e.leader.fencing_token);
      tok.setAttribute('data-token', String(e.leader.fencing_token));
      tr.appendChild(tok);
      var camp = el('td', 'num', e.waiters === 0 ? 'leader only' : '1 + ' + e.waiters + ' waiting');
      camp.setAttribute('data-waiting', String(e.waiters));
      tr.appendChild(camp);
      body.appendChild(tr);
    });
    $('elections-empty').style.display = shown === 0 ? 'block' : 'none';
    $('elections-empty').textContent = els.length === 0 ? 'No election has a leader.' : 'No election matches the filter.';
    setText('elections-hint', s.elections_truncated ? 'first ' + els.length : num(els.length) + ' with a leader');
  }

  // docs/contract.md §5 "Contention": who waits, and how long the oldest has been waiting
  function renderContended(s) {
    var rows = s.contended || [];
    var body = $('contended').tBodies[0];
    body.textContent = '';
    rows.forEach(function (c) {
      var tr = el('tr');
      tr.setAttribute('data-contended', c.name);
      var name = el('td', 'mono name', c.name);
      name.title = c.name;
      tr.appendChild(name);
      var w = el('td', 'num', num(c.waiters));
      w.setAttribute('data-waiters', String(c.waiters));
      tr.appendChild(w);
      var age = el('td', 'num', (c.waiting_since_exact ? '' : '≥ ') + dur(s.generated_at_ms - c.waiting_since_ms));
      age.setAttribute('data-waited-ms', String(Math.max(0, s.generated_at_ms - c.waiting_since_ms)));
      if (!c.waiting_since_exact) age.title = 'waiting since before this node started watching';
      tr.appendChild(age);
      var holder = el('td');
      if (c.holder) holder.appendChild(who(c.holder.owner, c.holder.session_id, c.holder.mode === 'shared' ? 'shared · ' + c.holder.holders : 'token ' + c.holder.fencing_token));
      else holder.appendChild(el('span', 'muted', c.in_delay ? 'free, in lock-delay' : 'free (a lock set waits for its other names)'));
      tr.appendChild(holder);
      body.appendChild(tr);
    });
    $('contended-empty').style.display = rows.length === 0 ? 'block' : 'none';
    setText('contended-hint', rows.length === 0 ? '' : 'most waiters first');
  }

  // a small chart of this node's applied grants per second (bars) and the average wait of
  // the granted requests (line), the last minute; inline SVG built with the DOM
  var SVG = 'http://www.w3.org/2000/svg';
  function svgEl(tag, attrs) {
    var e = document.createElementNS(SVG, tag);
    Object.keys(attrs).forEach(function (k) { e.setAttribute(k, String(attrs[k])); });
    return e;
  }
  function renderActivity(s) {
    var pts = s.activity || [];
    var svg = $('activity-chart');
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    var W = 300, H = 100, top = 5;
    var n = Math.max(1, pts.length);
    var maxG = 1, maxW = 1, total = 0, longest = 0;
    pts.forEach(function (p) { maxG = Math.max(maxG, p.grants); maxW = Math.max(maxW, p.wait_avg_ms); total += p.grants; longest = Math.max(longest, p.wait_max_ms); });
    svg.appendChild(svgEl('line', { 'class': 'axis', x1: 0, y1: top + H, x2: W, y2: top + H }));
    var bw = W / n;
    var line = [];
    pts.forEach(function (p, i) {
      var h = H * p.grants / maxG;
      var r = svgEl('rect', { 'class': 'grants', x: (i * bw + 0.5).toFixed(2), y: (top + H - h).toFixed(2), width: Math.max(0.5, bw - 1).toFixed(2), height: h.toFixed(2), 'data-grants': p.grants });
      var t = svgEl('title', {});
      t.textContent = clock(p.at_ms) + ': ' + p.grants + ' grants' + (p.waited ? ', ' + p.waited + ' after a wait (avg ' + p.wait_avg_ms + ' ms, max ' + p.wait_max_ms + ' ms)' : '');
      r.appendChild(t);
      svg.appendChild(r);
      line.push(((i + 0.5) * bw).toFixed(2) + ',' + (top + H - H * p.wait_avg_ms / maxW).toFixed(2));
    });
    if (line.length > 1) svg.appendChild(svgEl('polyline', { 'class': 'wait', points: line.join(' ') }));
    svg.setAttribute('data-total', String(total));
    setText('activity-hint', num(total) + ' grants in the last minute on ' + s.node.node_id);
    setText('activity-peak', '· peak ' + num(maxG === 1 && total === 0 ? 0 : maxG) + '/s · longest wait ' + (longest ? (longest < 1000 ? longest + ' ms' : dur(longest)) : '–'));
  }

  function renderChanges(s) {
    var list = $('changes');
    list.textContent = '';
    var ch = s.observations.leader_changes.slice().reverse();
    if (ch.length === 0) list.appendChild(el('li', 'when', 'none seen'));
    ch.slice(0, 100).forEach(function (c) {
      var li = el('li');
      li.appendChild(el('span', 'when', clock(c.at_ms)));
      li.appendChild(c.leader_id === null ? el('span', 'none', 'no leader') : el('span', 'mono', c.leader_id));
      li.appendChild(el('span', 'muted', 'term ' + c.term));
      list.appendChild(li);
    });
    setText('changes-hint', 'seen by ' + s.observations.node_id + ' since ' + clock(Math.max(s.observations.node_started_at_ms, s.generated_at_ms - 3600000)));
  }

  function render(s) {
    last = s;
    setText('cluster-name', s.node.cluster ? '· ' + s.node.cluster : '');
    var leader = s.leader_id;
    setText('leader-id', leader || 'none');
    $('card-leader').className = 'card' + (leader ? '' : ' leaderless');
    setText('leader-term', 'term ' + s.node.term);
    var changes = s.observations.leader_changes.filter(function (c) { return c.leader_id !== null; }).length;
    setText('changes-count', num(changes));
    setText('sessions-count', num(s.observations.sessions));
    setText('locks-count', num(s.observations.locks_held));
    setText('delay-count', s.observations.locks_in_delay ? num(s.observations.locks_in_delay) + ' in lock-delay' : 'currently');
    setText('waiters-count', num(s.observations.waiters));
    setText('last-token', num(s.observations.last_token));
    renderMembers(s);
    renderLocks(s);
    renderSemaphores(s);
    renderElections(s);
    renderContended(s);
    renderActivity(s);
    renderChanges(s);
    setText('footer', 'Locks, sessions and history as applied by ' + s.node.node_id + ' (applied index ' + num(s.node.applied_index) + '); members as each reports itself.');
  }

  function showError(msg, others) {
    var b = $('banner');
    b.textContent = msg;
    if (others && others.length) {
      b.appendChild(document.createTextNode(' Other members: '));
      others.forEach(function (m, i) {
        if (i) b.appendChild(document.createTextNode(', '));
        var a = el('a', null, m.id);
        a.href = m.api + '/';
        b.appendChild(a);
      });
    }
    b.className = 'banner show';
  }

  function poll() {
    timer = null;
    if (inflight) return;
    inflight = true;
    var ctl = new AbortController();
    var t = setTimeout(function () { ctl.abort(); }, TIMEOUT_MS);
    var headers = { accept: 'application/json' };
    if (token) headers.authorization = 'Bearer ' + token;
    fetch('/v1/status', { headers: headers, signal: ctl.signal, cache: 'no-store' })
      .then(function (r) {
        if (r.status === 401 || r.status === 403) {
          $('auth').className = 'auth show';
          throw new Error(r.status === 401 ? 'a token is needed' : 'the token may not read the cluster');
        }
        if (!r.ok) return r.json().then(function (j) { throw new Error((j && j.error && j.error.message) || ('HTTP ' + r.status)); });
        return r.json();
      })
      .then(function (s) {
        lastOk = Date.now();
        $('auth').className = 'auth';
        $('banner').className = 'banner';
        render(s);
        live(true, 'live · ' + clock(s.generated_at_ms));
      })
      .catch(function (e) {
        var why = e && e.name === 'AbortError' ? 'no answer in ' + (TIMEOUT_MS / 1000) + 's' : (e && e.message) || 'error';
        live(false, lastOk ? 'stale · last update ' + clock(lastOk) : 'unreachable');
        var others = last ? last.members.filter(function (m) { return m.id !== last.node.node_id && m.api; }) : [];
        showError('This node does not answer (' + why + ').', others);
      })
      .then(function () {
        clearTimeout(t);
        inflight = false;
        schedule();
      });
  }

  function schedule() {
    if (timer === null && !document.hidden) timer = setTimeout(poll, POLL_MS);
  }

  document.addEventListener('visibilitychange', function () { if (!document.hidden && timer === null) poll(); });
  $('lock-filter').addEventListener('input', function () { if (last) { renderLocks(last); renderSemaphores(last); renderElections(last); } });
  $('auth').addEventListener('submit', function (ev) {
    ev.preventDefault();
    token = $('token').value.trim();
    sessionStorage.setItem('raftlock-token', token);
    if (timer !== null) { clearTimeout(timer); timer = null; }
    poll();
    if (feedCtl) feedCtl.abort();
  });
  // ---- live event feed: GET /v1/watch read with fetch (EventSource cannot send the
  // bearer token); resumes after the last id it saw, keeps the newest MAX_EVENTS
  var MAX_EVENTS = 100;
  var lastEventId = null;
  var feedCtl = null;
  function showEvent(ev, d) {
    var list = $('events');
    var li = el('li');
    li.appendChild(el('span', 'when', clock(Date.now())));
    li.appendChild(el('span', 'mono', '#' + d.index));
    li.appendChild(el('b', ev === 'released' || ev === 'expired' || ev === 'revoked' ? 'none' : '', ev));
    li.appendChild(el('span', '', d.kind + ' ' + d.name));
    var extra = [];
    if (d.session_id) extra.push('session ' + d.session_id);
    if (d.fencing_token !== undefined) extra.push('token ' + d.fencing_token);
    if (d.mode && d.mode !== 'exclusive') extra.push(d.mode);
    if (d.permits !== undefined) extra.push(d.permits + ' permits');
    if (d.limit !== undefined) extra.push('limit ' + d.limit);
    if (d.value !== undefined) extra.push('value ' + JSON.stringify(d.value));
    if (d.reason) extra.push(d.reason);
    li.appendChild(el('span', 'when', extra.join(' · ')));
    list.insertBefore(li, list.firstChild);
    while (list.childNodes.length > MAX_EVENTS) list.removeChild(list.lastChild);
    $('events-empty').style.display = 'none';
  }
  function onFrame(frame) {
    var id = null, ev = null, data = '';
    frame.split('\n').forEach(function (line) {
      if (line === '' || line.charAt(0) === ':') return;
      var i = line.indexOf(':');
      var k = i < 0 ? line : line.slice(0, i);
      var v = i < 0 ? '' : line.slice(i + 1).replace(/^ /, '');
      if (k === 'id') id = v; else if (k === 'event') ev = v; else if (k === 'data') data += v;
    });
    if (id !== null) lastEventId = id;
    // the opening holder snapshot is what the Locks table shows already
    if (ev && ev !== 'state' && data) { try { showEvent(ev, JSON.parse(data)); } catch (e) { /* not ours */ } }
  }
  function feed() {
    if (feedCtl) return;
    feedCtl = new AbortController();
    var headers = { accept: 'text/event-stream' };
    if (token) headers.authorization = 'Bearer ' + token;
    var url = '/v1/watch' + (lastEventId !== null ? '?from_index=' + encodeURIComponent(lastEventId) : '');
    var buf = '';
    fetch(url, { headers: headers, signal: feedCtl.signal, cache: 'no-store' })
      .then(function (r) {
        if (r.status === 410) { lastEventId = null; throw new Error('compacted'); }
        if (!r.ok || !r.body) throw new Error('HTTP ' + r.status);
        setText('events-hint', 'live from this node');
        var reader = r.body.getReader();
        var dec = new TextDecoder();
        function pump() {
          return reader.read().then(function (x) {
            if (x.done) return;
            buf += dec.decode(x.value, { stream: true });
            var cut;
            while ((cut = buf.indexOf('\n\n')) >= 0) { onFrame(buf.slice(0, cut)); buf = buf.slice(cut + 2); }
            return pump();
          });
        }
        return pump();
      })
      .catch(function () { /* retried below */ })
      .then(function () {
        feedCtl = null;
        setText('events-hint', 'reconnecting…');
        setTimeout(feed, 2000);
      });
  }
  poll();
  feed();
})();
`;
