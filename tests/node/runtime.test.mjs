// The agent runtime through Node, on the mock: a steer sent while an async
// tool runs, follow-ups, per-chat limits, event identity and the argument
// checks. The shared scenarios cover the same behaviour as data; these add
// JavaScript's own argument handling and async tools.
import assert from 'node:assert/strict'
import test from 'node:test'

import { zk, mockAgent, toolCall } from './helpers.mjs'

const { ErrorCode } = zk
const SEARCH = { name: 'search', description: 'Searches', parameters: { type: 'object', properties: {} } }

test('a steer sent while an async tool runs skips the next call and joins before the next reply', async () => {
  const twoCalls = toolCall('search', {}) + toolCall('search', {})
  const agent = await mockAgent([twoCalls, 'It is 21 C.'])
  agent.registerTool(SEARCH, async () => {
    agent.steer('Use Celsius.')
    return 'found'
  })
  const events = []
  const response = await agent.chat('Weather?', { onEvent: (e) => events.push(e) })
  assert.equal(response.text, 'It is 21 C.')
  assert.deepEqual(events.map((e) => e.type), [
    'chat_started', 'turn_started', 'turn_finished', 'tool_call_started', 'tool_call_finished',
    'steering_received', 'turn_started', 'turn_finished', 'chat_finished',
  ])
  assert.deepEqual(events.map((e) => e.seq), events.map((_, i) => i))
  assert.ok(events.every((e) => e.agentId === agent.id && e.chatId === 1))
  const history = agent.history()
  assert.equal(history[3].content, 'Not executed: the user sent a new message before it ran.')
  assert.deepEqual(history[4], { role: 'user', content: 'Use Celsius.' })
  await agent.close()
})

test('follow-ups, clearQueues and a per-chat maxTurns', async () => {
  const agent = await mockAgent(['Sunny.', 'Rainy tomorrow.', toolCall('search', {}), 'unused'])
  agent.registerTool(SEARCH, () => 'found')
  agent.followUp('And tomorrow?')
  let response = await agent.chat('Today?')
  assert.equal(response.text, 'Rainy tomorrow.')
  assert.equal(response.metrics.iterations, 2)
  agent.followUp('Dropped')
  agent.clearQueues()
  const events = []
  response = await agent.chat('Go', { maxTurns: 1, onEvent: (e) => events.push(e) })
  assert.equal(response.stopReason, 'limit')
  const limit = events.find((e) => e.type === 'limit_reached')
  assert.deepEqual([limit.limit, limit.value], ['max_turns', 1])
  assert.equal(events.at(-1).stopReason, 'limit')
  await agent.close()
})

test('bad limits and queue texts are invalid arguments', async () => {
  const agent = await mockAgent([])
  await assert.rejects(agent.chat('hi', { maxTurns: -1 }), {
    code: ErrorCode.INVALID_ARGUMENT,
    message: 'invalid argument: `maxTurns` must be an integer from 0 to 4294967295, got -1',
  })
  await assert.rejects(agent.chat('hi', { maxDurationMs: 1.5 }), {
    code: ErrorCode.INVALID_ARGUMENT,
    message: 'invalid argument: `maxDurationMs` must be an integer from 0 to 9007199254740991, got 1.5',
  })
  assert.throws(() => agent.steer(5), { code: ErrorCode.INVALID_ARGUMENT })
  assert.throws(() => agent.followUp(null), { code: ErrorCode.INVALID_ARGUMENT })
  assert.equal((await agent.chat('hi')).text, 'echo: hi')
  const other = await mockAgent([])
  assert.notEqual(agent.id, other.id)
  await agent.close()
  await other.close()
})
