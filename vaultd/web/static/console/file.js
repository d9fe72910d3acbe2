// A file's page: the "Share" button shows and hides the share form (which is simply shown
// without script), and moves the focus into it.
"use strict";

function shareToggle() {
  const button = document.getElementById("share-toggle");
  const form = document.getElementById("share-form");
  if (!button || !form) return;
  const open = (shown) => {
    form.hidden = !shown;
    button.setAttribute("aria-expanded", String(shown));
  };
  button.hidden = false;
  open(form.dataset.open === "yes");
  button.addEventListener("click", () => {
    open(form.hidden);
    if (!form.hidden) document.getElementById("viewer-email").focus();
  });
}

document.addEventListener("DOMContentLoaded", shareToggle);
