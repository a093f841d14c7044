// The web UI's only script: pages refresh themselves, actions on many jobs ask first, and the outcome
// of an action is not shown again on the next refresh. The UI works without it, less conveniently.
(function () {
  'use strict';

  // The outcome of an action arrives in the URL: drop it so that a reload does not show it again.
  var url = new URL(window.location.href);
  var hadFlash = false;
  ['done', 'fail', 'n'].forEach(function (k) {
    if (url.searchParams.has(k)) { url.searchParams.delete(k); hadFlash = true; }
  });
  if (hadFlash) { window.history.replaceState(null, '', url.pathname + url.search + url.hash); }

  document.addEventListener('submit', function (e) {
    var msg = e.target.getAttribute('data-confirm');
    if (msg && !window.confirm(msg)) { e.preventDefault(); }
  });

  var seconds = parseInt(document.body.getAttribute('data-refresh') || '0', 10);
  var toggle = document.getElementById('refresh-toggle');
  var live = document.getElementById('live');
  if (!seconds || !toggle || !live) { return; }

  var paused = false;
  try { paused = window.localStorage.getItem('work.refresh') === 'off'; } catch (e) { /* storage disabled */ }
  var timer = null;

  function show(ok) {
    toggle.textContent = paused ? 'Resume refresh' : 'Pause refresh';
    toggle.setAttribute('aria-pressed', paused ? 'true' : 'false');
    live.textContent = paused ? 'paused' : (ok ? 'live' : 'offline');
    live.className = 'live' + (paused ? ' off' : (ok ? '' : ' error'));
  }

  function schedule() {
    window.clearTimeout(timer);
    if (!paused) { timer = window.setTimeout(refresh, seconds * 1000); }
  }

  // busy reports whether the user is filling in a form of the page, which a refresh would undo: a
  // field has the focus, or holds something else than the page gave it.
  function busy() {
    var el = document.activeElement;
    if (el && el.closest && el.closest('main') && /^(INPUT|SELECT|TEXTAREA)$/.test(el.tagName)) { return true; }
    return Array.prototype.some.call(document.querySelectorAll('main input'), function (i) {
      return i.value !== i.defaultValue;
    });
  }

  function refresh() {
    if (paused || document.hidden || busy()) { schedule(); return; }
    window.fetch(window.location.href, { credentials: 'same-origin', headers: { 'Accept': 'text/html' } })
      .then(function (r) {
        if (!r.ok) { throw new Error('HTTP ' + r.status); }
        return r.text();
      })
      .then(function (html) {
        var doc = new DOMParser().parseFromString(html, 'text/html');
        ['nav', 'main', 'updated'].forEach(function (id) {
          var cur = document.getElementById(id);
          var next = doc.getElementById(id);
          if (cur && next) { cur.replaceWith(document.adoptNode(next)); }
        });
        show(true);
      })
      .catch(function () { show(false); })
      .then(schedule);
  }

  toggle.addEventListener('click', function () {
    paused = !paused;
    try { window.localStorage.setItem('work.refresh', paused ? 'off' : 'on'); } catch (e) { /* storage disabled */ }
    show(true);
    if (paused) { window.clearTimeout(timer); } else { refresh(); }
  });
  document.addEventListener('visibilitychange', function () { if (!document.hidden && !paused) { refresh(); } });

  show(true);
  schedule();
})();
