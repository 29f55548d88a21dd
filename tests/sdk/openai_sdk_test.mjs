// The official OpenAI Node SDK (npm `openai`, pinned in package-lock.json) against
// `vmetrics serve` with a stand-in engine (`vmetrics simulate --serve-requests`): token
// prompts, streaming with usage, logprobs, echo, stop tokens, errors (a refused parameter is a
// BadRequestError naming it), models.list(), and the request families of /metrics moving
// exactly by what the answers reported.
//
// Run by ctest (tests/sdk/CMakeLists.txt): node --test openai_sdk_test.mjs, with VMETRICS_BIN
// the `vmetrics` binary. tools/setup.sh installs node and runs `npm ci` here.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import OpenAI from 'openai';

const bin = process.env.VMETRICS_BIN;
assert.ok(bin, 'VMETRICS_BIN must name the vmetrics binary');
const handshake = `ipc:///tmp/vmetrics-sdk-${process.pid}.ipc`;
const children = [];
let base = '';
let client;
let promptTokens = 0;      // what the answers reported, to check /metrics against
let generationTokens = 0;

function start(args) {
  const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  return child;
}

// Resolves with the port once `vmetrics serve` listens and logged that every engine is ready
// (HTTP is up while engines load; /v1 answers 503 until they joined).
function readyPort(child) {
  return new Promise((resolve, reject) => {
    let text = '';
    const onData = (chunk) => {
      text += chunk.toString();
      const m = text.match(/listening on http:\/\/127\.0\.0\.1:(\d+)/);
      if (m && text.includes('every engine is ready')) resolve(Number(m[1]));
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('exit', (code) => reject(new Error(`vmetrics serve exited (${code}):\n${text}`)));
  });
}

before(async () => {
  const serve = start(['serve', '--handshake-address', handshake, '--port', '0',
    '--served-model-name', 'model', '--eos-token-id', '2', '--enable-lora',
    '--lora-modules', 'sql=/adapters/sql', '--engine-ready-timeout', '60']);
  start(['simulate', '--handshake-address', handshake, '--serve-requests',
    '--no-synthetic-requests', '--steps', '0', '--rate', '500', '--served-stop', 'earliest']);
  const port = await readyPort(serve);
  base = `http://127.0.0.1:${port}`;
  client = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'unused', maxRetries: 0 });
});

after(async () => {
  for (const child of children) {
    if (child.exitCode === null) {
      child.kill('SIGTERM');
      await once(child, 'exit');
    }
  }
});

function count(usage) {
  promptTokens += usage.prompt_tokens;
  generationTokens += usage.completion_tokens;
}

test('models.list() lists the served model and the LoRA modules', async () => {
  const ids = [];
  for await (const model of client.models.list()) ids.push(model.id);
  assert.deepEqual(ids, ['model', 'sql']);
});

test('a token prompt: token ids back, usage, finish_reason length', async () => {
  const r = await client.completions.create({
    model: 'model', prompt: [1, 2, 3, 4, 5], max_tokens: 4, ignore_eos: true,
  });
  assert.equal(r.object, 'text_completion');
  assert.equal(r.choices.length, 1);
  assert.equal(r.choices[0].token_ids.length, 4);
  assert.equal(r.choices[0].finish_reason, 'length');
  assert.deepEqual(r.usage, { prompt_tokens: 5, completion_tokens: 4, total_tokens: 9,
    prompt_tokens_details: null });
  count(r.usage);
});

test('streaming with usage: chunks of token ids, then the usage chunk', async () => {
  const stream = await client.completions.create({
    model: 'model', prompt: [7, 8, 9], max_tokens: 6, ignore_eos: true, stream: true,
    stream_options: { include_usage: true },
  });
  let tokens = 0;
  let usage = null;
  let finish = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    for (const choice of chunk.choices) {
      tokens += choice.token_ids.length;
      if (choice.finish_reason) finish = choice.finish_reason;
    }
  }
  assert.equal(tokens, 6);
  assert.equal(finish, 'length');
  assert.equal(usage.prompt_tokens, 3);
  assert.equal(usage.completion_tokens, 6);
  count(usage);
});

test('logprobs and echo come back as token ids', async () => {
  const r = await client.completions.create({
    model: 'model', prompt: [1, 2, 3], max_tokens: 3, logprobs: 2, echo: true, ignore_eos: true,
  });
  const c = r.choices[0];
  assert.deepEqual(c.prompt_token_ids, [1, 2, 3]);
  assert.equal(c.logprobs.tokens.length, 6);
  assert.equal(c.logprobs.tokens[0], 'token_id:1');
  assert.equal(c.logprobs.token_logprobs[0], null);
  assert.equal(c.logprobs.tokens[3], `token_id:${c.token_ids[0]}`);
  for (let i = 1; i < 6; i++) {
    assert.ok(c.logprobs.token_logprobs[i] <= 0);
    assert.ok(c.logprobs.tokens[i] in c.logprobs.top_logprobs[i]);
  }
  count(r.usage);
});

test('stop_token_ids and min_tokens are honoured', async () => {
  const r = await client.completions.create({
    model: 'model', prompt: [1, 2, 3], max_tokens: 40, stop_token_ids: [50], min_tokens: 3,
    ignore_eos: true,
  });
  const c = r.choices[0];
  assert.equal(c.finish_reason, 'stop');
  assert.equal(c.stop_reason, 50);
  assert.equal(c.token_ids.length, 4);
  assert.equal(c.token_ids[3], 50);
  count(r.usage);
});

test('a LoRA module named by model', async () => {
  const r = await client.completions.create({ model: 'sql', prompt: [4, 5], max_tokens: 2,
    ignore_eos: true });
  assert.equal(r.model, 'sql');
  count(r.usage);
});

test('a parameter vLLM does not declare is ignored, as vLLM ignores it', async () => {
  // best_of: what older vLLM benchmark clients always send; not a CompletionRequest field.
  const r = await client.completions.create({ model: 'model', prompt: [1], max_tokens: 2,
    ignore_eos: true, best_of: 1, frobnicate: 1 });
  assert.equal(r.choices[0].token_ids.length, 2);
  count(r.usage);
});

test('a parameter vmetrics cannot honour is a BadRequestError naming it', async () => {
  for (const [extra, param] of [[{ stop: ['\n'] }, 'stop'], [{ suffix: 'x' }, 'suffix'],
    [{ use_beam_search: true }, 'use_beam_search'], [{ logprobs: 99 }, 'logprobs']]) {
    await assert.rejects(
      client.completions.create({ model: 'model', prompt: [1], max_tokens: 1, ...extra }),
      (e) => {
        assert.ok(e instanceof OpenAI.BadRequestError, String(e));
        assert.equal(e.status, 400);
        assert.equal(e.param, param);
        assert.equal(e.type, 'BadRequestError');
        return true;
      });
  }
  await assert.rejects(client.completions.create({ model: 'other', prompt: [1] }),
    (e) => e instanceof OpenAI.NotFoundError && e.status === 404);
  await assert.rejects(client.completions.create({ model: 'model', prompt: 'text' }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === 'prompt');
});

test('the request families moved exactly by what the answers reported', async () => {
  const text = await (await fetch(`${base}/metrics`)).text();
  const sum = (name) => text.split('\n')
    .filter((line) => line.startsWith(`${name}{`))
    .reduce((total, line) => total + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
  assert.equal(sum('vllm:prompt_tokens_total'), promptTokens);
  assert.equal(sum('vllm:generation_tokens_total'), generationTokens);
  assert.equal(sum('vllm:request_success_total'), 6);
});
