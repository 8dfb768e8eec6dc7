// documents.js is "Your documents" in the Corpus view (#docs): files or a
// folder dropped on the drop zone or picked, cut into passages and indexed
// in the engine's worker with progress, kept in this browser's IndexedDB
// (worker-packs.js) until removed, and never sent anywhere. Each file the
// engine cannot read (binary, too large, not UTF-8, an unknown kind, a bad
// passages line) gets its own message; what was kept before is kept.

import { $, h, clear } from "../common/dom.js";
import { plural } from "../common/format.js";
import { call, events } from "../engine/client.js";
import { state } from "../common/state.js";
import { DOCUMENTS, SEED, choose, setDocuments } from "./picker.js";

/** entryFiles reads a dropped directory entry's files, with their paths. */
async function entryFiles(entry) {
  if (entry.isFile) {
    const file = await new Promise((resolve, reject) => entry.file(resolve, reject));
    return [{ path: entry.fullPath.replace(/^\/+/, ""), file }];
  }
  const reader = entry.createReader();
  const out = [];
  for (;;) {
    const batch = await new Promise((resolve, reject) => reader.readEntries(resolve, reject));
    if (!batch.length) break;
    for (const e of batch) out.push(...(await entryFiles(e)));
  }
  return out;
}

/** droppedFiles is what a drop carries: folders walked, files as they are. */
async function droppedFiles(dt) {
  const entries = [...(dt.items || [])].map((i) => i.webkitGetAsEntry?.()).filter(Boolean);
  if (entries.length) return (await Promise.all(entries.map(entryFiles))).flat();
  return [...dt.files].map((file) => ({ path: file.name, file }));
}

function pickedFiles(input) {
  return [...input.files].map((file) => ({ path: file.webkitRelativePath || file.name, file }));
}

function showStored(stored) {
  const list = clear($("#docs-kept"));
  $("#docs-remove").disabled = !stored;
  if (!stored) {
    list.append(h("li", { class: "help" }, "Nothing kept in this browser."));
    return;
  }
  for (const f of stored.files) list.append(h("li", {}, h("code", {}, f.path), ` (${plural(f.bytes, "byte")})`));
}

async function add(files) {
  const status = $("#docs-status");
  const bar = $("#docs-progress");
  const messages = clear($("#docs-messages"));
  if (!files.length) return;
  document.body.dataset.docs = "working";
  bar.hidden = false;
  status.textContent = `Reading ${plural(files.length, "file")}…`;
  try {
    const res = await call("docsAdd", [files, events("pack")], (e) => {
      if (e.event !== "pack") return;
      bar.max = e.total;
      bar.value = e.done;
      status.textContent = `${e.stage === "read" ? "Reading" : "Cutting and indexing"} file ${e.done} of ${e.total}…`;
    });
    for (const s of res.skipped) messages.append(h("li", { class: "error" }, h("code", {}, s.path), `: left out, ${s.reason}.`));
    setDocuments(res.stored);
    showStored(res.stored);
    if (res.info) {
      status.textContent = `Indexed ${plural(res.info.manifest.passages, "passage")} from ${plural(res.stored.files.length, "file")}` +
        `${res.skipped.length ? `; ${plural(res.skipped.length, "file")} left out (below)` : ""}. Kept in this browser only.`;
      await choose(DOCUMENTS);
    } else {
      status.textContent = `Nothing new could be indexed${state.corpus.documents ? "; your documents kept before are unchanged" : ""}.`;
    }
    document.body.dataset.docs = "done";
  } catch (err) {
    status.textContent = `Could not add the files: ${err.message}. Nothing kept before was changed.`;
    document.body.dataset.docs = "failed";
  } finally {
    bar.hidden = true;
  }
}

async function remove() {
  $("#docs-remove").disabled = true;
  try {
    await call("docsRemove");
    setDocuments(null);
    showStored(null);
    clear($("#docs-messages"));
    $("#docs-status").textContent = "Your documents were removed from this browser.";
    if (state.corpus.id === DOCUMENTS) await choose(SEED);
  } catch (err) {
    $("#docs-status").textContent = `Could not remove them: ${err.message}`;
    $("#docs-remove").disabled = false;
  }
}

/** mount binds the drop zone, the pickers and Remove. Returns {ready}. */
export function mount() {
  const zone = $("#docs-drop");
  zone.addEventListener("dragover", (e) => {
    e.preventDefault();
    zone.classList.add("over");
  });
  zone.addEventListener("dragleave", () => zone.classList.remove("over"));
  zone.addEventListener("drop", async (e) => {
    e.preventDefault();
    zone.classList.remove("over");
    await add(await droppedFiles(e.dataTransfer));
  });
  for (const id of ["#docs-files", "#docs-folder"]) {
    const input = $(id);
    input.addEventListener("change", async () => {
      await add(pickedFiles(input));
      input.value = "";
    });
  }
  $("#docs-remove").addEventListener("click", remove);
  return {
    /** ready enables adding once the engine runs, and lists what is kept. */
    ready() {
      showStored(state.corpus.documents);
      for (const id of ["#docs-files", "#docs-folder"]) $(id).disabled = false;
    },
  };
}
