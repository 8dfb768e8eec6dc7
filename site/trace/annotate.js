// trace/annotate.js is a trial's annotation, shown in its trace: a region
// named after the trial holding what was said (the verdict as a badge, the
// note, the answering passage, who and when) and a form to say it or
// change it: a verdict (none, correct, wrong, partly), a note, and "the
// passage that answers it is" one of the passages the run read or was
// shown, or another typed as its URL. Saving keeps it in this browser
// (common/annotations.js, which owns the store); Delete forgets it. Every
// control has a label, the outcome of Save and Delete is announced, and
// focus stays on a control that is still there. An answering passage
// becomes a case ("Add to question set…", common/addtoset.js) of the
// pack the target names (target.pack), with the question annotated.

import { h, clear, badge, passageLink } from "../common/dom.js";
import * as annotations from "../common/annotations.js";
import { addButton } from "../common/addtoset.js";

/** KINDS is the badge colour of each verdict. */
const KINDS = { correct: "pass", wrong: "fail", partly: "incomplete" };

/** TYPED is the passage choice "another, by its URL". */
const TYPED = "typed";

let made = 0; // a number per region, so two forms never share an id

/** verdictBadge is a verdict as a coloured badge (null for none). */
export function verdictBadge(verdict) {
  return verdict ? badge(verdict, KINDS[verdict]) : null;
}

/** passageChoices is the passages a trial read (first) and was shown, each
 * {source_id, url, how}, known URLs only (passages: source_id -> passage,
 * for a candidate's address; a read carries its own). */
export function passageChoices(t, passages = new Map()) {
  const out = new Map();
  for (const o of t?.result?.observations || []) {
    if (o.tool === "read" && o.result?.url) out.set(o.result.source_id, { source_id: o.result.source_id, url: o.result.url, how: "read" });
  }
  for (const o of t?.result?.observations || []) {
    if (o.tool !== "search") continue;
    for (const c of o.result?.candidates || []) {
      const url = passages.get(c.source_id)?.url;
      if (url && !out.has(c.source_id)) out.set(c.source_id, { source_id: c.source_id, url, how: `shown at rank ${c.rank}` });
    }
  }
  return [...out.values()];
}

/** typedURL is a typed address if it is an absolute http(s) URL, else null. */
function typedURL(text) {
  try {
    const u = new URL(text.trim());
    return u.protocol === "https:" || u.protocol === "http:" ? u.href : null;
  } catch {
    return null;
  }
}

/**
 * annotationRegion is the annotation of target ({kind, id, title, subject,
 * pack}) with its form; choices are passageChoices' list. Given the pack,
 * a kept answering passage is offered to one of its question sets.
 */
