// Hooks and input filters through Node, on the mock: a rejecting and a
// warning filter, deny and rewrite of a call, an afterToolCall replacement,
// beforeTurn ending a chat, transformContext, async hooks, hooks that throw
// or reject (they fail safe and reach onError), and the argument checks.
import assert from 'node:assert/strict'
import test from 'node:test'

import { zk, mockAgent, toolCall } from './helpers.mjs'

const { ErrorCode, ZooError } = zk
const WEATHER = {
  name: 'get_weather',
  description: 'Weather in a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
}
const ROME = toolCall('get_weather', { city: 'Rome' })

async function weatherAgent(replies, hooks) {
  const agent = await mockAgent(replies, { hooks })
  const cities = []
  agent.registerTool(WEATHER, ({ city }) => {
    cities.push(city)
    return 'sunny'
  })
  return { agent, cities }
}

test('a rejecting filter ends the chat before anything is decoded and leaves the history', async () => {
  const seen = []
  const agent = await mockAgent(['never read'], {
    hooks: {
      inputFilter: (message) => {
        seen.push(message)
        return message.includes('password') ? { action: 'reject', reason: 'no secrets' } : undefined
      },
    },
  })
  const events = []
  const response = await agent.chat('my password is hunter2', { onEvent: (e) => events.push(e) })
  assert.equal(response.stopReason, 'rejected')
  assert.equal(response.text, '')
  assert.deepEqual(agent.history(), [])
  assert.deepEqual(events.map((e) => e.type), ['chat_started', 'input_rejected', 'chat_finished'])
  assert.equal(events[1].reason, 'no secrets')
  assert.deepEqual(seen, ['my password is hunter2'])
  assert.equal((await agent.chat('hello')).text, 'never read')
  await agent.close()
})

test('a warning is appended and transformContext edits only what the model is sent', async () => {
  const agent = await mockAgent([])
  const sent = []
  agent.setHooks({
    inputFilter: async () => ({ action: 'warn', warning: '(be careful)' }),
    transformContext: (messages) => {
      sent.push(messages)
      return [...messages.slice(0, -1), { ...messages.at(-1), content: 'rewritten for the model' }]
    },
  })
  // The mock echoes the last message it was sent.
  assert.equal((await agent.chat('delete it')).text, 'echo: rewritten for the model')
  assert.equal(sent[0].at(-1).content, 'delete it\n\n(be careful)')
  assert.equal(agent.history()[0].content, 'delete it\n\n(be careful)')
  await agent.close()
})

test('beforeToolCall denies or rewrites and afterToolCall replaces the result', async () => {
  let decision = { action: 'deny', reason: 'not today' }
  const seen = []
  const { agent, cities } = await weatherAgent([ROME, 'denied', ROME, 'rewritten'], {
    beforeToolCall: (call) => {
      assert.deepEqual([call.name, call.arguments], ['get_weather', { city: 'Rome' }])
      return decision
    },
    afterToolCall: async (call, outcome) => {
      seen.push([call, outcome])
      return 'result' in outcome ? { result: { forecast: 'replaced' } } : undefined
    },
  })
  let response = await agent.chat('Weather?')
  assert.equal(response.text, 'denied')
  assert.equal(response.toolCalls[0].error, 'tool `get_weather` failed: the call was denied: not today')
  assert.deepEqual(cities, [])
  assert.deepEqual(seen[0][1], { error: 'tool `get_weather` failed: the call was denied: not today' })

  decision = { action: 'rewrite', arguments: { city: 'Paris' } }
  response = await agent.chat('Weather?')
  assert.equal(response.text, 'rewritten')
  assert.deepEqual(cities, ['Paris'])
  assert.deepEqual(response.toolCalls[0].result, { forecast: 'replaced' })
  assert.equal(response.toolCalls[0].error, undefined)
  // afterToolCall reads the call as the model wrote it.
  assert.deepEqual(seen[1], [{ id: seen[1][0].id, name: 'get_weather', arguments: { city: 'Rome' } }, { result: 'sunny' }])
  await agent.close()
})

