/* vaultd viewer: time on page.
 *
 * Counts the time the current page is actually in front of the viewer: the tab visible AND the
 * window focused (a hidden tab or a window in the background does not count). The current page
 * is the one viewer.js shows in #current-page. Time is kept per page and sent in small batches
 * to data-activity-url ({"events": [{"page", "seconds"}]}, at most 60 s per event and 100 events
 * per request, as the server requires), every FLUSH_MS and when the page is hidden or left
 * (pagehide, with navigator.sendBeacon, which survives the page being torn down).
 */
(function () {
  "use strict";

  const TICK_MS = 250;
  const FLUSH_MS = 10000;
  const MAX_EVENT_SECONDS = 60;
  const MAX_EVENTS = 100;

  const url = document.body.dataset.activityUrl;
  if (!url) return;
  const pending = new Map(); // page -> seconds not yet sent
  let last = performance.now();

  function isActive() {
    return document.visibilityState === "visible" && document.hasFocus();
  }

  function currentPage() {
    const node = document.getElementById("current-page");
    return node ? parseInt(node.textContent, 10) || 1 : 1;
  }

  // Time since the last sample goes to the page shown now, if the viewer was there to see it.
  // `wasActive` is the state during that span: a change of state samples first, then flips.
  let wasActive = isActive();
  function sample() {
    const now = performance.now();
    if (wasActive) {
      const page = currentPage();
      pending.set(page, (pending.get(page) || 0) + (now - last) / 1000);
    }
    last = now;
    wasActive = isActive();
  }

  function takeEvents() {
    const events = [];
    pending.forEach((seconds, page) => {
      let left = Math.round(seconds * 1000) / 1000;
      while (left >= 0.05 && events.length < MAX_EVENTS) {
        const chunk = Math.min(left, MAX_EVENT_SECONDS);
        events.push({ page, seconds: Math.round(chunk * 1000) / 1000 });
        left -= chunk;
      }
      if (left >= 0.05) pending.set(page, left);
      else pending.delete(page);
    });
    return events;
  }

  function putBack(events) {
    events.forEach((event) => pending.set(event.page, (pending.get(event.page) || 0) + event.seconds));
  }

  function flush(leaving) {
    sample();
    const events = takeEvents();
    if (!events.length) return;
    const body = JSON.stringify({ events });
    if (leaving && navigator.sendBeacon) {
      const sent = navigator.sendBeacon(url, new Blob([body], { type: "application/json" }));
      if (!sent) putBack(events);
      return;
    }
    fetch(url, {
      method: "POST", body, keepalive: true, credentials: "same-origin",
      referrerPolicy: "no-referrer", headers: { "Content-Type": "application/json" },
    }).catch(() => putBack(events)); // offline: the next flush tries again
  }

  setInterval(sample, TICK_MS);
  setInterval(() => flush(false), FLUSH_MS);
  document.addEventListener("visibilitychange", () => {
    sample();
    if (document.visibilityState === "hidden") flush(true);
  });
  window.addEventListener("blur", sample);
  window.addEventListener("focus", sample);
  window.addEventListener("pagehide", () => flush(true));
})();
