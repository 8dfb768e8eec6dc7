// The uploaded packs' R2 half (the Go half is worker/r2.go, the logic
// over it internal/server's shelf). One bucket, two prefixes:
//
//   manifests/<id>          the pack's manifest.json as uploaded, its
//                           customMetadata {tenant, file, bytes, where}
//   passages/<id>/<uuid>    its passages file as uploaded (where)
//   results/<experiment id> an experiment's result too long for D1's row
//                           (internal/server's ResultStore, r2Results)
//
// An upload writes its passages file first, under a key of its own, and
// its manifest last, only if no manifest is kept under the id (onlyIf
// etagDoesNotMatch "*", which R2 and Miniflare take as "no object"): the
// pack appears whole or not at all, and of two uploads of one id racing
// in two isolates one wins and the other removes its passages file. A
// listing reads manifests only, so it never sees a pack half written; a
// passages file whose manifest never came (an isolate lost between the
// two puts) is left unlisted and unread, taking no quota. A deletion
// removes the manifest first.
//
// Bytes cross as Uint8Array, never as strings (a manifest need not be
// ASCII, and a passages file is binary).

const MANIFESTS = "manifests/";
const PASSAGES = "passages/";
const RESULTS = "results/";

// kept is what the Go side reads of a kept pack.
async function kept(bucket, object) {
  const m = object.customMetadata ?? {};
  const body = new Uint8Array(await object.arrayBuffer());
  return {
    id: object.key.slice(MANIFESTS.length),
    tenant: m.tenant ?? "",
    file: m.file ?? "",
    bytes: Number(m.bytes ?? 0),
    where: m.where ?? "",
    manifest: body,
  };
}

// r2 runs one operation on the bucket for worker/r2.go:
//   ("kept", tenant)              the tenant's packs
//   ("find", id)                  the pack kept under id, or null
//   ("put", pack, passages)       {taken: false} once kept, {taken: true}
//                                 when a manifest is kept under the id
//   ("passages", where)           the passages file, or null when gone
//   ("delete", id, where)         the manifest, then the passages file
//   ("putResult", key, bytes)     an experiment's result kept under key
//   ("result", key)               that result, or null when gone
//   ("deleteResult", key)         that result removed
export async function r2(bucket, op, a, b) {
  switch (op) {
    case "putResult":
      if (!a.startsWith(RESULTS)) throw new Error("r2: a result's key is results/<id>");
      await bucket.put(a, b);
      return null;
    case "deleteResult":
      if (!a.startsWith(RESULTS)) throw new Error("r2: a result's key is results/<id>");
      await bucket.delete(a);
      return null;
    case "result": {
      if (!a.startsWith(RESULTS)) throw new Error("r2: a result's key is results/<id>");
      const o = await bucket.get(a);
      return o === null ? null : new Uint8Array(await o.arrayBuffer());
    }
    case "kept": {
      const mine = [];
      let cursor;
      do {
        const page = await bucket.list({ prefix: MANIFESTS, include: ["customMetadata"], cursor });
        for (const o of page.objects) if (o.customMetadata?.tenant === a) mine.push(o.key);
        cursor = page.truncated ? page.cursor : undefined;
      } while (cursor);
      const objects = await Promise.all(mine.map((key) => bucket.get(key)));
      return Promise.all(objects.filter((o) => o !== null).map((o) => kept(bucket, o)));
    }
    case "find": {
      const o = await bucket.get(MANIFESTS + a);
      return o === null ? null : kept(bucket, o);
    }
    case "put": {
      const where = PASSAGES + a.id + "/" + crypto.randomUUID();
      await bucket.put(where, b);
      const meta = { tenant: a.tenant, file: a.file, bytes: String(a.bytes), where };
      const put = await bucket.put(MANIFESTS + a.id, a.manifest, { customMetadata: meta, onlyIf: { etagDoesNotMatch: "*" } });
      if (put === null) {
        await bucket.delete(where);
        return { taken: true, where: "" };
      }
      return { taken: false, where };
    }
    case "passages": {
      const o = await bucket.get(a);
      return o === null ? null : new Uint8Array(await o.arrayBuffer());
    }
    case "delete":
      await bucket.delete(MANIFESTS + a);
      if (b) await bucket.delete(b);
      return null;
  }
  throw new Error("r2: no operation " + op);
}
