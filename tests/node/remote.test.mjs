// An agent on an OpenAI-compatible server, chosen by config alone
// ({provider: {type: 'openai', baseUrl, ...}}), against a fake server on
// 127.0.0.1 (node:http) that plays fixed answers: a native tool call
// streamed in pieces, the answer after it, then a 401.
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

/** Plays `answers` ([status, contentType, body] in order); keeps each request. */
async function fakeServer(answers) {
  const requests = []
  const server = http.createServer((req, res) => {
    let body = ''
    req.on('data', (chunk) => (body += chunk))
    req.on('end', () => {
      requests.push({ path: req.url, headers: req.headers, body: JSON.parse(body) })
      const [status, type, payload] = answers.shift()
      res.writeHead(status, { 'Content-Type': type, 'Content-Length': Buffer.byteLength(payload) })
      res.end(payload)
    })
  })
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { server, requests, baseUrl: `http://127.0.0.1:${server.address().port}/v1` }
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
