// Files page: upload each chosen or dropped file to the API mirror with a progress bar, and
// say what went wrong in words. Names are only ever set as text (textContent), never as HTML.
"use strict";

const UPLOAD_URL = "/console/api/files";
const REASONS = {
  402: "plan limit reached",
  413: "too large",  // the API's message that follows names the limit set on this server
  415: "wrong type (PDF, JPEG or PNG; Office documents where the server converts them)",
  422: "the file is damaged or cannot be read",
  429: "too many uploads at once: try again in a minute",
};

function csrfToken() {
  return document.querySelector('meta[name="csrf-token"]').content;
}

function chosenKind() {
  return document.querySelector('input[name="kind"]:checked').value;
}

function reasonOf(xhr) {
  let message = "";
  try {
    message = JSON.parse(xhr.responseText).error || "";
  } catch (error) {
    message = "";
  }
  const words = REASONS[xhr.status] || (xhr.status >= 500 ? "the server could not store it now: try again" : "refused");
  return message ? `${words}: ${message}` : words;
}

function row(file) {
  const item = document.createElement("li");
  const name = document.createElement("span");
  name.textContent = file.name;
  const bar = document.createElement("progress");
  bar.max = 100;
  bar.value = 0;
  bar.setAttribute("aria-label", `Uploading ${file.name}`);
  const status = document.createElement("span");
  status.textContent = "Waiting";
  item.append(name, bar, status);
  document.getElementById("uploads").append(item);
  return {item, bar, status};
}

function finished(file, view, xhr) {
  if (xhr.status === 201) {
    const body = JSON.parse(xhr.responseText);
    view.bar.value = 100;
    view.status.textContent = "Uploaded: ";
    const link = document.createElement("a");
    link.href = `/console/files/${encodeURIComponent(body.id)}`;
    link.textContent = `Open ${file.name}`;
    view.status.append(link);
  } else {
    view.item.classList.add("failed");
    view.status.textContent = `Not uploaded: ${reasonOf(xhr)}`;
  }
}

function send(file, kind) {
  const view = row(file);
  return new Promise((resolve) => {
    const xhr = new XMLHttpRequest();
    xhr.open("POST", UPLOAD_URL);
    xhr.setRequestHeader("X-CSRF-Token", csrfToken());
    xhr.setRequestHeader("x-file-name", encodeURIComponent(file.name));
    xhr.setRequestHeader("x-file-kind", kind);
    xhr.setRequestHeader("Content-Type", file.type || "application/octet-stream");
    xhr.upload.addEventListener("progress", (event) => {
      if (event.lengthComputable) view.bar.value = Math.round((100 * event.loaded) / event.total);
      view.status.textContent = "Uploading";
    });
    xhr.addEventListener("load", () => { finished(file, view, xhr); resolve(); });
    xhr.addEventListener("error", () => {
      view.item.classList.add("failed");
      view.status.textContent = "Not uploaded: the connection failed";
      resolve();
    });
    xhr.send(file);
  });
}

async function uploadAll(files) {
  const kind = chosenKind();
  // One at a time: the server admits a few uploads per account at once (upload admission).
  for (const file of Array.from(files)) await send(file, kind);
}

function setUp() {
  const input = document.getElementById("upload");
  const drop = document.getElementById("drop");
  if (!input) return;
  input.addEventListener("change", () => { uploadAll(input.files); });
  drop.addEventListener("dragover", (event) => { event.preventDefault(); drop.classList.add("over"); });
  drop.addEventListener("dragleave", () => drop.classList.remove("over"));
  drop.addEventListener("drop", (event) => {
    event.preventDefault();
    drop.classList.remove("over");
    uploadAll(event.dataTransfer.files);
  });
}

document.addEventListener("DOMContentLoaded", setUp);
