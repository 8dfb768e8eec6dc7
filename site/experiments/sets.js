// experiments/sets.js is the Experiments view's list of the open pack's
// question sets (#exp-sets), the ones made by clicking ("Add to question
// set…" on a search result, a passage in a trace or a run:
// common/addtoset.js) or imported: each set with its cases (question,
// target and split editable, a case deletable), renamed, deleted, used in
// the experiment and Tune above, and exported as the files the command
// line reads: "Export (JSON)" a ragagent-cases/1 file, "Export (TSV)" the
// three-column TSV. "Import…" reads a JSON or TSV file as the engine reads
// it (questionSet: the command line's invalid_cases line naming the case
// and field when it is malformed). Every change is read by the engine
// before it is kept (common/sets.js), so a kept set always runs.

import { $, h, clear, option, download, ownTarget } from "../common/dom.js";
import { plural, count, refusal } from "../common/format.js";
import { readText } from "../common/files.js";
import { call } from "../engine/client.js";
import { state } from "../common/state.js";
import * as sets from "../common/sets.js";

/** fileName is a set's name made safe for a file name. */
const fileName = (name) => name.toLowerCase().replace(/[^a-z0-9._-]+/g, "-").replace(/^-+|-+$/g, "").slice(0, 60) || "set";

/** targetsText is a case's targets as its field shows them: space-separated, or "-" for none. */
const targetsText = (c) => (c.targets.length ? c.targets.join(" ") : "-");

/**
 * mountSets binds the list. use(set) makes a set the view's question set
 * (null: the set in use was deleted); inUse() is the key of the set in use
 * or null; listed(list) hears the open pack's sets each time they are read.
 * Returns {refresh}.
 */