test('beforeTurn ends the chat and afterTurn sees each reply', async () => {
  const turns = []
  const { agent } = await weatherAgent([ROME, 'unused'], {
    beforeTurn: (turn) => (turn === 2 ? { action: 'end' } : undefined),
    afterTurn: (turn, text) => { turns.push([turn, text]) },
  })
  const response = await agent.chat('Weather?')
  assert.equal(response.stopReason, 'stop')
  assert.equal(response.metrics.iterations, 1)
  assert.deepEqual(turns.map(([turn]) => turn), [1])
  assert.match(turns[0][1], /get_weather/)
  await agent.close()
})

test('hooks that throw or reject fail safe and reach onError', async () => {
  const errors = []
  const { agent, cities } = await weatherAgent([ROME, 'went on'], {
    onError: (error) => { errors.push(error) },
    inputFilter: () => { throw new Error('filter broke') },
  })
  let response = await agent.chat('Weather?')
  assert.equal(response.stopReason, 'rejected')
  assert.deepEqual(agent.history(), [])
  assert.ok(errors[0] instanceof ZooError)
  assert.equal(errors[0].code, ErrorCode.INTERNAL)
  assert.equal(errors[0].message, 'internal error: the filter_input hook failed: Error: filter broke')

  // A failing beforeToolCall denies; a failing afterToolCall changes nothing.
  agent.setHooks({
    onError: (error) => { errors.push(error) },
    beforeToolCall: async () => { throw new TypeError('veto broke') },
    afterToolCall: () => Promise.reject(new Error('after broke')),
  })
  response = await agent.chat('Weather?')
  assert.equal(response.text, 'went on')
  assert.equal(response.toolCalls[0].error,
    'tool `get_weather` failed: the call was denied: the before_tool_call hook failed: TypeError: veto broke')
  assert.deepEqual(cities, [])
  assert.deepEqual(errors.slice(1).map((e) => e.message), [
    'internal error: the before_tool_call hook failed: TypeError: veto broke',
    'internal error: the after_tool_call hook failed: Error: after broke',
  ])

  // A decision of the wrong shape is a failing hook too.
  agent.setHooks({ onError: (error) => { errors.push(error) }, inputFilter: () => ({ action: 'maybe' }) })
  assert.equal((await agent.chat('hello')).stopReason, 'rejected')
  assert.match(errors.at(-1).message, /the filter_input hook failed: the decision .* is not valid/)

  // Without hooks the agent answers as if none had been set.
  agent.setHooks(null)
  const before = errors.length
  assert.equal((await agent.chat('hello')).text, 'echo: hello')
  assert.equal(errors.length, before)
  await agent.close()
})

test('onError hears of a failed chat', async () => {
  const errors = []
  const agent = await mockAgent([{ error: 'boom' }], { hooks: { onError: (e) => { errors.push(e) } } })
  await assert.rejects(agent.chat('hi'), (e) => e.code === ErrorCode.INFERENCE_FAILED)
  assert.equal(errors.length, 1)
  assert.equal(errors[0].code, ErrorCode.INFERENCE_FAILED)
  assert.match(errors[0].message, /boom/)
  await agent.close()
})

test('bad hooks are refused with a ZooError naming them', async () => {
  await assert.rejects(mockAgent([], { hooks: { beforeToolcall: () => {} } }),
    (e) => e.code === ErrorCode.INVALID_ARGUMENT && /`beforeToolcall` is not a hook \(expected one of inputFilter, /.test(e.message))
  const agent = await mockAgent([])
  assert.throws(() => agent.setHooks({ onError: 42 }),
    (e) => e.code === ErrorCode.INVALID_ARGUMENT && e.message === 'invalid argument: the `onError` hook must be a function, got number')
  assert.throws(() => agent.setHooks('nope'), (e) => e.code === ErrorCode.INVALID_ARGUMENT)
  await agent.close()
})
