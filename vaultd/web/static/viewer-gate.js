/* vaultd gate screens: posts the reader's code, passcode or typed name to
 * <page>/session/<action> (JSON; the session is the HttpOnly cookie) and reloads the page once
 * a gate is passed, so the server decides what comes next. Nothing here passes a gate: only
 * the server's answer to these posts does. */
(function () {
  "use strict";

  const MESSAGES = {
    "code is not correct": "That code is not correct. Check the email and try again.",
    "too many wrong codes: ask for a new one":
      "Too many wrong codes. Send a new code and use that one.",
    "the code has expired: ask for a new one": "This code has expired. Send a new code.",
    "no code was sent in this session: ask for one": "Send yourself a code first.",
    "passcode is not correct": "That passcode is not correct.",
    "too many passcode tries in this session: open a new session":
      "Too many wrong passcodes. Reload the page to try again.",
    "too many passcode tries from this address: try again later":
      "Too many wrong passcodes from this network. Try again later.",
    "viewer session not found or ended: open a new one":
      "Your session has ended. Reload the page to start again.",
  };
  const GONE = "This link is no longer available. Ask the person who shared it for a new one.";

  const body = document.body;
  const base = body.dataset.actionUrl;
  const codeScreen = document.querySelector("[data-resend-seconds]");
  const resendSeconds = (codeScreen && Number(codeScreen.dataset.resendSeconds)) || 30;
  const message = document.getElementById("gate-message");
  let countdown = null;

  function say(text) {
    if (message) message.textContent = text;
  }

  async function post(action, payload) {
    const response = await fetch(base + "/" + action, {
      method: "POST",
      credentials: "same-origin",
      cache: "no-store",
      referrerPolicy: "no-referrer",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(payload || {}),
    });
    let data = {};
    try {
      data = await response.json();
    } catch (error) {
      data = {};
    }
    return { status: response.status, data };
  }

  function explain(result) {
    const text = result.data.error || "Something went wrong. Try again.";
    if (result.status === 404 && !MESSAGES[text]) return GONE;
    return MESSAGES[text] || text.charAt(0).toUpperCase() + text.slice(1) + ".";
  }

  function startCountdown(button, status) {
    let left = resendSeconds;
    button.disabled = true;
    clearInterval(countdown);
    status.textContent = "You can ask for a new code in " + left + " s.";
    countdown = setInterval(() => {
      left -= 1;
      if (left > 0) {
        status.textContent = "You can ask for a new code in " + left + " s.";
        return;
      }
      clearInterval(countdown);
      button.disabled = false;
      status.textContent = "You can ask for a new code now.";
    }, 1000);
  }

  async function sendCode() {
    const form = document.getElementById("code-form");
    const resend = document.getElementById("resend-code");
    const result = await post("code");
    if (result.status !== 202) {
      say(explain(result));
      return;
    }
    say("");
    const intro = document.getElementById("code-intro");
    if (intro) {
      intro.textContent = "We sent a six-digit code to the email address this document was " +
        "shared with. The code is valid for 10 minutes.";
    }
    document.getElementById("send-code").hidden = true;
    form.hidden = false;
    document.getElementById("resend-status").textContent = "";
    startCountdown(resend, document.getElementById("resend-status"));
    document.getElementById("code-input").focus();
  }

  async function submit(event) {
    event.preventDefault();
    const form = event.currentTarget;
    const input = form.querySelector("input");
    const field = input.name;
    const button = form.querySelector("button[type=submit]");
    button.disabled = true;
    const result = await post(form.dataset.action, { [field]: input.value });
    button.disabled = false;
    if (result.status === 200) {
      say("Done. Opening…");
      window.location.reload();
      return;
    }
    say(explain(result));
    input.select();
    input.focus();
  }

  function init() {
    const send = document.getElementById("send-code");
    if (send) send.addEventListener("click", sendCode);
    const resend = document.getElementById("resend-code");
    if (resend) resend.addEventListener("click", sendCode);
    document.querySelectorAll("form.gate-form").forEach((form) => {
      form.addEventListener("submit", submit);
    });
    const first = document.querySelector(".gate-form:not([hidden]) input, #send-code");
    if (first) first.focus();
  }

  init();
})();
