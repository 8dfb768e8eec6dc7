// prices.js draws the engine's price table (list prices per million tokens,
// load()'s constants.prices or a plan's): in a trace beside its estimated
// cost, and in the Rerank view beside the live rerank's budget.

import { h } from "./dom.js";

/** PRICE_HEADS are the price table's column heads. */
export const PRICE_HEADS = ["Model", "Input per M tokens", "Output per M tokens", "Source"];

/** priceRows is a row per model; the model priced here is marked (class
 * "current", and mark after its name). */
export function priceRows(prices, model, mark) {
  return prices.map((r) => h("tr", { class: r.model === model ? "current" : null },
    h("th", { scope: "row" }, h("code", {}, r.model), r.model === model ? mark : ""),
    h("td", { class: "num" }, `$${r.input_usd_per_mtok}`), h("td", { class: "num" }, `$${r.output_usd_per_mtok}`), h("td", {}, r.source)));
}
