// An agent on a remote model, chosen by config alone: an OpenAI-compatible
// server ({provider: {type: 'openai', baseUrl, ...}}), Anthropic
// ({type: 'anthropic', model, ...}) and Gemini ({type: 'gemini', model,
// ...}), each against a fake server on 127.0.0.1 (node:http) that plays
// fixed answers: native tool calls streamed in pieces, the answer after
// them, a rate limit retried (a `retry` event), a refused key.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import http from 'node:http'
import { zk, ADD } from './helpers.mjs'

const { ZooError, ErrorCode } = zk

const sse = (...events) => events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join('') + 'data: [DONE]\n\n'
const delta = (d, finish = null) => ({ choices: [{ index: 0, delta: d, finish_reason: finish }] })

const CALL = sse(
  delta({ tool_calls: [{ index: 0, id: 'c1', type: 'function', function: { name: 'add', arguments: '' } }] }),
  delta({ tool_calls: [{ index: 0, function: { arguments: '{"a": 2, ' } }] }),
  delta({ tool_calls: [{ index: 0, function: { arguments: '"b": 40}' } }] }),
  delta({}, 'tool_calls'),
  { choices: [], usage: { prompt_tokens: 50, completion_tokens: 10, prompt_tokens_details: { cached_tokens: 32 } } },
)
const TEXT = sse(delta({ role: 'assistant', content: 'The sum ' }), delta({ content: 'is 42.' }), delta({}, 'stop'))
const REFUSED = JSON.stringify({ error: { message: 'Incorrect API key: sk-node-secret-key' } })

/** Plays `answers` ([status, contentType, body, headers?] in order); keeps each request. */
async function fakeServer(answers) {
  const requests = []
  const server = http.createServer((req, res) => {
    let body = ''
    req.on('data', (chunk) => (body += chunk))
    req.on('end', () => {
      requests.push({ path: req.url, headers: req.headers, body: JSON.parse(body) })
      const [status, type, payload, headers = {}] = answers.shift()
      res.writeHead(status, { 'Content-Type': type, 'Content-Length': Buffer.byteLength(payload), ...headers })
      res.end(payload)
    })
  })
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  const root = `http://127.0.0.1:${server.address().port}`
  return { server, requests, root, baseUrl: `${root}/v1` }
}

test('an agent on an OpenAI-compatible server, by config alone', async () => {
  const { server, requests, baseUrl } = await fakeServer([
    [200, 'text/event-stream', CALL],
    [200, 'text/event-stream', TEXT],
    [401, 'application/json', REFUSED],
  ])
  try {
    const agent = await zk.Agent.create({
      temperature: 0,
      provider: { type: 'openai', baseUrl, model: 'served-model', apiKey: 'sk-node-secret-key', maxRetries: 0 },
    })
    agent.registerTool(ADD, ({ a, b }) => a + b)
    const tokens = []
    const response = await agent.chat('What is 2 + 40?', { onToken: (t) => tokens.push(t) })
    assert.equal(response.text, 'The sum is 42.')
    assert.equal(tokens.join(''), 'The sum is 42.')
    assert.deepEqual(
      response.toolCalls.map(({ name, arguments: args, result }) => ({ name, args, result })),
      [{ name: 'add', args: { a: 2, b: 40 }, result: 42 }],
    )
    assert.equal(response.usage.cachedTokens, 32)

    await assert.rejects(agent.chat('Again'), (error) => {
      assert.ok(error instanceof ZooError)
      assert.equal(error.code, ErrorCode.AUTHENTICATION_FAILED)
      assert.equal(error.code, 18)
      assert.equal(error.codeName, 'authentication_failed')
      assert.match(error.message, /refused the credentials \(HTTP 401\): Incorrect API key: \[redacted\]/)
      assert.ok(!error.message.includes('sk-node-secret-key'))
      return true
    })
    await agent.close()
  } finally {
    server.close()
  }
  assert.equal(requests[0].path, '/v1/chat/completions')
  assert.equal(requests[0].headers.authorization, 'Bearer sk-node-secret-key')
  assert.equal(requests[0].body.model, 'served-model')
  assert.equal(requests[0].body.stream, true)
  assert.deepEqual(requests[0].body.tools.map((t) => t.function.name), ['add'])
  assert.deepEqual(requests[1].body.messages[2], { role: 'tool', tool_call_id: 'call_1', content: '42' })
})

