// Backends written in JavaScript (`Agent.create({backend})`): what
// `generate` receives, text streamed from an async generator, from a sync
// generator and through `emit`, a native tool call the loop runs and
// answers, usage reaching the response, a backend that throws (code 17,
// history unchanged, next chat works), a stop during a reply (the signal
// aborts, the generator is closed, later items are dropped), a counter of
// tokens, and bad backends and items. The shared scenarios run on a
// JavaScript backend too (scenarios.test.mjs).
import assert from 'node:assert/strict'
import test from 'node:test'

import { zk } from './helpers.mjs'

const { Agent, ErrorCode, ZooError } = zk

/** Generous bound for a loaded machine; only a broken engine waits it out. */
const WAIT_MS = 60_000

/** A backend whose reply `turn` is `replies[turn](request, emit)`; keeps the requests. */
function scripted(...replies) {
  const requests = []
  return {
    requests,
    generate(request, emit) {
      requests.push(request)
      return replies[requests.length - 1](request, emit)
    },
  }
}

const WEATHER = {
  name: 'weather',
  description: 'Current weather for a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
}

test('text streams and usage reaches the response', async () => {
  const backend = scripted(async function* () {
    yield 'Hello'
    yield { type: 'text', text: ', world' }
    yield { type: 'usage', promptTokens: 12, cachedTokens: 3, completionTokens: 4 }
  })
  const agent = await Agent.create({ backend, systemPrompt: 'Be brief.', temperature: 0.25 })
  try {
    const tokens = []
    const response = await agent.chat('Hi', { onToken: (t) => tokens.push(t) })
    assert.equal(response.text, 'Hello, world')
    assert.deepEqual(tokens, ['Hello', ', world'])
    assert.deepEqual(response.usage, { promptTokens: 12, cachedTokens: 3, completionTokens: 4, totalTokens: 16 })
    const [request] = backend.requests
    assert.deepEqual(request.messages, [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hi' }])
    assert.deepEqual(request.tools, [])
    assert.equal(request.toolChoice, 'auto')
    assert.deepEqual(request.sampling, { temperature: 0.25, topP: 0.95, topK: 40, minP: 0.05, repeatPenalty: 1, seed: null })
    assert.equal(request.thinking, 'off')
    assert.equal(request.maxTokens, null)
    assert.equal(request.maxCalls, 1)
    assert.equal(request.stablePrefix, 0)
    assert.equal(request.timeLeftMs, null)
    assert.ok(request.signal instanceof AbortSignal && !request.signal.aborted)
    assert.deepEqual((await agent.history()).at(-1), { role: 'assistant', content: 'Hello, world' })
  } finally {
    await agent.close()
  }
})

test('a native tool call runs and is answered; emit and sync generators work too', async () => {
  const backend = scripted(
    (request, emit) => {
      assert.equal(request.tools[0].name, 'weather')
      assert.equal(emit('Let me look.'), true)
      emit({ type: 'tool_call', name: 'weather', arguments: { city: 'Paris' } })
      return Promise.resolve()
    },
    function* (request) {
      const result = request.messages.at(-1)
      assert.equal(result.role, 'tool')
      assert.equal(result.toolCallId, 'call_1')
      yield `It is ${result.content}.`
    },
  )
  const agent = await Agent.create({ backend, provider: { type: 'host', thinking: 'low' } })
  try {
    agent.registerTool(WEATHER, ({ city }) => ({ city, temperature: 21 }))
    const response = await agent.chat('Weather in Paris?')
    assert.deepEqual(response.toolCalls.map((c) => [c.name, c.arguments, c.result]), [
      ['weather', { city: 'Paris' }, { city: 'Paris', temperature: 21 }],
    ])
    assert.equal(response.text, 'It is {"city":"Paris","temperature":21}.')
    assert.equal(response.metrics.iterations, 2)
    assert.equal(backend.requests[0].thinking, 'low')
  } finally {
    await agent.close()
  }
})

test('a throwing backend is providerFailed and the agent goes on', async () => {
  const backend = scripted(
    async function* () { yield 'One.' },
    async function* () {
      yield 'partial'
      throw new RangeError('the gateway answered 503')
    },
    async (request, emit) => {
      emit({ type: 'error', message: 'quota exceeded' })
      assert.equal(emit('never streamed'), false)
    },
    () => Promise.reject(new Error('rejected')),
    async function* () { yield 'Fine again.' },
  )
  const agent = await Agent.create({ backend })
  try {
    await agent.chat('one')
    const before = await agent.history()
    const failing = async (message, text) => {
      await assert.rejects(agent.chat(message), (error) => {
        assert.ok(error instanceof ZooError)
        assert.equal(error.code, ErrorCode.PROVIDER_FAILED)
        assert.equal(error.message, text)
        return true
      })
      assert.deepEqual(await agent.history(), before)
    }
    await failing('two', 'provider host failed: RangeError: the gateway answered 503')
    await failing('three', 'provider host failed: quota exceeded')
    await failing('four', 'provider host failed: Error: rejected')
    assert.equal((await agent.chat('five')).text, 'Fine again.')
  } finally {
    await agent.close()
  }
})

test('a stop aborts the signal and closes the generator; the agent goes on', async () => {
  let started
  const running = new Promise((resolve) => { started = resolve })
  const seen = {}
  const backend = scripted(
    async function* (request) {
      try {
        yield 'Thinking about it'
        started()
        await new Promise((resolve) => request.signal.addEventListener('abort', resolve, { once: true }))
        seen.aborted = request.signal.aborted
        yield ' and more'
        seen.resumed = true
      } finally {
        seen.closed = true
      }
    },
    async function* () { yield 'Again.' },
  )
  const agent = await Agent.create({ backend })
  try {
    const chat = agent.chat('Go')
    await running
    agent.stop()
    const response = await chat
    assert.equal(response.stopReason, 'cancelled')
    assert.equal(response.text, 'Thinking about it')
    assert.equal((await agent.chat('Once more')).text, 'Again.')
    assert.deepEqual(seen, { aborted: true, closed: true })
  } finally {
    await agent.close()
  }
})

test('a stop does not wait for a backend that ignores it', async () => {
  let release
  const released = new Promise((resolve) => { release = resolve })
  let started
  const running = new Promise((resolve) => { started = resolve })
  const backend = scripted(
    async function* () {
      started()
      await released // blind to the signal
      yield 'too late'
    },
    async function* () { yield 'Next.' },
  )
  const agent = await Agent.create({ backend })
  try {
    const chat = agent.chat('Go')
    await running
    agent.stop()
    const response = await chat
    assert.equal(response.stopReason, 'cancelled')
    assert.equal(response.text, '')
    assert.equal((await agent.chat('Next?')).text, 'Next.')
    release()
  } finally {
    await agent.close()
  }
})

test('a backend that counts tokens is asked', async () => {
  const backend = {
    async *generate() { yield 'ok' },
    countTokens(message) {
      if (message.content === 'uncountable') throw new Error('no tokenizer for that')
      return message.content.length
    },
  }
  const agent = await Agent.create({ backend, contextSize: 64 })
  try {
    assert.equal((await agent.chat('short')).text, 'ok')
    await assert.rejects(agent.chat('x'.repeat(100)), (e) => e.code === ErrorCode.CONTEXT_OVERFLOW)
    await assert.rejects(agent.chat('uncountable'), (e) =>
      e.code === ErrorCode.PROVIDER_FAILED && e.message === 'provider host failed: count_tokens failed: Error: no tokenizer for that')
  } finally {
    await agent.close()
  }
})

test('bad backends and items say what was wrong', async () => {
  const backend = scripted(
    async function* () { yield 42 },
    async function* () { yield { type: 'txt', text: 'x' } },
    async function* () { yield { type: 'usage', promptTokens: -1, completionTokens: 1 } },
  )
  const agent = await Agent.create({ backend })
  try {
    const failing = (message, pattern) =>
      assert.rejects(agent.chat(message), (e) => e.code === ErrorCode.PROVIDER_FAILED && pattern.test(e.message))
    await failing('1', /^provider host failed: TypeError: a backend emits strings and item objects, got number$/)
    await failing('2', /ZooError: invalid JSON: backend output: unknown variant `txt`/)
    await failing('3', /invalid JSON: backend output: invalid value: integer `-1`/)
    assert.deepEqual(await agent.history(), [])
  } finally {
    await agent.close()
  }
  await assert.rejects(Agent.create({ backend: 42 }), (e) =>
    e.code === ErrorCode.INVALID_ARGUMENT && e.message === 'invalid argument: a backend needs a generate(request) method, and number has none')
  await assert.rejects(Agent.create({ provider: { type: 'host' } }), (e) =>
    e.code === ErrorCode.INVALID_CONFIG && /`host` needs the backend object itself/.test(e.message))
  await assert.rejects(Agent.create({ backend: scripted(), provider: { type: 'mock' } }), (e) =>
    e.code === ErrorCode.INVALID_CONFIG && /takes no other provider/.test(e.message))
})
