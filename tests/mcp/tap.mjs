// tap.mjs: the "ok NAME" / "not ok NAME -- why" lines tests/run counts,
// shared by the MCP client scripts here (sdk-test.mjs, modern-test.mjs, ...).
let failures = 0;

export function ok(name) { console.log(`ok ${name}`); }
export function fail(name, why) { console.log(`not ok ${name} -- ${why}`); failures++; }
// Runs fn: ok when it returns true, else not ok with what it returned or
// threw (cut to `cut` characters).
export async function check(name, fn, cut = 800) {
  try {
    const r = await fn();
    if (r === true) ok(name); else fail(name, `got ${JSON.stringify(r)}`.slice(0, cut));
  } catch (e) {
    fail(name, `threw ${e && e.stack ? e.stack : e}`.slice(0, cut));
  }
}
export function failed() { return failures; }
