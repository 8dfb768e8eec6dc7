// boot.js starts the engine worker as early as the page allows: it is an
// async classic script, so it runs as soon as it arrives, without waiting
// for the style sheet or the rest of the page as the module app.js (and
// the modules it imports) does. What the worker posts before client.js
// takes over waits in `early`.
"use strict";

if (!self.ragagentBoot) {
  const worker = new Worker("engine/worker.js");
  const early = [];
  worker.onmessage = (event) => early.push(event);
  worker.onerror = (event) => early.push(event);
  self.ragagentBoot = { worker, early };
}
