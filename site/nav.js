// nav.js switches between the views (tabs addressable as #replay, #trace,
// ...): which section is shown, aria-current on its tab, focus on its
// heading when the person navigated, and a call to every listener.

import { $ } from "./dom.js";

const VIEWS = ["replay", "trace", "run", "rerank", "recordings", "corpus"];

const listeners = [];

/** onView calls fn(name) each time a view is shown. */
export function onView(fn) {
  listeners.push(fn);
}

/** showView shows one view (an unknown name shows Replay); focus moves focus to its heading. */
function showView(name, focus = false) {
  if (!VIEWS.includes(name)) name = "replay";
  for (const v of VIEWS) {
    $(`#view-${v}`).hidden = v !== name;
    const link = document.querySelector(`a[data-view="${v}"]`);
    if (v === name) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  if (focus) $(`#view-${name} h2`).focus?.();
  for (const fn of listeners) fn(name);
}

/** currentView is the view shown. */
export function currentView() {
  return VIEWS.find((v) => !$(`#view-${v}`).hidden) || "replay";
}

/** go shows a view and puts it in the history, as following its tab would. */
export function go(name) {
  if (location.hash !== `#${name}`) history.pushState(null, "", `#${name}`);
  showView(name);
}

/** start makes the headings focusable, follows the address's #view, and shows the view it names. */
export function start() {
  for (const h2 of document.querySelectorAll(".view h2")) h2.tabIndex = -1;
  window.addEventListener("hashchange", () => showView(location.hash.slice(1), true));
  showView(location.hash.slice(1));
}
