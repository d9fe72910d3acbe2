/* vaultd document viewer.
 *
 * Draws each watermarked page into a <canvas> (never an <img> with a URL), loads pages as they
 * approach the viewport with at most two requests in flight, and blanks everything as soon as
 * the link stops working (a page or the status poll answers 404). The deterrents (no context
 * menu, copy, save or print; blur when the window is in the background) only raise the bar:
 * the watermark in the pixels and the access log are what identify a leak.
 *
 * Configuration comes from data-* attributes on <body>, so the same script serves the hosted
 * viewer (/v/<token>) and an Option B proxy with routes of its own:
 *   data-page-count, data-page-url ("…/pages/{n}"), data-status-url,
 *   data-status-poll-seconds, data-expires-at (ISO 8601 UTC).
 */
(function () {
  "use strict";

  const MAX_IN_FLIGHT = 2; // the render pool is small: never queue more than this per viewer
  const MAX_DRAWN = 12; // pages kept in memory; farther ones are released, refetched if needed
  const FIT_MAX_WIDTH = 880;
  const ZOOM_STEPS = [0.5, 0.67, 0.8, 1, 1.25, 1.5, 1.75, 2, 2.5, 3];
  const RETRY_BASE_MS = 1000;
  const RETRY_MAX_MS = 30000;
  const CAPTURE_SHIELD_MS = 1500;
  const LINE_SCROLL_PX = 64;
  const FETCH_OPTIONS = Object.freeze({
    credentials: "same-origin",
    referrerPolicy: "no-referrer",
    cache: "no-store",
  });

  const state = {
    config: null,
    pages: [],
    zoom: 1,
    current: 1,
    inFlight: new Map(), // page -> AbortController
    visible: new Set(),
    shieldReasons: new Set(),
    timers: new Set(),
    intervals: [],
    observers: [],
    statusPending: false,
    ended: false,
  };
  const el = {};

  // ---- configuration and DOM ------------------------------------------------------------

  function readConfig(body) {
    const data = body.dataset;
    return {
      pageCount: Math.max(1, parseInt(data.pageCount, 10) || 1),
      pageUrl: data.pageUrl,
      statusUrl: data.statusUrl,
      pollMs: clamp(Number(data.statusPollSeconds) || 15, 1, 600) * 1000,
      expiresAt: Date.parse(data.expiresAt),
    };
  }

  function findElements() {
    const byId = (id) => document.getElementById(id);
    Object.assign(el, {
      body: document.body,
      stage: byId("stage"),
      pages: byId("pages"),
      currentPage: byId("current-page"),
      prev: byId("prev-page"),
      next: byId("next-page"),
      zoomIn: byId("zoom-in"),
      zoomOut: byId("zoom-out"),
      fit: byId("fit-width"),
      expiryTime: byId("expiry-time"),
      countdown: byId("expiry-countdown"),
      ended: byId("ended"),
    });
  }

  function buildPages(count) {
    const fragment = document.createDocumentFragment();
    for (let number = 1; number <= count; number += 1) {
      const slot = document.createElement("div");
      slot.className = "page";
      slot.dataset.page = String(number);
      slot.setAttribute("role", "img");
      slot.setAttribute("aria-label", "Page " + number);
      const canvas = document.createElement("canvas");
      canvas.width = 0;
      canvas.height = 0;
      slot.appendChild(canvas);
      fragment.appendChild(slot);
      state.pages.push({ number, slot, canvas, status: "idle", attempts: 0, near: false });
      setStatus(state.pages[number - 1], "idle");
    }
    el.pages.appendChild(fragment);
  }

  function setStatus(page, status) {
    page.status = status;
    page.slot.dataset.state = status;
  }

  function pageUrl(number) {
    return state.config.pageUrl.replace("{n}", String(number));
  }

  // ---- loading --------------------------------------------------------------------------

  function observeProximity() {
    // One screen above and below the visible area: pages are ready before they scroll in.
    const observer = new IntersectionObserver(onProximity, {
      root: el.stage,
      rootMargin: "100% 0px 100% 0px",
    });
    state.pages.forEach((page) => observer.observe(page.slot));
    state.observers.push(observer);
  }

  function onProximity(entries) {
    for (const entry of entries) {
      state.pages[Number(entry.target.dataset.page) - 1].near = entry.isIntersecting;
    }
    pump();
  }

  function pump() {
    while (!state.ended && state.inFlight.size < MAX_IN_FLIGHT) {
      const page = nextWanted();
      if (!page) return;
      loadPage(page);
    }
  }

  function nextWanted() {
    let best = null;
    for (const page of state.pages) {
      if (!page.near || page.status !== "idle") continue;
      if (!best || distance(page) < distance(best)) best = page;
    }
    return best;
  }

  function distance(page) {
    return Math.abs(page.number - state.current);
  }

  async function loadPage(page) {
    const controller = new AbortController();
    state.inFlight.set(page, controller);
    setStatus(page, "loading");
    try {
      const response = await fetch(pageUrl(page.number),
        Object.assign({ signal: controller.signal }, FETCH_OPTIONS));
      await handlePageResponse(page, response);
    } catch (error) {
      if (!state.ended) scheduleRetry(page, null);
    } finally {
      state.inFlight.delete(page);
      pump();
    }
  }

  async function handlePageResponse(page, response) {
    if (response.status === 404) {
      endView();
      return;
    }
    const type = response.headers.get("Content-Type") || "";
    if (!response.ok || !type.startsWith("image/")) {
      scheduleRetry(page, response.headers.get("Retry-After"));
      return;
    }
    const bitmap = await createImageBitmap(await response.blob());
    try {
      if (!state.ended) drawPage(page, bitmap);
    } finally {
      bitmap.close(); // the pixels live in the canvas now; drop the decoded copy at once
    }
  }

  function scheduleRetry(page, retryAfter) {
    page.attempts += 1;
    const backoff = Math.min(RETRY_MAX_MS, RETRY_BASE_MS * 2 ** (page.attempts - 1));
    const hinted = (Number(retryAfter) || 0) * 1000;
    const delay = Math.max(backoff * (0.75 + Math.random() * 0.5), hinted);
    setStatus(page, "waiting");
    later(() => {
      setStatus(page, "idle");
      pump();
    }, delay);
  }

  function drawPage(page, bitmap) {
    const { canvas } = page;
    canvas.width = bitmap.width;
    canvas.height = bitmap.height;
    canvas.getContext("2d", { alpha: false }).drawImage(bitmap, 0, 0);
    page.attempts = 0;
    setRatio(page, bitmap.width / bitmap.height);
    setStatus(page, "loaded");
    releaseFarPages();
  }

  function blankPage(page) {
    const { canvas } = page;
    if (canvas.width && canvas.height) {
      canvas.getContext("2d").clearRect(0, 0, canvas.width, canvas.height);
    }
    canvas.width = 0; // frees the backing store
    canvas.height = 0;
  }

  function releaseFarPages() {
    const drawn = state.pages.filter((page) => page.status === "loaded" && !page.near);
    const excess = state.pages.filter((page) => page.status === "loaded").length - MAX_DRAWN;
    drawn.sort((a, b) => distance(b) - distance(a));
    drawn.slice(0, Math.max(0, excess)).forEach((page) => {
      blankPage(page);
      setStatus(page, "idle"); // a later visit asks for a fresh render (and a new log entry)
    });
  }

  // A page above the viewport that changes height must not push what is being read.
  function setRatio(page, ratio) {
    const before = page.slot.getBoundingClientRect();
    page.slot.style.aspectRatio = String(ratio);
    const stageTop = el.stage.getBoundingClientRect().top;
    if (before.bottom <= stageTop) {
      el.stage.scrollTop += page.slot.getBoundingClientRect().height - before.height;
    }
  }

  // ---- the end of a link: revoked, expired or deleted -----------------------------------

  function endView() {
    if (state.ended) return;
    state.ended = true;
    state.inFlight.forEach((controller) => controller.abort());
    state.observers.forEach((observer) => observer.disconnect());
    state.intervals.forEach((id) => clearInterval(id));
    state.timers.forEach((id) => clearTimeout(id));
    state.pages.forEach((page) => {
      blankPage(page);
      setStatus(page, "ended");
    });
    el.body.classList.add("is-ended");
    el.ended.hidden = false;
    document.title = "Link not available";
  }

  async function checkStatus() {
    if (state.ended || state.statusPending) return;
    state.statusPending = true;
    try {
      const response = await fetch(state.config.statusUrl, FETCH_OPTIONS);
      if (response.status === 404) endView();
    } catch (error) {
      // Offline for a moment: the next poll or page request decides.
    } finally {
      state.statusPending = false;
    }
  }

  function startStatusPoll() {
    state.intervals.push(setInterval(checkStatus, state.config.pollMs));
  }

  // ---- expiry -----------------------------------------------------------------------------

  function showExpiry() {
    const expires = state.config.expiresAt;
    if (Number.isNaN(expires)) return;
    const format = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });
    el.expiryTime.textContent = format.format(new Date(expires));
    updateCountdown();
    state.intervals.push(setInterval(updateCountdown, 1000));
  }

  function updateCountdown() {
    const remaining = state.config.expiresAt - Date.now();
    if (remaining <= 0) {
      endView();
      return;
    }
    el.countdown.textContent = "in " + describeDuration(remaining);
    el.countdown.classList.toggle("is-soon", remaining < 10 * 60 * 1000);
  }

  function describeDuration(ms) {
    const seconds = Math.ceil(ms / 1000);
    if (seconds < 60) return seconds + " s";
    const minutes = Math.floor(seconds / 60);
    if (minutes < 60) return minutes + " min";
    const hours = Math.floor(minutes / 60);
    if (hours < 48) return hours + " h" + (minutes % 60 ? " " + (minutes % 60) + " min" : "");
    return Math.floor(hours / 24) + " days";
  }

  // ---- current page, navigation and zoom ------------------------------------------------

  function observeVisibility() {
    const observer = new IntersectionObserver((entries) => {
      for (const entry of entries) {
        const page = state.pages[Number(entry.target.dataset.page) - 1];
        if (entry.isIntersecting) state.visible.add(page);
        else state.visible.delete(page);
      }
      updateCurrentPage();
    }, { root: el.stage });
    state.pages.forEach((page) => observer.observe(page.slot));
    state.observers.push(observer);
  }

  // The current page is the one taking the most height of the visible area.
  function updateCurrentPage() {
    const view = el.stage.getBoundingClientRect();
    let best = null;
    let bestHeight = -1;
    state.visible.forEach((page) => {
      const rect = page.slot.getBoundingClientRect();
      const height = Math.min(rect.bottom, view.bottom) - Math.max(rect.top, view.top);
      if (height > bestHeight || (best && height === bestHeight && page.number < best.number)) {
        best = page;
        bestHeight = height;
      }
    });
    if (best) setCurrent(best.number);
  }

  function setCurrent(number) {
    state.current = number;
    el.currentPage.textContent = String(number);
    el.prev.disabled = number <= 1;
    el.next.disabled = number >= state.pages.length;
  }

  function goToPage(number) {
    const page = state.pages[clamp(number, 1, state.pages.length) - 1];
    const offset = page.slot.getBoundingClientRect().top - el.stage.getBoundingClientRect().top;
    const gap = parseFloat(getComputedStyle(el.pages).rowGap) || 0;
    el.stage.scrollTop += offset - gap / 2;
  }

  function fitWidth() {
    const style = getComputedStyle(el.pages);
    const padding = parseFloat(style.paddingLeft) + parseFloat(style.paddingRight);
    return Math.max(160, Math.min(FIT_MAX_WIDTH, el.stage.clientWidth - padding));
  }

  function setZoom(zoom) {
    const anchor = readAnchor();
    state.zoom = clamp(zoom, ZOOM_STEPS[0], ZOOM_STEPS[ZOOM_STEPS.length - 1]);
    el.pages.style.setProperty("--page-width", Math.round(fitWidth() * state.zoom) + "px");
    el.fit.textContent = state.zoom === 1 ? "Fit width" : Math.round(state.zoom * 100) + "%";
    el.zoomOut.disabled = state.zoom <= ZOOM_STEPS[0];
    el.zoomIn.disabled = state.zoom >= ZOOM_STEPS[ZOOM_STEPS.length - 1];
    restoreAnchor(anchor);
  }

  function stepZoom(direction) {
    const index = ZOOM_STEPS.findIndex((step) => step >= state.zoom - 1e-6);
    const next = direction > 0
      ? ZOOM_STEPS.find((step) => step > state.zoom + 1e-6)
      : ZOOM_STEPS[Math.max(0, index - 1)];
    setZoom(next === undefined ? state.zoom : next);
  }

  // Zooming keeps the same spot of the current page under the top of the stage.
  function readAnchor() {
    const page = state.pages[state.current - 1];
    if (!page) return null;
    const rect = page.slot.getBoundingClientRect();
    const top = el.stage.getBoundingClientRect().top;
    return { page, fraction: rect.height ? (top - rect.top) / rect.height : 0 };
  }

  function restoreAnchor(anchor) {
    if (!anchor) return;
    const rect = anchor.page.slot.getBoundingClientRect();
    const top = el.stage.getBoundingClientRect().top;
    el.stage.scrollTop += rect.top - top + anchor.fraction * rect.height;
    el.stage.scrollLeft = (el.stage.scrollWidth - el.stage.clientWidth) / 2;
  }

  const KEY_ACTIONS = {
    ArrowDown: () => el.stage.scrollBy(0, LINE_SCROLL_PX),
    ArrowUp: () => el.stage.scrollBy(0, -LINE_SCROLL_PX),
    ArrowRight: () => goToPage(state.current + 1),
    ArrowLeft: () => goToPage(state.current - 1),
    PageDown: () => goToPage(state.current + 1),
    PageUp: () => goToPage(state.current - 1),
    j: () => goToPage(state.current + 1),
    k: () => goToPage(state.current - 1),
    Home: () => goToPage(1),
    End: () => goToPage(state.pages.length),
    "+": () => stepZoom(1),
    "=": () => stepZoom(1),
    "-": () => stepZoom(-1),
    "0": () => setZoom(1),
  };

  function bindControls() {
    el.prev.addEventListener("click", () => goToPage(state.current - 1));
    el.next.addEventListener("click", () => goToPage(state.current + 1));
    el.zoomIn.addEventListener("click", () => stepZoom(1));
    el.zoomOut.addEventListener("click", () => stepZoom(-1));
    el.fit.addEventListener("click", () => setZoom(1));
    el.stage.addEventListener("scroll", onNextFrame(updateCurrentPage), { passive: true });
    window.addEventListener("resize", onNextFrame(() => setZoom(state.zoom)));
  }

  // ---- deterrents ---------------------------------------------------------------------------

  function isBlockedShortcut(event) {
    const key = (event.key || "").toLowerCase();
    return (event.ctrlKey || event.metaKey) && (key === "s" || key === "p");
  }

  function onKeyDown(event) {
    if (isBlockedShortcut(event)) {
      event.preventDefault();
      event.stopPropagation();
      return;
    }
    if (event.key === "PrintScreen") {
      onPrintScreen(event);
      return;
    }
    if (event.ctrlKey || event.metaKey || event.altKey || state.ended) return;
    const action = KEY_ACTIONS[event.key.length === 1 ? event.key.toLowerCase() : event.key];
    if (action) {
      event.preventDefault();
      action();
    }
  }

  // Browsers only report PrintScreen after the fact (keyup, on some systems only): blank the
  // pages for a moment anyway and overwrite what the clipboard may have received.
  function onPrintScreen(event) {
    event.preventDefault();
    setShield("capture", true);
    later(() => setShield("capture", false), CAPTURE_SHIELD_MS);
    if (navigator.clipboard && navigator.clipboard.writeText) {
      navigator.clipboard.writeText("Screenshots of this document are not permitted.")
        .catch(() => {});
    }
  }

  function setShield(reason, on) {
    if (on) state.shieldReasons.add(reason);
    else state.shieldReasons.delete(reason);
    el.body.classList.toggle("is-shielded", state.shieldReasons.size > 0);
  }

  function bindDeterrents() {
    const prevent = (event) => event.preventDefault();
    ["contextmenu", "copy", "cut", "dragstart", "selectstart"].forEach((type) => {
      document.addEventListener(type, prevent, { capture: true });
    });
    document.addEventListener("keydown", onKeyDown, { capture: true });
    document.addEventListener("keyup", (event) => {
      if (event.key === "PrintScreen") onPrintScreen(event);
    }, { capture: true });
    window.addEventListener("blur", () => setShield("focus", true));
    window.addEventListener("focus", () => {
      setShield("focus", false);
      checkStatus(); // back from elsewhere: the link may have been revoked meanwhile
    });
    document.addEventListener("visibilitychange", onVisibilityChange);
    window.addEventListener("beforeprint", () => setShield("print", true));
    window.addEventListener("afterprint", () => setShield("print", false));
  }

  function onVisibilityChange() {
    setShield("hidden", document.hidden);
    if (!document.hidden) checkStatus();
  }

  // ---- small helpers ------------------------------------------------------------------------

  function clamp(value, low, high) {
    return Math.min(high, Math.max(low, value));
  }

  function later(callback, ms) {
    const id = setTimeout(() => {
      state.timers.delete(id);
      callback();
    }, ms);
    state.timers.add(id);
  }

  function onNextFrame(callback) {
    let scheduled = false;
    return () => {
      if (scheduled) return;
      scheduled = true;
      requestAnimationFrame(() => {
        scheduled = false;
        callback();
      });
    };
  }

  function start() {
    findElements();
    state.config = readConfig(el.body);
    bindDeterrents();
    buildPages(state.config.pageCount);
    setZoom(1);
    setCurrent(1);
    bindControls();
    observeVisibility();
    observeProximity();
    showExpiry();
    startStatusPoll();
  }

  start();
})();
