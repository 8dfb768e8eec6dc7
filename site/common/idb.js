// common/idb.js is the one way the page's stores open IndexedDB and wait
// on it: runs (common/runs.js), question sets (common/sets.js),
// annotations (common/annotations.js) and the experiment history
// (experiments/store.js) each keep a database of their own, opened once,
// and each says the same thing when the browser refuses or another tab
// blocks it.

/** database is an opener of the database name (version 1, made by
 * upgrade(db) on first use): it opens once and is retried after a refusal. */
export function database(name, upgrade) {
  let opening = null;
  return function open() {
    opening ??= new Promise((resolve, reject) => {
      let req;
      try {
        req = indexedDB.open(name, 1);
      } catch (err) {
        reject(err);
        return;
      }
      req.onupgradeneeded = () => upgrade(req.result);
      req.onsuccess = () => resolve(req.result);
      req.onerror = () => reject(req.error || new Error("IndexedDB refused"));
      req.onblocked = () => reject(new Error("IndexedDB is blocked by another tab"));
    }).catch((err) => {
      opening = null;
      throw err;
    });
    return opening;
  };
}

/** done settles with a request's result. */
export function done(req) {
  return new Promise((resolve, reject) => {
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

/** finished settles when a transaction commits. */
export function finished(tx) {
  return new Promise((resolve, reject) => {
    tx.oncomplete = () => resolve();
    tx.onerror = tx.onabort = () => reject(tx.error || new Error("the transaction was aborted"));
  });
}