export function annotationRegion(target, choices) {
  const n = ++made;
  const ids = { head: `ann-${n}-title`, note: `ann-${n}-note`, passage: `ann-${n}-passage`, url: `ann-${n}-url`, urlHelp: `ann-${n}-url-help` };
  const current = h("div", { class: "annotation-current" });
  const status = h("p", { class: "help annotation-status", role: "status", "aria-live": "polite" });
  const radios = ["", ...annotations.VERDICTS].map((v) => h("input", { type: "radio", name: `ann-${n}-verdict`, value: v }));
  const verdicts = h("fieldset", { class: "annotation-verdict" }, h("legend", {}, "Verdict"),
    radios.map((r) => h("label", { class: "radio-inline" }, r, ` ${r.value || "no verdict"}`)));
  const note = h("textarea", { id: ids.note, rows: 3, maxlength: 4000 });
  const passage = h("select", { id: ids.passage },
    h("option", { value: "" }, "(not said)"),
    choices.map((c) => h("option", { value: c.source_id }, `${c.source_id} (${c.how})`)),
    h("option", { value: TYPED }, "another passage, by its URL"));
  const url = h("input", { id: ids.url, type: "url", inputmode: "url", placeholder: "https://…", "aria-describedby": ids.urlHelp });
  const urlField = h("div", { class: "field" }, h("label", { for: ids.url }, "Its URL"), url,
    h("span", { id: ids.urlHelp, class: "help" }, "The address of the passage that answers the question (an anchor in its page)."));
  const save = h("button", { type: "submit" }, "Save annotation");
  const remove = h("button", { type: "button", class: "small stop" }, "Delete annotation");
  const form = h("form", { class: "annotation-form", novalidate: true },
    verdicts,
    h("div", { class: "field" }, h("label", { for: ids.note }, "Note"), note),
    h("div", { class: "field" }, h("label", { for: ids.passage }, "The passage that answers it is"), passage),
    urlField,
    h("div", { class: "controls" }, save, " ", remove));
  const region = h("section", { class: "annotation", role: "region", "aria-labelledby": ids.head, dataset: { ref: annotations.ref(target.kind, target.id) } },
    h("h4", { id: ids.head }, `Your annotation of ${target.title}`),
    current, form, status);

  const showURL = () => { urlField.hidden = passage.value !== TYPED; };

  /** fill puts the kept annotation (or none) into the summary and the form. */
  function fill() {
    const a = annotations.of(target.kind, target.id);
    region.dataset.verdict = a ? a.verdict || "none" : "unannotated";
    for (const r of radios) r.checked = r.value === (a?.verdict || "");
    note.value = a?.note || "";
    const chosen = a?.passage ? choices.find((c) => c.source_id === a.passage.source_id && c.url === a.passage.url) : null;
    passage.value = a?.passage ? (chosen ? chosen.source_id : TYPED) : "";
    url.value = a?.passage && !chosen ? a.passage.url : "";
    url.removeAttribute("aria-invalid");
    showURL();
    remove.disabled = !a;
    clear(current);
    const refused = annotations.storeError();
    if (refused) {
      current.append(h("p", { class: "help" }, `This browser keeps no annotations (${refused}).`));
      save.disabled = true;
      return;
    }
    if (!a) {
      current.append(h("p", { class: "help" }, "Not annotated yet."));
      return;
    }
    current.append(h("p", {}, verdictBadge(a.verdict) || h("span", { class: "help" }, "no verdict"),
      ` by ${a.author}, ${new Date(a.time).toLocaleString()}`, h("time", { datetime: a.time, class: "sr-only" }, ` (${a.time})`)),
    a.note ? h("p", { class: "annotation-note" }, a.note) : null,
    a.passage ? h("p", {}, "The passage that answers it: ", a.passage.source_id ? [h("code", {}, a.passage.source_id), " · "] : null, passageLink(a.passage.url),
      target.pack ? [" ", addButton(`with the passage that answers ${target.title}`, () => ({
        pack: target.pack, question: target.subject?.question || "", passages: [{ url: a.passage.url, source_id: a.passage.source_id }] }))] : null) : null);
  }

  /** chosenPassage is the passage the form names, null for none, or false when the typed URL is not one. */
  function chosenPassage() {
    if (!passage.value) return null;
    if (passage.value !== TYPED) {
      const c = choices.find((x) => x.source_id === passage.value);
      return { url: c.url, source_id: c.source_id };
    }
    const u = typedURL(url.value);
    return u ? { url: u } : false;
  }

  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const p = chosenPassage();
    if (p === false) {
      url.setAttribute("aria-invalid", "true");
      status.textContent = "Not saved: type the passage's address as a full URL (https://…).";
      url.focus();
      return;
    }
    url.removeAttribute("aria-invalid");
    const verdict = radios.find((r) => r.checked)?.value || "";
    if (!verdict && !note.value.trim() && !p) {
      status.textContent = "Not saved: give a verdict, a note or the answering passage.";
      radios[0].focus();
      return;
    }
    try {
      await annotations.save({ kind: target.kind, id: target.id, verdict, note: note.value, passage: p, subject: target.subject });
      fill();
      status.textContent = "Annotation saved in this browser.";
    } catch (err) {
      status.textContent = `Not saved: ${err.message || "this browser refused IndexedDB"}`;
    }
  });
  remove.addEventListener("click", async () => {
    try {
      await annotations.remove(target.kind, target.id);
      fill();
      status.textContent = "Annotation deleted.";
      // The button is disabled now: focus goes back to the form's start.
      radios[0].focus();
    } catch (err) {
      status.textContent = `Not deleted: ${err.message || "this browser refused IndexedDB"}`;
    }
  });
  passage.addEventListener("change", () => {
    showURL();
    if (passage.value === TYPED) url.focus();
  });
  const follow = (e) => {
    if (!region.isConnected) document.removeEventListener(annotations.EVENT, follow);
    else if (e.detail?.ref === region.dataset.ref) fill();
  };
  // Drawn before the store was first read, it fills again once it is.
  annotations.whenLoaded().then(() => {
    fill();
    document.addEventListener(annotations.EVENT, follow);
  });
  fill();
  return region;
}
