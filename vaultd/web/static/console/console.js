// The console's shared script: copy to clipboard. Pages work without it (forms post and
// redirect); it only adds what a form cannot do.
"use strict";

function copyButtons() {
  for (const button of document.querySelectorAll("button[data-copy]")) {
    button.hidden = false;
    button.addEventListener("click", async () => {
      const field = document.getElementById(button.dataset.copy);
      const status = document.getElementById(button.dataset.copy + "-copied");
      try {
        await navigator.clipboard.writeText(field.value);
        status.textContent = "Copied to the clipboard.";
      } catch (error) {
        field.select();
        status.textContent = "Select the link and copy it (Ctrl+C).";
      }
    });
  }
}

document.addEventListener("DOMContentLoaded", copyButtons);
