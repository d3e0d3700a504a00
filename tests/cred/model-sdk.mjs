// model-sdk.mjs: drives tests/fixtures/modelfake.py with the vendors' own
// SDKs (npm "openai" and "@anthropic-ai/sdk", installed from
// tests/cred/package-lock.json), so the fake is proven to speak what they speak.
//   node model-sdk.mjs BASE_URL OPENAI_KEY ANTHROPIC_KEY
// (NODE_EXTRA_CA_CERTS names the test CA). Prints "ok NAME" / "not ok NAME".
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';

const [base, okey, akey] = process.argv.slice(2);
let failed = 0;
const report = (name, good, why) => {
  console.log(`${good ? 'ok' : 'not ok'} ${name}${good || !why ? '' : ' -- ' + why}`);
  if (!good) failed++;
};
const attempt = async (name, fn) => {
  try { await fn(); } catch (e) { report(name, false, `${e.constructor.name}: ${e.message}`); }
};

// maxRetries 0: a refusal must surface at once, not after retries
const openai = new OpenAI({ apiKey: okey, baseURL: `${base}/v1`, maxRetries: 0, timeout: 10000 });
const anthropic = new Anthropic({ apiKey: akey, baseURL: base, maxRetries: 0, timeout: 10000 });

await attempt('openai SDK: chat completion with the right key', async () => {
  const r = await openai.chat.completions.create({
    model: 'fake-gpt', messages: [{ role: 'user', content: 'hello openai' }] });
  report('openai SDK: chat completion with the right key',
    r.choices[0].message.content === 'echo: hello openai', JSON.stringify(r));
});
await attempt('openai SDK: streamed chat completion', async () => {
  const s = await openai.chat.completions.create({
    model: 'fake-gpt', stream: true, messages: [{ role: 'user', content: 'streamed words here' }] });
  let text = '';
  for await (const c of s) text += c.choices[0]?.delta?.content ?? '';
  report('openai SDK: streamed chat completion', text === 'echo: streamed words here', text);
});
await attempt('openai SDK: a wrong key is an AuthenticationError (401)', async () => {
  const bad = new OpenAI({ apiKey: okey + 'x', baseURL: `${base}/v1`, maxRetries: 0 });
  try {
    await bad.chat.completions.create({ model: 'fake-gpt', messages: [{ role: 'user', content: 'x' }] });
    report('openai SDK: a wrong key is an AuthenticationError (401)', false, 'accepted');
  } catch (e) {
    report('openai SDK: a wrong key is an AuthenticationError (401)',
      e instanceof OpenAI.AuthenticationError && e.status === 401 && e.code === 'invalid_api_key',
      `${e.constructor.name} ${e.status} ${e.code}`);
  }
});
await attempt('anthropic SDK: message with the right key', async () => {
  const r = await anthropic.messages.create({
    model: 'fake-claude', max_tokens: 64, messages: [{ role: 'user', content: 'hello anthropic' }] });
  report('anthropic SDK: message with the right key',
    r.content[0].text === 'echo: hello anthropic' && r.stop_reason === 'end_turn', JSON.stringify(r));
});
await attempt('anthropic SDK: streamed message', async () => {
  const s = anthropic.messages.stream({
    model: 'fake-claude', max_tokens: 64, messages: [{ role: 'user', content: 'streamed reply please' }] });
  const m = await s.finalMessage();
  report('anthropic SDK: streamed message', m.content[0].text === 'echo: streamed reply please',
    JSON.stringify(m));
});
// The SDK (1.x) sends apiKey as Authorization: Bearer; x-api-key, the form
// curl users and older SDKs send, through the same SDK with the header set.
await attempt('anthropic SDK: message with x-api-key', async () => {
  const xk = new Anthropic({ apiKey: null, baseURL: base, maxRetries: 0,
    defaultHeaders: { 'x-api-key': akey } });
  const r = await xk.messages.create({
    model: 'fake-claude', max_tokens: 64, messages: [{ role: 'user', content: 'by header' }] });
  report('anthropic SDK: message with x-api-key', r.content[0].text === 'echo: by header',
    JSON.stringify(r));
});
await attempt('anthropic SDK: a wrong key is an AuthenticationError (401)', async () => {
  const bad = new Anthropic({ apiKey: akey + 'x', baseURL: base, maxRetries: 0 });
  try {
    await bad.messages.create({ model: 'fake-claude', max_tokens: 8, messages: [{ role: 'user', content: 'x' }] });
    report('anthropic SDK: a wrong key is an AuthenticationError (401)', false, 'accepted');
  } catch (e) {
    report('anthropic SDK: a wrong key is an AuthenticationError (401)',
      e instanceof Anthropic.AuthenticationError && e.status === 401 &&
      e.error?.error?.type === 'authentication_error', `${e.constructor.name} ${e.status}`);
  }
});
process.exit(failed ? 1 : 0);