export function mountSets({ use, inUse, listed }) {
  const box = $("#exs-list");
  const status = $("#exs-status");
  const fileInput = $("#exs-file");
  let current = []; // the open pack's sets, as last read
  let pack = null;

  function say(text, error = false) {
    const m = $("#exs-message");
    if (error) {
      m.textContent = text;
      m.hidden = false;
      status.textContent = "";
    } else {
      m.hidden = true;
      status.textContent = text;
    }
  }

  /** save keeps a changed set once the engine has read it as the command line would; a refusal leaves it as it was. */
  async function save(next, done) {
    try {
      await call("questionSet", [{ corpus: next.pack, text: sets.toJSON(next) }]);
      await sets.put(next);
      say(done);
      if (inUse() === next.key) use(next);
    } catch (err) {
      say(`Not changed: ${err instanceof sets.SetError ? `${err.message}.` : refusal(err)}`, true);
      render();
    }
  }

  function editCase(set, i, change) {
    const cases = set.cases.map((c, j) => (j === i ? { ...c, ...change } : c));
    return save({ ...set, cases }, `Changed ${set.cases[i].id} in ${set.name}.`);
  }

  function caseRow(set, c, i) {
    const label = (what) => `${what} of ${c.id}`;
    const targets = h("input", { type: "text", value: targetsText(c), "aria-label": label("Targets"), spellcheck: "false", class: "exs-targets" });
    targets.addEventListener("change", () => {
      const list = targets.value.trim().split(/\s+/).filter(Boolean);
      editCase(set, i, { targets: list.length === 1 && list[0] === "-" ? [] : list });
    });
    const question = h("input", { type: "text", value: c.question, "aria-label": label("Question"), maxlength: state.info?.constants.max_question_chars ?? null });
    question.addEventListener("change", () => editCase(set, i, { question: question.value.trim() }));
    const split = h("select", { "aria-label": label("Split") }, sets.SPLITS.map((s) => option(s, s, s === c.split)));
    split.addEventListener("change", () => editCase(set, i, { split: split.value }));
    const del = h("button", { type: "button", class: "small stop" }, "Delete", h("span", { class: "sr-only" }, ` ${c.id}`));
    del.addEventListener("click", () => save({ ...set, cases: set.cases.filter((_, j) => j !== i) }, `Deleted ${c.id} from ${set.name}.`));
    return h("tr", { dataset: { case: c.id } },
      h("th", { scope: "row" }, h("code", {}, c.id)),
      h("td", {}, question),
      h("td", {}, targets, c.sources.length ? h("span", { class: "help" }, ` sources ${c.sources.join(", ")}`) : null),
      h("td", {}, split),
      h("td", {}, set.cases.length > 1 ? del : h("span", { class: "help" }, "delete the set instead")));
  }

  function exportAs(set, kind) {
    try {
      if (kind === "json") download(`ragagent-cases-${fileName(set.name)}`, sets.toJSON(set), `${fileName(set.name)}.cases.json`);
      else download("", sets.toTSV(set), `${fileName(set.name)}.cases.tsv`);
      say(`Downloaded ${set.name}: the ${kind === "json" ? "ragagent-cases/1 JSON" : "three-column TSV"} file ragagent retrieval --cases FILE and ragagent eval --cases FILE read.`);
    } catch (err) {
      say(`Not downloaded: ${err.message}.`, true);
    }
  }

  function setBlock(set) {
    const id = `exs-set-${set.key}`;
    const answerable = set.cases.filter((c) => c.targets.length || c.sources.length).length;
    const name = h("input", { type: "text", id: `${id}-name`, value: set.name, maxlength: sets.MAX_NAME_CHARS, autocomplete: "off" });
    const rename = () => {
      let n;
      try {
        n = sets.checkName(name.value, current.filter((s) => s.key !== set.key));
      } catch (err) {
        say(`Not renamed: ${err.message}.`, true);
        return;
      }
      if (n !== set.name) save({ ...set, name: n }, `Renamed ${set.name} to ${n}.`);
    };
    const using = inUse() === set.key;
    return h("section", { class: "exs-set", "aria-labelledby": id, dataset: { key: set.key } },
      h("h4", { id }, set.name, using ? h("span", { class: "help" }, " (in use above)") : null),
      h("p", { class: "help" }, `${plural(set.cases.length, "question")}, ${count(answerable)} answerable · made ${new Date(set.time).toLocaleString()}`),
      h("div", { class: "controls" },
        h("button", { type: "button", class: "small", disabled: using, onclick: () => use(set) }, "Use in the experiment", h("span", { class: "sr-only" }, ` ${set.name}`)),
        h("button", { type: "button", class: "small", onclick: () => exportAs(set, "json") }, "Export (JSON)", h("span", { class: "sr-only" }, ` ${set.name}`)),
        h("button", { type: "button", class: "small", onclick: () => exportAs(set, "tsv") }, "Export (TSV)", h("span", { class: "sr-only" }, ` ${set.name}`)),
        h("button", { type: "button", class: "small stop", onclick: () => removeSet(set) }, "Delete set", h("span", { class: "sr-only" }, ` ${set.name}`))),
      h("div", { class: "row" },
        h("div", { class: "field" }, h("label", { for: `${id}-name` }, "Name"), name),
        h("div", { class: "field end" }, h("button", { type: "button", class: "small", onclick: rename }, "Rename", h("span", { class: "sr-only" }, ` ${set.name}`)))),
      h("div", { class: "scroll", tabindex: 0, role: "region", "aria-label": `The questions of ${set.name}` },
        h("table", { class: "exs-cases" },
          h("caption", {}, `The questions of ${set.name}, in the file's order`),
          h("thead", {}, h("tr", {}, ["Id", "Question", "Targets (space-separated, - for none)", "Split", ""].map((c, i) => h("th", { scope: "col" }, i === 4 ? h("span", { class: "sr-only" }, "Delete") : c)))),
          h("tbody", {}, set.cases.map((c, i) => caseRow(set, c, i))))));
  }

  async function removeSet(set) {
    try {
      await sets.remove(set.key);
      say(`Deleted the set ${set.name}.`);
      if (inUse() === set.key) use(null);
    } catch (err) {
      say(`Not deleted: ${err.message}.`, true);
    }
  }

  function render() {
    clear(box);
    if (!current.length) {
      box.append(h("p", { class: "help" }, `No question set for ${state.corpus.info?.manifest.title || pack} yet: make one with “Add to question set…” on a search result (Corpus view), a passage in a trace or a run, or import a file.`));
      return;
    }
    box.append(...current.map(setBlock));
  }

  async function refresh() {
    pack = state.corpus.id;
    try {
      current = await sets.list(pack);
      $("#exs-import").disabled = false;
    } catch (err) {
      current = [];
      say(`This browser keeps no question sets here (${err?.message || "IndexedDB refused"}).`, true);
    }
    render();
    listed(current);
    document.body.dataset.sets = "listed";
  }

  async function importFile() {
    const file = fileInput.files[0];
    fileInput.value = "";
    if (!file) return;
    try {
      const text = await readText(file, state.info.constants.max_input_bytes);
      // The engine reads it as ragagent retrieval --cases FILE does.
      const cases = await call("questionSet", [{ corpus: pack, text }]);
      const base = file.name.replace(/\.(cases\.)?(json|tsv|txt)$/i, "") || "imported";
      const names = new Set(current.map((s) => s.name));
      let name = base.slice(0, sets.MAX_NAME_CHARS - 4);
      for (let n = 2; names.has(name); n++) name = `${base.slice(0, sets.MAX_NAME_CHARS - 4)} ${n}`;
      const set = { pack, name, time: new Date().toISOString(), cases: sets.fromCases(cases, (u) => ownTarget(u) ?? u) };
      await sets.put(set);
      say(`Imported ${file.name} as ${name}: ${plural(set.cases.length, "question")}.`);
    } catch (err) {
      say(`${file.name} was not imported: ${err instanceof sets.SetError || !err.code ? `${err.message}.` : refusal(err)}`, true);
      document.body.dataset.setsImport = "refused";
    }
  }

  $("#exs-import").addEventListener("click", () => fileInput.click());
  fileInput.addEventListener("change", importFile);
  sets.onChange((p) => { if (p === pack) refresh(); });
  $("#exs-limit").textContent = String(sets.LIMIT);
  return { refresh, get: (key) => current.find((s) => s.key === key) ?? null };
}