test('provider errors have their codes, and bad provider keys are named in camelCase', async () => {
  assert.equal(ErrorCode.PROVIDER_FAILED, 17)
  const { server, baseUrl } = await fakeServer([[500, 'application/json', '{"error": {"message": "boom"}}']])
  try {
    const agent = await zk.Agent.create({ provider: { type: 'openai', baseUrl, maxRetries: 0 } })
    await assert.rejects(agent.chat('Hi'), (error) => {
      assert.equal(error.code, ErrorCode.PROVIDER_FAILED)
      assert.equal(error.message, `provider openai (${baseUrl}) failed with HTTP 500: boom`)
      return true
    })
    await agent.close()
  } finally {
    server.close()
  }
  await assert.rejects(zk.Agent.create({ provider: { type: 'openai', baseUrl: 'http://x/v1', maxRetries: -1 } }), (error) => {
    assert.equal(error.code, ErrorCode.INVALID_CONFIG)
    assert.match(error.message, /`provider\.maxRetries`/)
    return true
  })
})

const anthropicEvents = (...events) => events.map((e) => `event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`).join('')
const blockDelta = (index, delta) => ({ type: 'content_block_delta', index, delta })
const messageStart = (usage) => ({ type: 'message_start', message: { id: 'msg', type: 'message', role: 'assistant', content: [], usage } })

const ANTHROPIC_CALL = anthropicEvents(
  messageStart({ input_tokens: 20, cache_read_input_tokens: 30, output_tokens: 1 }),
  { type: 'content_block_start', index: 0, content_block: { type: 'tool_use', id: 'toolu_1', name: 'add', input: {} } },
  blockDelta(0, { type: 'input_json_delta', partial_json: '{"a": 2, ' }),
  { type: 'ping' },
  blockDelta(0, { type: 'input_json_delta', partial_json: '"b": 40}' }),
  { type: 'content_block_stop', index: 0 },
  { type: 'message_delta', delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { output_tokens: 12 } },
  { type: 'message_stop' },
)
const ANTHROPIC_TEXT = anthropicEvents(
  messageStart({ input_tokens: 60, output_tokens: 1 }),
  { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
  blockDelta(0, { type: 'text_delta', text: 'The sum ' }),
  blockDelta(0, { type: 'text_delta', text: 'is 42.' }),
  { type: 'content_block_stop', index: 0 },
  { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 5 } },
  { type: 'message_stop' },
)

test('an agent on Anthropic by config, with a retry event', async () => {
  const limited = JSON.stringify({ type: 'error', error: { type: 'rate_limit_error', message: 'Too many requests' } })
  const { server, requests, root } = await fakeServer([
    [429, 'application/json', limited, { 'Retry-After': '0' }],
    [200, 'text/event-stream', ANTHROPIC_CALL],
    [200, 'text/event-stream', ANTHROPIC_TEXT],
  ])
  const events = []
  try {
    const agent = await zk.Agent.create({
      provider: { type: 'anthropic', baseUrl: root, model: 'claude-sonnet-4-5', apiKey: 'sk-ant-node-key', thinking: 'off' },
    })
    agent.registerTool(ADD, ({ a, b }) => a + b)
    const response = await agent.chat('What is 2 + 40?', { onEvent: (e) => events.push(e) })
    assert.equal(response.text, 'The sum is 42.')
    assert.deepEqual(response.toolCalls.map((c) => c.result), [42])
    assert.deepEqual([response.usage.promptTokens, response.usage.cachedTokens], [50 + 60, 30])
    await agent.close()
  } finally {
    server.close()
  }
  const retries = events.filter((e) => e.type === 'retry')
  assert.equal(retries.length, 1)
  const { agentId, chatId, seq, ...retry } = retries[0]
  assert.deepEqual(retry, { type: 'retry', attempt: 1, maxRetries: 2, delayMs: 0, status: 429, reason: 'HTTP 429: Too many requests' })
  assert.equal(seq, 2)
  assert.deepEqual(events.map((e) => e.seq), events.map((_, i) => i))
  assert.equal(requests[1].path, '/v1/messages')
  assert.equal(requests[1].headers['x-api-key'], 'sk-ant-node-key')
  assert.equal(requests[1].headers['anthropic-version'], '2023-06-01')
  assert.deepEqual(requests[2].body.messages[2], {
    role: 'user',
    content: [{ type: 'tool_result', tool_use_id: 'call_1', content: '42' }],
  })
})

