// The soak's control: the smallest worker that does what a ringi request does to the local runtime — one HTTP
// request in, a D1 write and a D1 read, a log line, a small JSON answer — so that the runtime's memory per request
// can be told apart from the worker's own.
let ready;

export default {
  async fetch(request, env) {
    // The memory probe's poke (it keeps the isolate busy while the inspector is read): no D1.
    if (new URL(request.url).pathname === "/ping") return new Response("ok");
    ready ??= env.DB.prepare("CREATE TABLE IF NOT EXISTS hits (id TEXT PRIMARY KEY, at INTEGER NOT NULL)").run();
    await ready;
    const id = crypto.randomUUID();
    await env.DB.prepare("INSERT INTO hits (id, at) VALUES (?1, ?2)").bind(id, Date.now()).run();
    const row = await env.DB.prepare("SELECT count(*) AS n FROM hits").first();
    // One structured log line per request, as ringi's worker writes (its round-trip count).
    console.log(JSON.stringify({ event: "round_trips", level: "debug", path: "/", roundTrips: "d1=2;sfn=0;ses=0" }));
    return Response.json({ id, n: row.n });
  },
};