const geminiSse = (...chunks) => chunks.map((c) => `data: ${JSON.stringify(c)}\n\n`).join('')
const candidate = (parts, finish) => ({
  candidates: [{ content: { role: 'model', parts }, index: 0, ...(finish ? { finishReason: finish } : {}) }],
  ...(finish ? { usageMetadata: { promptTokenCount: 40, cachedContentTokenCount: 32, candidatesTokenCount: 7 } } : {}),
})

test('an agent on Gemini by config, and a refused key', async () => {
  const refused = JSON.stringify({ error: { code: 403, message: 'Permission denied: key AIza-node-secret', status: 'PERMISSION_DENIED' } })
  const { server, requests, root } = await fakeServer([
    [200, 'text/event-stream', geminiSse(candidate([{ functionCall: { name: 'add', args: { a: 2, b: 40 } } }]), candidate([{ text: '' }], 'STOP'))],
    [200, 'text/event-stream', geminiSse(candidate([{ text: 'The sum ' }]), candidate([{ text: 'is 42.' }], 'STOP'))],
    [403, 'application/json', refused],
  ])
  try {
    const agent = await zk.Agent.create({
      provider: { type: 'gemini', baseUrl: root, model: 'gemini-2.5-flash', apiKey: 'AIza-node-secret', maxRetries: 0 },
    })
    agent.registerTool(ADD, ({ a, b }) => a + b)
    const tokens = []
    const response = await agent.chat('What is 2 + 40?', { onToken: (t) => tokens.push(t) })
    assert.equal(response.text, 'The sum is 42.')
    assert.deepEqual(tokens, ['The sum ', 'is 42.'])
    assert.equal(response.usage.cachedTokens, 64)
    await assert.rejects(agent.chat('Again'), (error) => {
      assert.equal(error.code, ErrorCode.AUTHENTICATION_FAILED)
      assert.equal(error.message, `provider gemini (${root}) refused the credentials (HTTP 403): Permission denied: key [redacted]`)
      return true
    })
    await agent.close()
  } finally {
    server.close()
  }
  assert.equal(requests[0].path, '/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse')
  assert.equal(requests[0].headers['x-goog-api-key'], 'AIza-node-secret')
  assert.deepEqual(requests[0].body.toolConfig, { functionCallingConfig: { mode: 'AUTO' } })
  assert.deepEqual(requests[1].body.contents[2], {
    role: 'user',
    parts: [{ functionResponse: { name: 'add', response: { output: 42 } } }],
  })
})

test('bad Anthropic and Gemini keys are named in camelCase', async () => {
  await assert.rejects(zk.Agent.create({ provider: { type: 'anthropic' } }), (error) => {
    assert.equal(error.code, ErrorCode.INVALID_CONFIG)
    assert.match(error.message, /`provider\.model`: is required/)
    return true
  })
  await assert.rejects(zk.Agent.create({ provider: { type: 'gemini', model: 'm', apiKeyEnv: '' } }), (error) => {
    assert.match(error.message, /`provider\.apiKeyEnv`/)
    return true
  })
})
